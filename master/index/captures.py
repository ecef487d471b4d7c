"""The captures of an insert call, every field checked before anything is written."""

from dataclasses import dataclass

from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.insert_calls import MAX_CAPTURES, NewCapture
from archive.structure import Capture
from archive.urlkey import structure_name


def bad(message: str) -> RemoteError:
    return RemoteError("bad_params", message)


@dataclass(frozen=True, slots=True)
class Incoming:
    url: str
    structure: str
    capture: Capture
    size: int
    header_size: int


def parse_capture(item: object, index: int) -> Incoming:
    """Capture `index` of an insert call; the message of a bad one names it and its field."""
    try:
        new, record = NewCapture.from_json(item, index)
    except DlwebError as exc:
        raise bad(str(exc)) from None
    try:
        name = structure_name(new.url)
    except DlwebError as exc:
        raise bad(f"insert: captures[{index}]: 'url': {exc}") from None
    return Incoming(new.url, name, record, new.size, new.header_size)


def parse_captures(params: object) -> list[Incoming]:
    """The captures of an insert call, naming the index and field of the first bad one."""
    if not isinstance(params, dict) or not isinstance(params.get("captures"), list):
        raise bad("insert: params must be {captures: [...]}")
    raw = params["captures"]
    if not raw or len(raw) > MAX_CAPTURES:
        raise bad(f"insert: give 1 to {MAX_CAPTURES} captures a call, not {len(raw)}")
    return [parse_capture(item, index) for index, item in enumerate(raw)]
