"""The HIP calls between the scheduler and its streaming agents, typed once for both ends.

The scheduler calls an agent's `record` with a RecordOrder (answered at once with
RecordAccepted), `stop` with a StopStream (Stopped) and `status` (StreamerStatus). The agent calls the
scheduler's `stream_report` with a StreamReport of every recording's progress, answered Ok. The
streaming agent's own Assignment (crawler/stream/assignment.py) is made from a RecordOrder, its
settings the recorder's defaults where the order gives none.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from archive.crawl_calls import Ok
from archive.hip import Fields, Message, Method, Nothing, RemoteError, as_object, is_number
from archive.hip import field as field_of
from archive.timestamps import MAX_TIME
from archive.urlkey import BadUrl, canonical_url

__all__ = [
    "RECORD",
    "SETTINGS",
    "STATUS",
    "STOP",
    "STREAM_REPORT",
    "Ok",
    "RecordOrder",
    "RecordAccepted",
    "StopStream",
    "Stopped",
    "StreamReport",
    "StreamerStatus",
    "is_rendition",
    "rendition_fault",
    "stream_url",
]

# The settings of a recording an order may carry besides its rendition, and whether each is a
# whole number.
SETTINGS = {"chunk_seconds": False, "chunk_bytes": True, "point_seconds": False, "timeout": False}
RENDITIONS = ("highest", "lowest")  # or a most bits/s


def _refused(message: str) -> RemoteError:
    """A bad_params error whose message names the field at fault, as the agent words it."""
    return RemoteError("bad_params", message)


def is_rendition(text: str) -> bool:
    """Whether `text` is an HLS rendition rule: highest, lowest, or a most bits/s."""
    return text in RENDITIONS or (text.isdigit() and int(text) > 0)


def rendition_fault(text: str) -> str:
    """Why `text` is no rendition rule."""
    return f"{text!r} is not highest, lowest or a number of bits/s"


def stream_url(url: object) -> str:
    """The URL itself when a streaming agent can record it (http or https, a host)."""
    if not isinstance(url, str) or not url:
        raise _refused("assignment field url must be a non-empty string")
    try:
        canonical_url(url)
    except BadUrl as exc:
        raise _refused(f"assignment field url: {exc}") from None
    return url


def _setting(key: str, value: object) -> float | str:
    if key == "rendition":
        text = value if isinstance(value, str) else repr(value)
        if not is_rendition(text):
            raise _refused(f"assignment field settings.rendition: {rendition_fault(text)}")
        return text
    whole = SETTINGS.get(key)
    if whole is None:
        raise _refused(f"assignment field settings.{key} is unknown")
    if not is_number(value) or (whole and not isinstance(value, int)) or value <= 0:
        kind = "a whole number" if whole else "a number"
        raise _refused(f"assignment field settings.{key} must be {kind} > 0")
    return value if whole else float(value)


@dataclass(frozen=True, slots=True)
class RecordOrder(Fields):
    """A stream to record: its id in the scheduler's database, its URL, the recording's
    settings (those given: SETTINGS and rendition), host addresses, and when its last recording
    ended (UTC microseconds; 0: none before), for a stream handed over from an agent that
    stopped, whose new recording begins with a gap from then."""

    stream: int
    url: str
    settings: dict[str, float | str] = field(default_factory=dict)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    resumes: int = 0

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        """An order from the network, every field checked."""
        if not isinstance(data, Mapping):
            raise _refused("a stream assignment must be a JSON object")
        unknown = set(data) - {"stream", "url", "settings", "resolve", "resumes"}
        if unknown:
            raise _refused(f"assignment field {sorted(unknown)[0]} is unknown")
        stream = data.get("stream")
        if type(stream) is not int or stream < 1:
            raise _refused("assignment field stream must be a stream id, a whole number >= 1")
        url = stream_url(data.get("url"))
        resumes = data.get("resumes", 0)
        if type(resumes) is not int or not 0 <= resumes <= MAX_TIME:
            raise _refused("assignment field resumes must be a time in microseconds, or 0")
        given = data.get("settings", {})
        if not isinstance(given, Mapping):
            raise _refused("assignment field settings must be an object")
        settings = {key: _setting(key, value) for key, value in given.items()}
        resolve = data.get("resolve", {})
        if not isinstance(resolve, Mapping) or not all(
            isinstance(host, str)
            and isinstance(addresses, list)
            and all(isinstance(a, str) for a in addresses)
            for host, addresses in resolve.items()
        ):
            raise _refused("assignment field resolve must map host names to address lists")
        return cls(
            stream=stream,
            url=url,
            settings=settings,
            resolve={host.lower(): list(addresses) for host, addresses in resolve.items()},
            resumes=resumes,
        )


class RecordAccepted(Message):
    """A stream taken (or being recorded already): its id and the recording's."""

    accepted: int
    recording: str


@dataclass(frozen=True, slots=True)
class StopStream(Fields):
    """The stream to stop recording."""

    stream: int

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        stream = data.get("stream") if isinstance(data, dict) else None
        if type(stream) is not int:
            raise _refused("stop needs {stream: ID}")
        return cls(stream)


@dataclass(frozen=True, slots=True)
class Stopped:
    """Whether the stream was being recorded here, and then its recording's id."""

    stream: int
    stopped: bool
    recording: str = ""

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"stream": self.stream, "stopped": self.stopped}
        if self.stopped:
            answer["recording"] = self.recording
        return answer

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        data = as_object(data, method)
        stopped = field_of(data, "stopped", bool, method)
        return cls(
            field_of(data, "stream", int, method),
            stopped,
            field_of(data, "recording", str, method) if stopped else "",
        )


def _progress_list(data: dict[str, Any], method: str) -> tuple[dict[str, Any], ...]:
    """The recordings' progress (crawler/stream/agent.py progress), each an object; which
    figures are kept is the scheduler's register's business."""
    streams = field_of(data, "streams", list, method)
    return tuple(entry for entry in streams if isinstance(entry, dict))


@dataclass(frozen=True, slots=True)
class StreamerStatus(Fields):
    """A streaming agent's capacity and the progress of the streams it records."""

    name: str
    pid: int
    capacity: int
    free: int
    streams: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        data = as_object(data, method)
        return cls(
            field_of(data, "name", str, method),
            field_of(data, "pid", int, method),
            field_of(data, "capacity", int, method),
            field_of(data, "free", int, method),
            _progress_list(data, method),
        )

    def recorded(self) -> dict[int, str]:
        """The URLs of the streams the agent records, by stream id."""
        return {
            entry["stream"]: str(entry.get("url", ""))
            for entry in self.streams
            if type(entry.get("stream")) is int
        }


@dataclass(frozen=True, slots=True)
class StreamReport(Fields):
    """The progress of every recording of an agent, those that ended included, and whether the
    agent is stopping (it takes no more streams)."""

    agent: str
    streams: tuple[dict[str, Any], ...]
    stopping: bool = False

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        data = as_object(data, method)
        return cls(
            field_of(data, "agent", str, method),
            _progress_list(data, method),
            data.get("stopping") is True,
        )


RECORD = Method("record", RecordOrder, RecordAccepted)
STOP = Method("stop", StopStream, Stopped)
STATUS = Method("status", Nothing, StreamerStatus)
STREAM_REPORT = Method("stream_report", StreamReport, Ok)
