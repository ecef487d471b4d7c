"""The titles a recorded stream announced (ICY StreamTitle), for the search index: each is a
document of its own, at the stream's URL and the time it came on air, so that a search for a
title finds the moment it was on air.

The streaming agent keeps them in the log of each chunk (archive/streams/log.py), a content of
type LOG_TYPE named by a STREAM_LOG record in the stream URL's structure file: the index takes
each such log as a version of the URL (versions.py) and reads its titles here.
"""

from typing import NamedTuple

from archive.streams.log import BadLog, ChunkLog

from .errors import NotIndexed

__all__ = ["MAX_TITLES", "STREAM_TITLE_TYPE", "StreamTitles", "stream_titles"]

# The content_type of a title's document: the search harbor opens such a hit in the stream player.
STREAM_TITLE_TYPE = "application/vnd.dlweb.stream-title"
MAX_TITLES = 1_000  # titles read of one chunk's log (a chunk lasts a minute)
MAX_TITLE_CHARS = 1_000  # characters kept of a title
MAX_URL_SHOWN = 300  # characters of another stream's URL told in a reason


# A named tuple, not a dataclass: it comes back from the extracting processes pickled.
class StreamTitles(NamedTuple):
    """The titles of one chunk's log, each (when it came on air, in UTC microseconds; the title),
    in the order they came."""

    titles: tuple[tuple[int, str], ...]


def stream_titles(url: str, payload: bytes) -> StreamTitles:
    """The titles the chunk log `payload` of the stream `url` lists, blank ones left out;
    NotIndexed when it lists none, cannot be read, or is the log of another stream."""
    try:
        log = ChunkLog.decode(payload, "stream log")
    except BadLog as exc:
        raise NotIndexed("unreadable stream log", str(exc)[:MAX_URL_SHOWN]) from None
    if log.url != url:
        raise NotIndexed("stream log of another URL", log.url[:MAX_URL_SHOWN])
    titles = tuple(
        (title.time, text)
        for title in log.titles[:MAX_TITLES]
        if (text := " ".join(title.title.split())[:MAX_TITLE_CHARS])
    )
    if not titles:
        raise NotIndexed("stream log without titles")
    return StreamTitles(titles)
