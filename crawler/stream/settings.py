"""What a stream recorder is told: how to cut chunks and points, when a server has stalled, how
to back off, which HLS rendition to take."""

from dataclasses import dataclass

__all__ = ["StreamSettings"]


@dataclass(frozen=True)
class StreamSettings:
    chunk_seconds: float = 60.0
    chunk_bytes: int = 4 * 1024 * 1024
    point_seconds: float = 10.0
    timeout: float = 15.0  # a server silent this long has stalled
    backoff: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
    rendition: str = "highest"  # HLS: highest, lowest, or the most bits/s to take
