"""A search indexer's end of the master's change feed (archive/changes.py): a HIP slave of role
`search`, woken by the master's notes and asking for the changes since its position."""

import asyncio
import contextlib
import os
import socket
from types import TracebackType
from typing import Any

from archive.changes import CHANGED_NOTE, CHANGES_METHOD, Changes, ChangesAsked
from archive.cluster import ClusterClient
from archive.hip import HipSlave, Peer, hip_url

# How long a call to the master waits for a connection and its answer: as long as a master
# restart takes.
CALL_TIMEOUT = 30.0


class Follower:
    """Follows the change feed of the master `client` knows."""

    def __init__(self, client: ClusterClient, master: str) -> None:
        self._changed = asyncio.Event()
        name = f"search-{socket.gethostname()}-{os.getpid()}"
        self._slave = HipSlave(
            hip_url(master), client.config.secret, name, {CHANGED_NOTE: self._note}, role="search"
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

    async def _note(self, _peer: Peer, _params: Any) -> None:
        self._changed.set()

    async def changes(self, after: int, limit: int) -> Changes:
        """The files changed after number `after` (HipError when the master cannot answer)."""
        self._changed.clear()  # a note that comes after this call's answer wakes the next wait
        answer = await self._slave.call(
            CHANGES_METHOD, ChangesAsked(after, limit).to_json(), timeout=CALL_TIMEOUT
        )
        return Changes.from_json(answer)

    async def wait(self, timeout: float) -> None:
        """Until the master tells of new changes, or `timeout` s (a note lost with a connection
        is then made up for)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
