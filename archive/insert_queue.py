"""Inserting batches of captures while the caller makes the next ones.

An importer or a crawler makes batches faster than one insert takes (the index node names the new
contents, they are uploaded while it appends the structure records, then the insert is
confirmed): waiting for each batch before making the next leaves the caller and the cluster idle
in turn. An InsertQueue keeps a few batches in flight and adds up what they stored.
"""

import asyncio
from collections import deque
from collections.abc import Callable, Sequence

from .cluster import BodySource, ClusterClient, InsertSummary, NewCapture

__all__ = ["InsertQueue"]


class InsertQueue:
    """At most `ahead` batches inserting at once; the first failure is raised by `put` or
    `join`."""

    def __init__(self, client: ClusterClient, ahead: int = 2) -> None:
        self.client = client
        self.ahead = ahead
        self.summary = InsertSummary()
        self._flying: deque[asyncio.Task[None]] = deque()

    async def put(
        self,
        captures: Sequence[NewCapture],
        body_of: BodySource,
        release: Callable[[], None] | None = None,
    ) -> None:
        """Start inserting a batch, waiting first while `ahead` are in flight; `release` runs
        once its insert has ended, whatever the outcome (to drop the batch's bodies)."""
        while len(self._flying) >= self.ahead:
            await self._flying.popleft()
        self._flying.append(asyncio.create_task(self._insert(captures, body_of, release)))

    async def join(self) -> InsertSummary:
        """Wait until every batch put is stored."""
        while self._flying:
            await self._flying.popleft()
        return self.summary

    async def cancel(self) -> None:
        """Stop the batches in flight and wait until they have let go of their bodies."""
        for task in self._flying:
            task.cancel()
        await asyncio.gather(*self._flying, return_exceptions=True)
        self._flying.clear()

    async def _insert(
        self,
        captures: Sequence[NewCapture],
        body_of: BodySource,
        release: Callable[[], None] | None,
    ) -> None:
        try:
            done = await self.client.insert(captures, body_of)
        finally:
            if release is not None:
                release()
        self.summary.add(done)
