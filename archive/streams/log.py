"""The log of a recorded stream chunk: its points on both clocks, the titles, the gap before it.

The streaming agent stores one log per chunk as a content (JSON), named by a `STREAM_LOG` record in
the stream URL's structure file at the chunk's first point; playback, the `streams.dlweb` harbor and
the agent's own report read it back. The layout is documented in docs/formats.md.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import jsonwire
from ..errors import CorruptFile
from ..hashing import is_valid_name

__all__ = [
    "LOG_TYPE",
    "REGISTRY_URL",
    "ChunkLog",
    "Drift",
    "Fit",
    "Gap",
    "Point",
    "Segment",
    "Title",
    "drift_of",
]

FORMAT = "dlweb-stream-log/1"
LOG_TYPE = "application/vnd.dlweb.stream-log+json"
PROTOCOLS = frozenset(("icy", "progressive", "hls"))
# The media types of an M3U8 playlist, as servers send them.
PLAYLIST_TYPES = frozenset(
    ("application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl")
)
# A URL of the harbors' domain, which nothing else archives: its structure file is the registry
# of recorded streams, a stream-log record there for the first chunk of each recording.
REGISTRY_URL = "http://streams.dlweb/recorded"


class BadLog(CorruptFile):
    """A stream log whose JSON does not follow its format."""


@dataclass(frozen=True, slots=True)
class Point:
    """Where the recording stood at a moment: the collection time (UTC microseconds), the
    stream's own clock (seconds of media since the connection began) and the byte offset in the
    chunk of a frame boundary (0 in an HLS log)."""

    time: int
    stream: float
    offset: int


@dataclass(frozen=True, slots=True)
class Title:
    """A title the stream announced (ICY StreamTitle), with where it came."""

    time: int
    stream: float
    offset: int
    title: str


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch of collection time with nothing recorded, and why."""

    start: int
    end: int
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class Segment:
    """An HLS media segment: archived as a response of its own URL, listed here in order."""

    url: str
    content: str
    duration: float
    sequence: int
    time: int  # when the agent first saw it listed
    program_time: int | None = None  # EXT-X-PROGRAM-DATE-TIME, in UTC microseconds
    discontinuity: bool = False
    size: int = 0


@dataclass(frozen=True, slots=True)
class Fit:
    """Least-squares sums of the stream clock (y) against collection seconds since the
    connection began (x), over every read of a chunk: they add up across a connection's chunks,
    so its drift is measured over all of them, however unevenly the server sends."""

    count: int = 0
    x: float = 0.0
    y: float = 0.0
    xx: float = 0.0
    xy: float = 0.0

    def add(self, x: float, y: float) -> "Fit":
        return Fit(self.count + 1, self.x + x, self.y + y, self.xx + x * x, self.xy + x * y)

    def __add__(self, other: "Fit") -> "Fit":
        return Fit(
            self.count + other.count,
            self.x + other.x,
            self.y + other.y,
            self.xx + other.xx,
            self.xy + other.xy,
        )

    def slope(self) -> float | None:
        spread = self.count * self.xx - self.x * self.x
        if self.count < 2 or spread <= 0:
            return None
        return (self.count * self.xy - self.x * self.y) / spread


@dataclass(frozen=True)
class ChunkLog:
    url: str
    recording: str  # one agent's recording of the stream, across its reconnections
    protocol: str
    content_type: str
    connected: int  # when the connection whose bytes these are began
    points: tuple[Point, ...]
    end: Point  # where the chunk ends, on both clocks
    codec: str = ""
    sample_rate: int = 0
    chunk: str | None = None  # the content holding the bytes (None for HLS)
    size: int = 0
    prelude: str | None = None  # codec headers a decoder needs first (Ogg), as a content
    titles: tuple[Title, ...] = ()
    gap: Gap | None = None  # the gap just before this chunk
    segments: tuple[Segment, ...] = field(default=())
    fit: Fit = Fit()

    @property
    def start(self) -> int:
        return self.points[0].time if self.points else self.end.time

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "url": self.url,
            "recording": self.recording,
            "protocol": self.protocol,
            "content_type": self.content_type,
            "codec": self.codec,
            "sample_rate": self.sample_rate,
            "connected": self.connected,
            "chunk": self.chunk,
            "size": self.size,
            "prelude": self.prelude,
            "points": [[p.time, p.stream, p.offset] for p in self.points],
            "end": [self.end.time, self.end.stream, self.end.offset],
            "titles": [[t.time, t.stream, t.offset, t.title] for t in self.titles],
            "gap": None
            if self.gap is None
            else {
                "start": self.gap.start,
                "end": self.gap.end,
                "kind": self.gap.kind,
                "message": self.gap.message,
            },
            "segments": [
                {
                    "url": s.url,
                    "content": s.content,
                    "duration": s.duration,
                    "sequence": s.sequence,
                    "time": s.time,
                    "program_time": s.program_time,
                    "discontinuity": s.discontinuity,
                    "size": s.size,
                }
                for s in self.segments
            ],
            "fit": [self.fit.count, self.fit.x, self.fit.y, self.fit.xx, self.fit.xy],
        }

    def encode(self) -> bytes:
        return jsonwire.dumps(self.to_json()).encode()

    @classmethod
    def decode(cls, data: bytes, where: str) -> "ChunkLog":
        try:
            raw = jsonwire.loads(data)
        except ValueError as exc:
            raise BadLog(f"{where}: stream log is not JSON ({exc})") from None
        return cls.from_json(raw, where)

    @classmethod
    def from_json(cls, raw: object, where: str) -> "ChunkLog":
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise BadLog(f"{where}: not a {FORMAT} stream log")
        read = _Reader(raw, where)
        protocol = read.text("protocol")
        if protocol not in PROTOCOLS:
            raise BadLog(f"{where}: unknown protocol {protocol!r}")
        points = tuple(
            _point(item, f"{where}: points[{i}]") for i, item in enumerate(read.list("points"))
        )
        gap_raw = raw.get("gap")
        gap = None
        if gap_raw is not None:
            if not isinstance(gap_raw, dict):
                raise BadLog(f"{where}: 'gap' must be an object or null")
            gap_read = _Reader(gap_raw, f"{where}: gap")
            gap = Gap(
                gap_read.integer("start"),
                gap_read.integer("end"),
                gap_read.text("kind"),
                gap_read.text("message"),
            )
        return cls(
            url=read.text("url"),
            recording=read.text("recording"),
            protocol=protocol,
            content_type=read.text("content_type"),
            connected=read.integer("connected"),
            points=points,
            end=_point(raw.get("end"), f"{where}: end"),
            codec=read.text("codec"),
            sample_rate=read.integer("sample_rate"),
            chunk=read.name("chunk"),
            size=read.integer("size"),
            prelude=read.name("prelude"),
            titles=tuple(
                _title(item, f"{where}: titles[{i}]") for i, item in enumerate(read.list("titles"))
            ),
            gap=gap,
            segments=tuple(
                _segment(item, f"{where}: segments[{i}]")
                for i, item in enumerate(read.list("segments"))
            ),
            fit=_fit(raw.get("fit"), f"{where}: fit"),
        )


