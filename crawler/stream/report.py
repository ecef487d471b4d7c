"""What a stream recorder tells: what one recording did, for its report."""

import secrets
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from archive.streams import ChunkLog, Gap, Title, drift_of

__all__ = ["Recording", "now_micros"]

KEPT_LOGS = 512  # chunk logs a recording keeps for its report (drift)
KEPT_SEGMENTS = 1024


def now_micros() -> int:
    return time.time_ns() // 1000


@dataclass
class Recording:
    """What one stream's recording did, for its report."""

    url: str
    recording: str = field(default_factory=lambda: secrets.token_hex(8))
    protocol: str = ""
    content_type: str = ""
    bytes: int = 0
    chunks: int = 0
    segments: int = 0
    connections: int = 0
    titles: list[Title] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    logs: deque[ChunkLog] = field(default_factory=lambda: deque(maxlen=KEPT_LOGS))
    # HLS: the URLs of the last segments taken, so that a playlist reloaded after a reconnection
    # (or one that loops) gives no segment twice.
    segment_urls: deque[str] = field(default_factory=lambda: deque(maxlen=KEPT_SEGMENTS))

    def report(self) -> dict[str, object]:
        drift = drift_of(self.logs)
        return {
            "url": self.url,
            "recording": self.recording,
            "protocol": self.protocol,
            "content_type": self.content_type,
            "bytes": self.bytes,
            "chunks": self.chunks,
            "segments": self.segments,
            "connections": self.connections,
            "titles": [[t.time, t.title] for t in self.titles],
            "gaps": [[g.start, g.end, g.kind, g.message] for g in self.gaps],
            "errors": dict(self.errors),
            "drift": drift.ratio,
            "drift_seconds": drift.seconds,
            "drift_text": drift.describe(),
        }
