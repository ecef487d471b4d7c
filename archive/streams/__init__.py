"""Recorded streams: codec framing, and the log the streaming agent keeps of each chunk."""

from .archived import recorded_streams, stream_logs
from .frames import FrameScanner, scanner_for
from .log import (
    LOG_TYPE,
    REGISTRY_URL,
    BadLog,
    ChunkLog,
    Drift,
    Fit,
    Gap,
    Point,
    Segment,
    Title,
    drift_of,
)
from .playback import StreamStart, frame_after, hls_playlist, start_at
from .timeline import Span, Timeline, timeline

__all__ = [
    "LOG_TYPE",
    "REGISTRY_URL",
    "BadLog",
    "ChunkLog",
    "Drift",
    "Fit",
    "FrameScanner",
    "Gap",
    "Point",
    "Segment",
    "Span",
    "StreamStart",
    "Timeline",
    "Title",
    "drift_of",
    "frame_after",
    "hls_playlist",
    "recorded_streams",
    "scanner_for",
    "start_at",
    "stream_logs",
    "timeline",
]
