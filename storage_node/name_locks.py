"""Exclusive use of file names while their files change, one name or a whole batch at once.

A lock object per name costs about 2 µs a name to make, register and take, which an upload of
1,000 contents pays for each of them. Here a batch takes all its names in one step, with set
operations. Waiting is first come, first served among overlapping batches, as with a lock per
name taken in order: a batch that waits reserves its names, so later batches that want one of
them wait behind it instead of slipping past it for ever.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable

__all__ = ["NameLocks"]


class NameLocks:
    def __init__(self) -> None:
        self._held: set[str] = set()
        self._waiting: list[tuple[frozenset[str], asyncio.Future[None]]] = []

    @contextlib.asynccontextmanager
    async def hold(self, names: Iterable[str]) -> AsyncIterator[None]:
        """Hold every name of `names` (repeats are fine) until the block ends."""
        wanted = frozenset(names)
        if not self._waiting and self._held.isdisjoint(wanted):
            self._held |= wanted
        else:
            await self._wait_for(wanted)
        try:
            yield
        finally:
            self._let_go(wanted)

    async def _wait_for(self, wanted: frozenset[str]) -> None:
        waiter = (wanted, asyncio.get_running_loop().create_future())
        self._waiting.append(waiter)
        self._grant()
        try:
            await waiter[1]
        except BaseException:
            if waiter[1].cancelled():
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
                    self._grant()
            else:
                self._let_go(wanted)  # granted, then cancelled before it could run
            raise

    def _let_go(self, names: frozenset[str]) -> None:
        self._held -= names
        if self._waiting:
            self._grant()

    def _grant(self) -> None:
        """Give their names to the waiters, in order, whose names are neither held nor wanted
        by an earlier waiter; a waiter cancelled meanwhile is dropped."""
        blocked = set(self._held)
        still: list[tuple[frozenset[str], asyncio.Future[None]]] = []
        for wanted, future in self._waiting:
            if future.cancelled():
                continue
            if blocked.isdisjoint(wanted):
                self._held |= wanted
                future.set_result(None)
            else:
                still.append((wanted, future))
            blocked |= wanted
        self._waiting = still
