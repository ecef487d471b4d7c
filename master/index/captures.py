"""The captures of an insert call, every field checked before anything is written."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.structure import INT64_MAX, Capture
from archive.urlkey import structure_name

MAX_CAPTURES = 5_000
MAX_URL = 8_192
DEFAULT_HEADER_SIZE = 512


def bad(message: str) -> RemoteError:
    return RemoteError("bad_params", message)


@dataclass(frozen=True, slots=True)
class Incoming:
    url: str
    structure: str
    capture: Capture
    size: int
    header_size: int


def _int(item: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = item.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DlwebError(f"{key!r} must be a non-negative integer")
    return value


def parse_capture(item: object, index: int) -> Incoming:
    """Capture `index` of an insert call; the message of a bad one names it and its field."""
    if not isinstance(item, dict):
        raise bad(f"insert: captures[{index}] must be an object")
    url = item.get("url")
    try:
        if not isinstance(url, str) or not url or len(url) > MAX_URL:
            raise DlwebError(f"'url' must be a string of 1 to {MAX_URL} characters")
        for key, low in (("time", -INT64_MAX), ("offset", 0)):
            value = item.get(key, 0)
            if type(value) is int and not low <= value <= INT64_MAX:
                raise DlwebError(f"{key!r} must be an integer from {low} to 2^63-1")
        capture = Capture.from_json(item)
        try:
            name = structure_name(url)
        except DlwebError as exc:
            raise DlwebError(f"'url': {exc}") from None
        size = _int(item, "size")
        header_size = _int(item, "header_size", DEFAULT_HEADER_SIZE)
    except DlwebError as exc:
        raise bad(f"insert: captures[{index}]: {exc}") from None
    return Incoming(url, name, capture, size, header_size)


def parse_captures(params: object) -> list[Incoming]:
    """The captures of an insert call, naming the index and field of the first bad one."""
    if not isinstance(params, dict) or not isinstance(params.get("captures"), list):
        raise bad("insert: params must be {captures: [...]}")
    raw = params["captures"]
    if not raw or len(raw) > MAX_CAPTURES:
        raise bad(f"insert: give 1 to {MAX_CAPTURES} captures a call, not {len(raw)}")
    return [parse_capture(item, index) for index, item in enumerate(raw)]
