"""Storing content files: one streamed in with its hash checked, or a pack of small ones placed
together."""

import asyncio
from collections.abc import AsyncIterable, Sequence

from archive.store import PendingFile

from .counts import CONTENT
from .holdings import Holdings
from .space import Space
from .volumes import VolumeEntry

# A content streamed in has the free space looked at again after this many bytes.
SPACE_CHECK_EVERY = 1024 * 1024


class ContentWrites:
    """Puts contents in the node's content store, through `holdings` so they are logged and
    counted, within the free space `space` allows."""

    def __init__(self, holdings: Holdings, space: Space) -> None:
        self.holdings = holdings
        self.space = space

    async def put_content(self, expected: str, body: AsyncIterable[bytes]) -> bool:
        """Store a content from a stream, verifying its hash; False when it was already here.
        The free space is looked at again as the bytes come, so a stream whose length was not
        told stops at the reserve."""
        holdings = self.holdings
        held = holdings.holds(CONTENT, expected)
        with self.space.writing(0, held), holdings.contents.writer(expected) as pending:
            checked = 0
            async for chunk in body:
                pending.write(chunk)
                if pending.size - checked >= SPACE_CHECK_EVERY:
                    checked = pending.size
                    self.space.check(0, held)
            if holdings.committer is None:
                await holdings.run_io(pending.seal)
            else:
                pending.seal(fsync=False)
            staged = await holdings.run_io(holdings.contents.stage_file, pending)
            # Shielded: once placed, a file must reach the inventory even if the client left.
            return await asyncio.shield(self._place_content(staged))

    async def put_contents(self, items: Sequence[tuple[str, bytes | memoryview]]) -> int:
        """Store many small contents at once (an uploaded pack); returns how many were new.

        They are hashed and written aside in one worker call, then put in place through the group
        commit together; a content whose bytes do not match its name fails the whole pack before
        anything is placed.
        """
        maybe_held = self.holdings.filter.might_hold_many([name for name, _ in items])
        size = sum(len(data) for (_, data), held in zip(items, maybe_held, strict=True) if not held)
        with self.space.writing(size, held=all(maybe_held)):
            staged = await self.holdings.run_io(self._stage_contents, items, maybe_held)
            try:
                # Shielded: once placed, files must reach the inventory even if the client left.
                return await asyncio.shield(self._place_contents(staged))
            finally:
                for entry in staged:
                    entry.abort()

    async def _place_contents(self, staged: list[PendingFile | VolumeEntry]) -> int:
        """Put staged contents in place together: one inventory write, one group commit."""
        async with self.holdings.names.hold(entry.name or "" for entry in staged):
            fresh = await self.holdings.run_io(self._not_held, staged)
            if fresh:
                await self.holdings.add_files(CONTENT, [(e.name or "", e.size, e) for e in fresh])
            return len(fresh)

    def _not_held(self, staged: list[PendingFile | VolumeEntry]) -> list[PendingFile | VolumeEntry]:
        """The staged contents not held yet, each name once."""
        named = [entry for entry in staged if entry.name]
        held = self.holdings.holds_many(CONTENT, [entry.name or "" for entry in named])
        fresh: dict[str, PendingFile | VolumeEntry] = {}
        for entry, is_held in zip(named, held, strict=True):
            if not is_held:
                fresh.setdefault(entry.name or "", entry)
        return list(fresh.values())

    def _stage_contents(
        self, items: Sequence[tuple[str, bytes | memoryview]], maybe_held: list[bool]
    ) -> list[PendingFile | VolumeEntry]:
        """Stage the contents not held, each name once. `maybe_held` is the filter's answer for
        `items`, taken just before: a name added since is staged again, and left out when placed
        (`_not_held`)."""
        store = self.holdings.contents
        wanted: dict[str, bytes | memoryview] = {}
        for (name, data), maybe in zip(items, maybe_held, strict=True):
            if name not in wanted and not (maybe and store.exists(name)):
                wanted[name] = data
        return store.stage_contents(list(wanted.items()), fsync=self.holdings.committer is None)

    async def _place_content(self, staged: PendingFile | VolumeEntry) -> bool:
        """Put a content staged in place, logged as added; False when it was held meanwhile."""
        name = staged.name
        assert name is not None
        async with self.holdings.names.hold((name,)):
            if self.holdings.holds(CONTENT, name):
                return False

            async def put_in_place() -> None:
                await self.holdings.place(staged)

            await self.holdings.add_file(CONTENT, name, staged.size, put_in_place)
        return True
