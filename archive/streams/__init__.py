"""Recorded streams: codec framing, the log the streaming agent keeps of each chunk, playback
from a date and the timeline of a recording."""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .archived import recorded_streams, stream_logs
    from .frames import FrameScanner, scanner_for
    from .log import (
        LOG_TYPE,
        PLAYLIST_TYPES,
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
    from .timelines import Span, Timeline, timeline

__all__ = [
    "LOG_TYPE",
    "PLAYLIST_TYPES",
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

# Loaded on first use: the log format is light, reading recordings back needs the cluster client.
__getattr__ = lazy_exports(__name__, __file__)