class _Reader:
    """Typed field access that names the field and the log of a bad value."""

    def __init__(self, raw: dict[str, Any], where: str) -> None:
        self.raw, self.where = raw, where

    def _bad(self, key: str, what: str) -> BadLog:
        return BadLog(f"{self.where}: {key!r} must be {what}")

    def text(self, key: str) -> str:
        value = self.raw.get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def integer(self, key: str) -> int:
        value = self.raw.get(key)
        if type(value) is not int:
            raise self._bad(key, "an integer")
        return value

    def number(self, key: str) -> float:
        value = self.raw.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self._bad(key, "a number")
        return float(value)

    def list(self, key: str) -> list[Any]:
        value = self.raw.get(key)
        if not isinstance(value, list):
            raise self._bad(key, "a list")
        return value

    def name(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is not None and not (isinstance(value, str) and is_valid_name(value)):
            raise self._bad(key, "a SHA-256 name or null")
        return value


def _numbers(item: object, where: str, size: int) -> list[Any]:
    if not isinstance(item, list) or len(item) != size:
        raise BadLog(f"{where}: must be a list of {size} values")
    return item


def _point(item: object, where: str) -> Point:
    time, stream, offset = _numbers(item, where, 3)
    if type(time) is not int or type(offset) is not int or type(stream) not in (int, float):
        raise BadLog(f"{where}: must be [time, stream seconds, offset]")
    return Point(time, float(stream), offset)


def _fit(item: object, where: str) -> Fit:
    count, *sums = _numbers(item, where, 5)
    if type(count) is not int or not all(type(v) in (int, float) for v in sums):
        raise BadLog(f"{where}: must be [count, x, y, xx, xy]")
    return Fit(count, *map(float, sums))


def _title(item: object, where: str) -> Title:
    time, stream, offset, title = _numbers(item, where, 4)
    if not isinstance(title, str):
        raise BadLog(f"{where}: the title must be a string")
    point = _point([time, stream, offset], where)
    return Title(point.time, point.stream, point.offset, title)


def _segment(item: object, where: str) -> Segment:
    if not isinstance(item, dict):
        raise BadLog(f"{where}: must be an object")
    read = _Reader(item, where)
    content = read.name("content")
    if content is None:
        raise BadLog(f"{where}: 'content' must be a SHA-256 name")
    program_time = item.get("program_time")
    if program_time is not None and type(program_time) is not int:
        raise BadLog(f"{where}: 'program_time' must be an integer or null")
    return Segment(
        url=read.text("url"),
        content=content,
        duration=read.number("duration"),
        sequence=read.integer("sequence"),
        time=read.integer("time"),
        program_time=program_time,
        discontinuity=bool(item.get("discontinuity")),
        size=read.integer("size"),
    )


@dataclass(frozen=True)
class Drift:
    """How fast the stream's own clock ran against the collection clock."""

    ratio: float  # stream seconds per collection second, minus one
    seconds: float  # the collection time it was measured over

    def describe(self) -> str:
        if self.seconds <= 0:
            return "drift unknown (too short)"
        per_hour = self.ratio * 3600
        pace = "fast" if self.ratio >= 0 else "slow"
        return f"the stream runs {abs(self.ratio) * 100:.2f}% {pace}: {per_hour:+.0f} s an hour"


def drift_of(logs: Iterable[ChunkLog]) -> Drift:
    """The drift over every connection of the logs: the least-squares slope of stream time
    against collection time within each connection, weighted by the time each spans."""
    fits: dict[tuple[str, int], Fit] = {}
    spans: dict[tuple[str, int], float] = {}
    for log in logs:
        key = (log.recording, log.connected)
        fits[key] = fits.get(key, Fit()) + log.fit
        spans[key] = spans.get(key, 0.0) + (log.end.time - log.start) / 1e6
    total, weighted = 0.0, 0.0
    for key, fit in fits.items():
        slope = fit.slope()
        if slope is not None and spans[key] > 0:
            weighted += (slope - 1) * spans[key]
            total += spans[key]
    return Drift(weighted / total if total else 0.0, total)
