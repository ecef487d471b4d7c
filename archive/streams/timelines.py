"""A recorded stream's timeline: when it was recorded, its gaps, its titles and its drift.

Gaps are those the recorders logged (a dropped connection, a stalled server, segments that left
a playlist unfetched) and the holes between chunks that no log explains: a recorder that died,
its stream handed to another agent some time later.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from .log import ChunkLog, Drift, Gap, Title, drift_of

__all__ = ["Span", "Timeline", "timeline"]

# A hole shorter than this between two chunks is the time the recorder took to store one.
HOLE = 2_000_000
UNEXPLAINED = "not-recorded"


@dataclass(frozen=True)
class Span:
    """A stretch recorded without a gap, by one recording."""

    start: int
    end: int
    recording: str


@dataclass(frozen=True)
class Timeline:
    url: str
    protocol: str
    spans: tuple[Span, ...]
    gaps: tuple[Gap, ...]
    titles: tuple[Title, ...]
    drift: Drift

    @property
    def start(self) -> int:
        return self.spans[0].start

    @property
    def end(self) -> int:
        return self.spans[-1].end


def timeline(logs: Sequence[ChunkLog]) -> Timeline | None:
    """The timeline of one stream's logs; None when there are none."""
    ordered = sorted(logs, key=lambda log: log.start)
    if not ordered:
        return None
    spans: list[Span] = []
    gaps: list[Gap] = []
    for log in ordered:
        start, end = log.start, log.end.time
        last = spans[-1] if spans else None
        gap = log.gap
        if gap is None and last is not None and start - last.end > HOLE:
            gap = Gap(last.end, start, UNEXPLAINED, "nothing was recorded (a recorder stopped)")
        if gap is not None:
            # A handed-over stream's gap starts at the last end its scheduler heard of.
            gaps.append(
                Gap(max(gap.start, last.end) if last else gap.start, gap.end, gap.kind, gap.message)
            )
            last = None
        if last is not None and last.recording == log.recording:
            spans[-1] = Span(last.start, max(last.end, end), last.recording)
        else:
            spans.append(Span(start, end, log.recording))
    titles = tuple(sorted((t for log in ordered for t in log.titles), key=lambda t: t.time))
    return Timeline(
        ordered[0].url, ordered[0].protocol, tuple(spans), tuple(gaps), titles, drift_of(ordered)
    )
