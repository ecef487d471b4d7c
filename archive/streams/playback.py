"""Playing a recorded stream back from a date: where to start, and what follows.

A progressive or Icecast recording starts at the chunk on air at the date, from its last point
at or before it, moved on by the stream time between that point and the date (frames counted,
so the first byte sent begins a frame), and goes on through the chunks after it. An HLS
recording is answered with a playlist of the archived segments from the one on air at the date;
their URLs replay as any capture does.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..timestamps import format_iso
from .frames import scanner_for
from .log import ChunkLog, Point, Segment

__all__ = ["StreamStart", "frame_after", "hls_playlist", "start_at"]

PLAYLIST_SECONDS = 6 * 3600  # the most an archived HLS playlist lists from its date
_SEEK_PIECE = 256  # fed a few frames at a time, the seek stops within a frame or so


@dataclass(frozen=True)
class StreamStart:
    """Where playback from a date begins: a point of a chunk and the stream seconds from it,
    then the chunks that follow, oldest first."""

    log: ChunkLog
    point: Point
    seconds: float
    following: tuple[ChunkLog, ...]

    @property
    def time(self) -> int:
        """The collection time of the first frame sent."""
        return self.point.time + round(self.seconds * 1e6)


def start_at(logs: Sequence[ChunkLog], at: int) -> StreamStart | None:
    """Where to start playing the chunks of `logs` at time `at`: in a gap, at the next chunk;
    before the recording, at its start; after it, at its last point (the nearest there is).
    None when nothing progressive was recorded."""
    chunks = sorted((log for log in logs if log.chunk is not None), key=lambda log: log.start)
    if not chunks:
        return None
    index = max((i for i, log in enumerate(chunks) if log.start <= at), default=0)
    log = chunks[index]
    if at > log.end.time and index + 1 < len(chunks):
        index, log = index + 1, chunks[index + 1]
    points = log.points or (log.end,)
    point = max((p for p in points if p.time <= at), default=points[0], key=lambda p: p.time)
    slope = log.fit.slope() or 1.0
    seconds = max(0.0, (min(at, log.end.time) - point.time) / 1e6 * slope)
    return StreamStart(log, point, seconds, tuple(chunks[index + 1 :]))


def frame_after(data: bytes, content_type: str, seconds: float) -> tuple[int, float]:
    """The offset in `data` (which begins with a frame) of the first frame boundary at least
    `seconds` of media in, and the media seconds before it; the end of `data` when it holds
    less; (0, 0.0) for an unknown framing."""
    scanner = scanner_for(content_type, data[:4096])
    if scanner is None or seconds <= 0:
        return 0, 0.0
    for at in range(0, len(data), _SEEK_PIECE):
        scanner.feed(data[at : at + _SEEK_PIECE])
        if scanner.sample_rate and scanner.seconds >= seconds:
            return scanner.boundary, scanner.seconds
    return len(data), scanner.seconds


def _on_air(segment: Segment) -> int:
    return segment.program_time if segment.program_time is not None else segment.time


def hls_playlist(logs: Sequence[ChunkLog], at: int) -> bytes | None:
    """A VOD media playlist of the archived segments from the one on air at `at`; None when
    no segment was recorded."""
    segments = sorted({s.sequence: s for log in logs for s in log.segments}.values(), key=_on_air)
    if not segments:
        return None
    first = max((i for i, s in enumerate(segments) if _on_air(s) <= at), default=0)
    listed: list[Segment] = []
    total = 0.0
    for segment in segments[first:]:
        listed.append(segment)
        total += segment.duration
        if total >= PLAYLIST_SECONDS:
            break
    target = max(1, math.ceil(max(s.duration for s in listed)))
    lines = [
        "#EXTM3U",
        "#EXT-X-VERSION:3",
        f"#EXT-X-TARGETDURATION:{target}",
        f"#EXT-X-MEDIA-SEQUENCE:{listed[0].sequence}",
        "#EXT-X-PLAYLIST-TYPE:VOD",
    ]
    previous: Segment | None = None
    for segment in listed:
        jumped = previous is not None and segment.sequence != previous.sequence + 1
        if segment.discontinuity or jumped:
            lines.append("#EXT-X-DISCONTINUITY")
        lines.append(f"#EXT-X-PROGRAM-DATE-TIME:{format_iso(_on_air(segment))}")
        lines.append(f"#EXTINF:{segment.duration:.3f},")
        lines.append(segment.url)
        previous = segment
    lines.append("#EXT-X-ENDLIST")
    return ("\n".join(lines) + "\n").encode()
