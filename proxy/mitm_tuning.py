"""mitmproxy tuned for a proxy that answers most requests itself, under a crowd.

- Its upstream connections read in larger steps. mitmproxy opens them with asyncio's default
  stream buffer of 64 KiB, which stops reading from the socket once 128 KiB wait to be handled:
  a body streamed from a storage node then moves at most 128 KiB per turn of the event loop.
  When a crowd keeps the loop busy, a turn lasts a few tenths of a second, and a 1.5 MB script
  took over 2 s where a small answer took one turn. With a buffer of RELAY_BUFFER such a body
  moves in one or two turns. Memory stays bounded: by this buffer on the upstream side, and on
  the client's side by mitmproxy, which drains its writers before it reads on.
- The type checks of every request and response mitmproxy makes are off. mitmproxy runs them
  only in Python's debug mode (`if __debug__`, on unless Python runs with -O), and they took a
  tenth of the proxy's time under a crowd: every field of every message checked against its
  annotation, each time one is made.
"""

import asyncio
from typing import Any

from mitmproxy import http
from mitmproxy.proxy import server as mserver

RELAY_BUFFER = 1 << 20  # bytes an upstream stream buffers; it pauses its socket at twice this


async def _open_connection(
    *args: Any, **kwargs: Any
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(*args, limit=RELAY_BUFFER, **kwargs)


class _Asyncio:
    """asyncio as mitmproxy's connection handler sees it: the same but for `open_connection`."""

    open_connection = staticmethod(_open_connection)

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


def _unchecked(self: http.MessageData) -> None:
    """A message's fields as made, not checked against their annotations."""


def install() -> None:
    """Tune mitmproxy (once per process)."""
    if not isinstance(mserver.asyncio, _Asyncio):  # type: ignore[attr-defined]
        mserver.asyncio = _Asyncio()  # type: ignore[attr-defined,assignment]
    http.MessageData.__post_init__ = _unchecked  # type: ignore[method-assign]
