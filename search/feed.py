"""A search indexer's end of the master's change feed (archive/changes.py): a HIP slave of role
`search`, woken by the master's notes and asking for the changes since its position."""

import asyncio
import contextlib
import os
import socket
from types import TracebackType

from archive.changes import Changes
from archive.cluster import ClusterClient
from archive.hip import HipSlave, Nothing, Peer, hip_url
from archive.index_calls import FEED_CHANGED, SEARCH_CHANGES, FeedAsked, FeedNote

# How long a call to the master waits for a connection and its answer: as long as a master
# restart takes.
CALL_TIMEOUT = 30.0


class Follower:
    """Follows the change feed of the master `client` knows."""

    def __init__(self, client: ClusterClient, master: str) -> None:
        self._changed = asyncio.Event()
        name = f"search-{socket.gethostname()}-{os.getpid()}"
        self._slave = HipSlave(
            hip_url(master),
            client.config.secret,
            name,
            {FEED_CHANGED.name: FEED_CHANGED.handler(self._note)},
            role="search",
        )

    @classmethod
    async def of(cls, client: ClusterClient) -> "Follower":
        return cls(client, await client.master_url())

    async def __aenter__(self) -> "Follower":
        await self._slave.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._slave.stop()

    async def _note(self, _peer: Peer, _note: FeedNote) -> Nothing:
        self._changed.set()
        return Nothing()

    async def changes(self, after: int, limit: int) -> Changes:
        """The files changed after number `after` (HipError when the master cannot answer)."""
        self._changed.clear()  # a note that comes after this call's answer wakes the next wait
        return await SEARCH_CHANGES.call(self._slave, FeedAsked(after, limit), timeout=CALL_TIMEOUT)

    async def wait(self, timeout: float) -> None:
        """Until the master tells of new changes, or `timeout` s (a note lost with a connection
        is then made up for)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
