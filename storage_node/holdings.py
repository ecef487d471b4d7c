"""What a node holds: its two file stores, the inventory log, the filter of the names and the counts
kept with it, and the marks of stale structure copies. Every file added or taken away goes through
here, so the log, the filter and the counts stay in step with the stores."""

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from archive.bloom import NameFilter

from .commit import GroupCommitter, place_all
from .counts import CONTENT, STRUCTURE, Counts, sized_filter
from .inventory import InventoryLog, Mark
from .name_locks import NameLocks
from .restart import StateLoader, read_saved, take_clean_mark, write_clean_mark, write_state
from .stores import SMALL_CONTENT, SMALL_STRUCTURE, Staged, VolumeStore
from .volumes import Span

log = logging.getLogger(__name__)

QUARANTINE = "quarantine"
T = TypeVar("T")


class Holdings:
    """Owns the stores of a node's root directory and what is known of them: opened (and what
    they hold learnt) at the start, saved as the node goes and at its stop."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="node-io")
        began = time.perf_counter()
        self.contents = VolumeStore(self.root / "content", SMALL_CONTENT, mutable=False)
        self.structures = VolumeStore(self.root / "structure", SMALL_STRUCTURE, mutable=True)
        for store in (self.contents, self.structures):
            removed = store.clean_temporaries()
            if removed:
                log.warning("%s: removed %d files left by interrupted writes", store.root, removed)
        saved = read_saved(self.root)
        clean = take_clean_mark(self.root)
        # The log is read from where the saved state, or else the clean stop, says it ended.
        self.inventory = InventoryLog(
            self.root / "inventory.log", self.executor, saved.mark if saved else clean
        )
        # Group commit needs a flush that covers renames: the inventory's syncfs.
        self.committer = (
            GroupCommitter(self.contents.root, self.executor)
            if self.inventory.syncs_filesystem
            else None
        )
        loader = StateLoader(self.root, self.inventory, self.contents, self.structures)
        self.counts, self.filter = loader.load(saved, clean)
        # Where the log was when the filter and counts were last saved (None: not in this form).
        self.saved_mark = loader.saved_mark
        self.start = loader.start
        self.start.seconds = time.perf_counter() - began
        # Changes logged but not yet applied to the counts and filter; a saved copy of those is
        # only taken when there are none, and changes wait meanwhile (see save_state).
        self._unapplied = 0
        self._all_applied = asyncio.Event()
        self._saving: asyncio.Event | None = None
        # While the filter is rebuilt from the stores, the changes applied meanwhile.
        self._journal: list[tuple[str, str]] | None = None
        self.names = NameLocks()
        self.on_new_group: Callable[[int], None] = lambda group: None
        # Structure files whose copy here the master said lacks records of the active copy on
        # another node, each with the number of the mark, until a copy read after that mark
        # replaces it: they answer lookups late (multicast). Kept in memory: the master names
        # again, when the node joins, the copies that diverged.
        self.stale: dict[str, int] = {}
        self.stale_marked = 0

    # -- state that survives restarts ---------------------------------------------------------

    def _save_state(self, counts: Counts, names_filter: NameFilter, mark: Mark) -> None:
        """Write the filter and counts as of the log's entry `mark.seq`, which is durable."""
        self.saved_mark = mark
        write_state(self.root, counts, names_filter, mark)

    async def save_state(self) -> None:
        """Write the filter and counts so the next start needs no disk scan.

        The copy written is taken when every change logged so far is applied (new changes wait
        the moment it takes), so the seq saved with it is exactly what it holds: a change logged
        but not yet applied is replayed, and checked against the disk, at the next start.
        """
        if self.filter.needs_rebuild():
            await self._rebuild_filter()
        if self.inventory.mark == self.saved_mark:
            return
        self._saving = saving = asyncio.Event()
        try:
            while self._unapplied:
                self._all_applied.clear()
                await self._all_applied.wait()
            counts, names_filter, mark = self.counts.copy(), self.filter.copy(), self.inventory.mark
        finally:
            self._saving = None
            saving.set()
        # Saved only once durable: a crash must not leave a saved state ahead of the log (nor,
        # with a flush of the filesystem, of the files it counts).
        await self.inventory.durable_upto(mark.seq)
        await self.run_io(self._save_state, counts, names_filter, mark)

    async def _rebuild_filter(self) -> None:
        """A filter sized for the names held now, read from the stores by a worker; the changes
        applied meanwhile are applied to it before it replaces the old one."""
        journal: list[tuple[str, str]] = []
        self._journal = journal
        try:
            fresh = await self.run_io(
                lambda: sized_filter(
                    self.contents.count() + self.structures.count(),
                    itertools.chain(self.contents.names(), self.structures.names()),
                )
            )
            for op, name in journal:
                if op == "add":
                    fresh.add(name)
                else:
                    fresh.discard(name)
            self.filter = fresh
        finally:
            self._journal = None

    @contextlib.asynccontextmanager
    async def _changing(self) -> AsyncIterator[None]:
        """Around logging a change and applying it to the counts and filter."""
        while self._saving is not None:
            await self._saving.wait()
        self._unapplied += 1
        try:
            yield
        finally:
            self._unapplied -= 1
            if not self._unapplied:
                self._all_applied.set()

    def close(self) -> None:
        """Stop, saving the filter and counts and marking the stop clean, so that the next start
        reads them instead of replaying the log or scanning the disk."""
        self.executor.shutdown(wait=True)
        if self.committer is not None:
            self.committer.close()
        # A change cut off between its log entry and its counting is left to the next start.
        clean = not self._unapplied
        self.inventory.close()
        if clean and self.inventory.mark != self.saved_mark:
            self._save_state(self.counts, self.filter, self.inventory.mark)
        self.contents.close()
        self.structures.close()
        if clean:
            write_clean_mark(self.root, self.inventory.mark)

    # -- what the node holds --------------------------------------------------------------------

    def store_for(self, kind: str) -> VolumeStore:
        return self.contents if kind == CONTENT else self.structures

    def holds(self, kind: str, name: str) -> bool:
        """Filter first (a miss is final), then the deletion set, then the filesystem."""
        return self.filter.might_hold(name) and self.store_for(kind).exists(name)

    def is_stale(self, kind: str, name: str) -> bool:
        """Whether this copy lacks records of another node's (it answers lookups late)."""
        return kind == STRUCTURE and name in self.stale

    def mark_stale(self, names: list[str]) -> int:
        """Mark the structure files held here whose copy is stale; returns how many."""
        held = [n for n, ok in zip(names, self.holds_many(STRUCTURE, names), strict=True) if ok]
        for name in held:
            self.stale_marked += 1
            self.stale[name] = self.stale_marked
        return len(held)

    def unmark_stale(self, name: str, read_after: int | None = None) -> None:
        """A copy of `name` replaced this one: fresh, unless it was read before the last mark
        (`read_after`, the value of `stale_marked` when the read began; None: whatever came)."""
        mark = self.stale.get(name)
        if mark is not None and (read_after is None or mark <= read_after):
            del self.stale[name]

    def holds_many(self, kind: str, names: list[str]) -> list[bool]:
        """`holds` for a batch of names, the filter answering for all of them at once."""
        store = self.store_for(kind)
        passed = self.filter.might_hold_many(names)
        return [ok and store.exists(name) for ok, name in zip(passed, names, strict=True)]

    @property
    def groups(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.counts.groups) if n > 0)

    def _apply_added(self, kind: str, files: list[tuple[str, int]]) -> None:
        """Count files gained, add their names to the filter together and report newly held
        groups."""
        new_groups = []
        for name, size in files:
            group = int(name[:2], 16)
            if self.counts.groups[group] == 0:
                new_groups.append(group)
            self.counts.apply("add", kind, name, size)
        self.filter.add_many(name for name, _ in files)
        if self._journal is not None:
            self._journal.extend(("add", name) for name, _ in files)
        for group in new_groups:
            self.on_new_group(group)

    def _apply_removed(self, kind: str, name: str, size: int) -> None:
        """Count a file lost and keep the filter current."""
        self.counts.apply("remove", kind, name, size)
        self.filter.discard(name)
        if kind == STRUCTURE:
            self.unmark_stale(name)
        if self._journal is not None:
            self._journal.append(("remove", name))

    async def add_file(
        self, kind: str, name: str, size: int, put_in_place: Callable[[], Awaitable[None]]
    ) -> None:
        """Log the file, put it in place, then wait until both are durable.

        The entry is written first, so a crash can leave an entry without its file (found and
        corrected at the next start) but never a file the inventory does not know.
        """
        async with self._changing():
            entry = self.inventory.append("add", kind, name, size)
            try:
                await put_in_place()
            except BaseException:
                self.inventory.durable_later(self.inventory.append("remove", kind, name, size))
                raise
            self._apply_added(kind, [(name, size)])
        await self.inventory.durable(entry)

    async def add_files(self, kind: str, files: Sequence[tuple[str, int, Staged]]) -> None:
        """`add_file` for a batch of staged files: one inventory write, one group commit."""
        sizes = [(name, size) for name, size, _ in files]
        staged = [sfile for _, _, sfile in files]
        async with self._changing():
            entries = self.inventory.append_many("add", kind, sizes)
            try:
                await self.place_all(staged)
            except BaseException:
                self.inventory.durable_later(self.inventory.append_many("remove", kind, sizes)[-1])
                raise
            self._apply_added(kind, sizes)
        await self.inventory.durable(entries[-1])

    async def place(self, staged: Staged) -> None:
        """Put a staged file in place durably, with the group commit when there is one."""
        if self.committer is None:
            await self.run_io(staged.place)
        else:
            await self.committer.place(staged)

    async def place_all(self, staged: Sequence[Staged]) -> None:
        """`place` for many files, which then share the group commit's flushes; raises the first
        failure among them, after the others are in place."""
        if self.committer is None:
            await self.run_io(_place_flushed, staged)
        else:
            await self.committer.place_all(staged)

    async def run_io(self, func: Callable[..., T], *args: object) -> T:
        """Run a blocking call (fsync, rename) off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, func, *args)

    # -- files taken away -----------------------------------------------------------------------

    async def delete(self, kind: str, name: str) -> bool:
        async with self.names.hold((name,)):
            return await self._take_out(kind, name, self.store_for(kind).delete)

    async def quarantine(self, kind: str, name: str) -> bool:
        """Move a damaged file out of the store into quarantine/, logged as removed."""
        async with self.names.hold((name,)):
            return await self._quarantine(kind, name)

    async def check_file(
        self, kind: str, name: str, fault: Callable[[Span], str | None]
    ) -> str | None:
        """Run `fault` on a held file under its lock, so no write is seen half done; quarantine
        the file when it names a problem, and return that. FileNotFoundError if it is gone."""
        async with self.names.hold((name,)):
            problem = await self.run_io(fault, self.store_for(kind).span(name))
            if problem is not None and await self._quarantine(kind, name):
                log.warning("%s %s is bad (%s)", kind, name, problem)
            return problem

    async def _quarantine(self, kind: str, name: str) -> bool:
        """Rename the file to <root>/quarantine/<kind>/<name> and count it as removed."""
        target = self.root / QUARANTINE / kind / name
        move = functools.partial(self.store_for(kind).move_out, target=target)
        if not await self._take_out(kind, name, move):
            return False
        log.warning("quarantined %s %s in %s", kind, name, target.parent)
        return True

    async def _take_out(self, kind: str, name: str, remove: Callable[[str], object]) -> bool:
        """Remove a held file from its store (`remove(name)` deletes it or moves it away),
        logged and counted as removed; False when it is not held. Its name is held by the
        caller. When `remove` fails the file is logged as there again."""
        store = self.store_for(kind)
        try:
            size = store.size(name)
        except FileNotFoundError:
            return False
        async with self._changing():
            entry = self.inventory.append("remove", kind, name, size)
            try:
                await self.run_io(remove, name)
            except OSError:
                self.inventory.durable_later(self.inventory.append("add", kind, name, size))
                raise
            self._apply_removed(kind, name, size)
        await self.inventory.durable(entry)
        return True


def _place_flushed(files: Sequence[Staged]) -> None:
    """Put staged files in place, each flushed (there is no group commit); raises the first
    failure, after the others are in place."""
    failure = next((outcome for outcome in place_all(files) if outcome is not None), None)
    if failure is not None:
        raise failure
