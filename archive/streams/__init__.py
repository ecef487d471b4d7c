"""Recorded streams: codec framing, and the log the streaming agent keeps of each chunk."""

from .archived import stream_logs
from .frames import FrameScanner, scanner_for
from .log import LOG_TYPE, BadLog, ChunkLog, Drift, Fit, Gap, Point, Segment, Title, drift_of

__all__ = [
    "LOG_TYPE",
    "BadLog",
    "ChunkLog",
    "Drift",
    "Fit",
    "FrameScanner",
    "Gap",
    "Point",
    "Segment",
    "Title",
    "drift_of",
    "scanner_for",
    "stream_logs",
]
