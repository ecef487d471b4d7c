"""Feeding what a crawl fetched into the cluster, through the cluster client's insertion path.

Captures are inserted in batches while the crawl goes on; the bodies of a batch stay in memory
(or in their spill file) until the index node has said which to upload and they are stored.
A site's crawl is over only once every batch is acknowledged.
"""

from collections.abc import Iterable
from pathlib import Path

from archive.cluster import ClusterClient, InsertSummary, NewCapture
from archive.insert_queue import InsertQueue

from .fetch import Body

__all__ = ["CaptureSink"]

BATCH = 100
BATCH_BYTES = 8 * 1024 * 1024
IN_FLIGHT = 2


class CaptureSink:
    def __init__(self, client: ClusterClient) -> None:
        self._queue = InsertQueue(client, IN_FLIGHT)
        self._captures: list[NewCapture] = []
        self._bodies: dict[str, bytes | Body] = {}
        self._bytes = 0

    async def add(self, capture: NewCapture, bodies: Iterable[tuple[str, bytes | Body]]) -> None:
        """Queue one capture and the bodies it names (a name already queued is kept once)."""
        self._captures.append(capture)
        for name, body in bodies:
            if name not in self._bodies:
                self._bodies[name] = body
                self._bytes += len(body) if isinstance(body, bytes) else len(body.data)
        if len(self._captures) >= BATCH or self._bytes >= BATCH_BYTES:
            await self._send()

    async def flush(self) -> InsertSummary:
        """Insert what is queued and wait until every batch is stored."""
        await self._send()
        return await self._queue.join()

    async def abandon(self) -> None:
        """Stop the batches in flight and drop every body held."""
        await self._queue.cancel()
        _discard(self._bodies)

    async def _send(self) -> None:
        if not self._captures:
            return
        captures, bodies = self._captures, self._bodies
        self._captures, self._bodies, self._bytes = [], {}, 0

        def body_of(name: str) -> bytes | Path:
            body = bodies[name]
            if isinstance(body, bytes):
                return body
            return body.path if body.path is not None else body.data

        await self._queue.put(captures, body_of, lambda: _discard(bodies))


def _discard(bodies: dict[str, bytes | Body]) -> None:
    for body in bodies.values():
        if isinstance(body, Body):
            body.discard()
