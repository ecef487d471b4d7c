"""A storage node's state: its two file stores, bloom filter, counters and inventory log."""

import asyncio
import contextlib
import enum
import itertools
import json
import logging
import os
import time
import uuid
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from archive.atomic import atomic_write
from archive.bloom import NameFilter
from archive.errors import ClientFault, CorruptFile, DlwebError, NotFound
from archive.store import PendingFile, fsync_dir
from archive.structure import Capture, StructureFile, encode_file
from archive.urlkey import structure_name

from .commit import GroupCommitter, place_all
from .inventory import Entry, InventoryLog, Mark
from .name_locks import NameLocks
from .space import DEFAULT_RESERVE, Reserve, Space
from .stores import SMALL_CONTENT, SMALL_STRUCTURE, Staged, VolumeStore
from .volumes import Span, VolumeEntry

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.json"
FILTER_FILE = "names.bloom"
# Written last at a clean stop, taken away first at a start: its presence says the saved filter
# and counts hold the whole inventory log, which ends where it says.
CLEAN_FILE = "clean-stop.json"
IDENTITY_FILE = "node.json"
QUARANTINE = "quarantine"
CONTENT, STRUCTURE = "content", "structure"
T = TypeVar("T")
# A content streamed in has the free space looked at again after this many bytes.
SPACE_CHECK_EVERY = 1024 * 1024
# A node's filter is sized for at least a million names (1.8 MB), so a growing node rebuilds rarely.
MIN_FILTER_CAPACITY = 1_000_000
# Names added to a filter being built at a time: numpy sets their bits together.
FILTER_BATCH = 100_000


def sized_filter(count: int, names: Iterable[str]) -> NameFilter:
    """A filter with room for twice `count` names, holding `names` (added a batch at a time)."""
    names_filter = NameFilter(max(2 * count, MIN_FILTER_CAPACITY))
    batch: list[str] = []
    for name in names:
        batch.append(name)
        if len(batch) == FILTER_BATCH:
            names_filter.add_many(batch)
            batch = []
    names_filter.add_many(batch)
    return names_filter


@dataclass
class Start:
    """How the node learnt what it holds when it started, for its status and log.

    `how` is "clean" (the filter and counts saved at a clean stop, read), "replayed" (saved
    earlier, then the inventory entries logged after them replayed and checked against the disk,
    as after a crash) or "rebuilt" (listed from the stores, nothing usable being saved)."""

    how: str = "rebuilt"
    seconds: float = 0.0
    replayed: int = 0
    corrected: int = 0
    log_bytes_read: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "how": self.how,
            "seconds": round(self.seconds, 3),
            "replayed": self.replayed,
            "corrected": self.corrected,
            "log_bytes_read": self.log_bytes_read,
        }


@dataclass(frozen=True)
class Saved:
    """The counts saved with the filter, at the inventory entry `seq` (ending at byte `offset` of
    the log; None in a snapshot saved before offsets were)."""

    seq: int
    offset: int | None
    counts: "Counts"

    @property
    def mark(self) -> Mark | None:
        return None if self.offset is None else Mark(self.seq, self.offset)


class Copy(enum.Enum):
    """Which copy of a structure file an append reaches."""

    # The copy inserts append to: an append makes it fresh.
    ACTIVE = "active"
    # Another copy an insert appends to before it is acknowledged: its mark stays as it was.
    OTHER = "other"
    # Another copy, which an append creates when missing without the file's older records: a
    # copy so created is stale until refreshed from the active one.
    PARTIAL = "partial"


class UrlMismatch(ClientFault):
    """A structure write whose URL does not hash to the file name it was sent to."""


class DamagedCopy(ClientFault):
    """A whole structure file sent that does not read as one."""


@dataclass
class Counts:
    """What the node holds, kept current so /status and group subscriptions need no disk scan."""

    files: dict[str, int] = field(default_factory=lambda: {CONTENT: 0, STRUCTURE: 0})
    bytes: dict[str, int] = field(default_factory=lambda: {CONTENT: 0, STRUCTURE: 0})
    groups: list[int] = field(default_factory=lambda: [0] * 256)

    def apply(self, op: str, kind: str, name: str, size: int) -> None:
        sign = 1 if op == "add" else -1
        self.files[kind] += sign
        self.bytes[kind] += sign * size
        self.groups[int(name[:2], 16)] += sign

    def to_json(self) -> dict[str, object]:
        return {"files": self.files, "bytes": self.bytes, "groups": self.groups}

    def copy(self) -> "Counts":
        return Counts(dict(self.files), dict(self.bytes), list(self.groups))

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "Counts":
        files, sizes, groups = data["files"], data["bytes"], data["groups"]
        if not (isinstance(files, dict) and isinstance(sizes, dict) and isinstance(groups, list)):
            raise ValueError("snapshot counts are not mappings and a list")
        if len(groups) != 256:
            raise ValueError("snapshot group counts do not have 256 entries")
        return cls(
            {k: int(files[k]) for k in (CONTENT, STRUCTURE)},
            {k: int(sizes[k]) for k in (CONTENT, STRUCTURE)},
            [int(g) for g in groups],
        )


class StorageNode:
    """Owns a node's root directory; every change of what it holds goes through here."""

    def __init__(
        self, root: Path, node_id: str | None = None, reserve: Reserve = DEFAULT_RESERVE
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.id = self._identity(node_id)
        self.space = Space(self.root, reserve)
        self.executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="node-io")
        began = time.perf_counter()
        self.contents = VolumeStore(self.root / "content", SMALL_CONTENT, mutable=False)
        self.structures = VolumeStore(self.root / "structure", SMALL_STRUCTURE, mutable=True)
        for store in (self.contents, self.structures):
            removed = store.clean_temporaries()
            if removed:
                log.warning("%s: removed %d files left by interrupted writes", store.root, removed)
        saved = self._saved_counts()
        clean = self._take_clean_mark()
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
        # Where the log was when the filter and counts were last saved (None: not in this form).
        self.saved_mark: Mark | None = None
        self.start = Start(log_bytes_read=self.inventory.mark.offset - self.inventory.began.offset)
        self.counts, self.filter = self._load_state(saved, clean)
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
        # Set when more inventory entries are durable, so the master link sends them at once.
        self.changed = asyncio.Event()
        self.inventory.on_durable = self.changed.set
        self.scrubbing = asyncio.Lock()

    def _identity(self, node_id: str | None) -> str:
        path = self.root / IDENTITY_FILE
        if path.exists():
            stored = json.loads(path.read_text())["id"]
            if node_id is not None and node_id != stored:
                raise DlwebError(f"{self.root} belongs to node {stored!r}, not {node_id!r}")
            return str(stored)
        chosen = node_id or uuid.uuid4().hex[:12]
        atomic_write(path, json.dumps({"id": chosen}).encode())
        return chosen

    # -- state that survives restarts ---------------------------------------------------------

    def _saved_counts(self) -> Saved | None:
        """The counts saved with the filter, or None when there are none usable (then the disk is
        scanned)."""
        try:
            snapshot = json.loads((self.root / SNAPSHOT_FILE).read_text())
            offset = snapshot.get("offset")
            return Saved(
                int(snapshot["seq"]),
                None if offset is None else int(offset),
                Counts.from_json(snapshot["counts"]),
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s: saved counts unusable (%s)", self.root, exc)
            return None

    def _take_clean_mark(self) -> Mark | None:
        """Where the inventory log ended at a clean stop, if the last run stopped cleanly; the
        mark is removed (durably) before anything changes, so a crash of this run leaves none."""
        path = self.root / CLEAN_FILE
        try:
            data = json.loads(path.read_bytes())
            mark: Mark | None = Mark(int(data["seq"]), int(data["offset"]))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s: unreadable (%s); taken as a crash", path, exc)
            mark = None
        os.unlink(path)
        fsync_dir(self.root)
        return mark

    def _load_state(self, saved: Saved | None, clean: Mark | None) -> tuple[Counts, NameFilter]:
        """The filter and counts saved, as they are after a clean stop; after a crash, with the
        inventory entries logged since replayed and checked against the disk; without them (or
        when they do not match the log), rebuilt from the stores."""
        if saved is None:
            log.info("%s: no saved filter; scanning the disk once", self.root)
            return self._rescan()
        try:
            names_filter, seq = NameFilter.load(self.root / FILTER_FILE)
            if seq != saved.seq:
                raise ValueError(f"filter is at entry {seq}, counts at {saved.seq}")
            if self.inventory.seq < seq:
                raise ValueError(f"the inventory log ends at entry {self.inventory.seq}")
        except NotFound:
            log.info("%s: no saved filter; scanning the disk once", self.root)
            return self._rescan()
        except (ValueError, CorruptFile) as exc:
            log.warning("%s: saved state unusable (%s); scanning the disk", self.root, exc)
            return self._rescan()
        counts = saved.counts
        self.saved_mark = saved.mark
        if clean is not None and clean == saved.mark == self.inventory.mark:
            self.start.how = "clean"
            log.info(
                "%s: stopped cleanly at entry %d; saved filter and counts read", self.root, seq
            )
            return counts, names_filter
        self.start.how = "replayed"
        touched: dict[str, Entry] = {}
        for entry in self.inventory.read_since(seq, limit=1 << 62):
            counts.apply(entry.op, entry.kind, entry.name, entry.size)
            if entry.op == "add":
                names_filter.add(entry.name)
            else:
                names_filter.discard(entry.name)
            touched[entry.name] = entry
            self.start.replayed += 1
        log.info(
            "%s: not stopped cleanly; replayed %d inventory entries after the saved filter",
            self.root,
            self.start.replayed,
        )
        if touched:
            self._reconcile(touched, counts, names_filter)
        return counts, names_filter

    def _reconcile(
        self, touched: dict[str, Entry], counts: Counts, names_filter: NameFilter
    ) -> None:
        """Correct entries a crash left untrue: a file logged as added that never got in place,
        or one logged as removed that is still there."""
        corrected = 0
        for name, last in touched.items():
            store = self.store_for(last.kind)
            on_disk = store.exists(name)
            if (last.op == "add") == on_disk:
                continue
            op, size = ("add", store.size(name)) if on_disk else ("remove", last.size)
            counts.apply(op, last.kind, name, size)
            if on_disk:
                names_filter.add(name)
            else:
                names_filter.discard(name)
            self.inventory.append(op, last.kind, name, size)
            corrected += 1
        self.start.corrected = corrected
        if corrected:
            self.inventory.flush_now()
            log.warning("%s: corrected %d inventory entries left by a crash", self.root, corrected)

    def _rescan(self) -> tuple[Counts, NameFilter]:
        """Count and filter every file the stores hold, without a list of them in memory."""
        self.start.how = "rebuilt"
        counts = Counts()

        def counted(kind: str, store: VolumeStore) -> Iterator[str]:
            for name, size in store.sizes():
                counts.apply("add", kind, name, size)
                yield name

        names_filter = sized_filter(
            self.contents.count() + self.structures.count(),
            itertools.chain(counted(CONTENT, self.contents), counted(STRUCTURE, self.structures)),
        )
        self.inventory.flush_now()
        self._save_state(counts, names_filter, self.inventory.mark)
        return counts, names_filter

    def _save_state(self, counts: Counts, names_filter: NameFilter, mark: Mark) -> None:
        """Write the filter and counts as of the log's entry `mark.seq`, which is durable."""
        self.saved_mark = mark
        names_filter.save(self.root / FILTER_FILE, mark.seq)
        snapshot = {"seq": mark.seq, "offset": mark.offset, "counts": counts.to_json()}
        atomic_write(self.root / SNAPSHOT_FILE, json.dumps(snapshot).encode())

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
            mark = self.inventory.mark
            atomic_write(
                self.root / CLEAN_FILE,
                json.dumps({"seq": mark.seq, "offset": mark.offset}).encode(),
            )

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

    async def _add_file(
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

    async def run_io(self, func: Callable[..., T], *args: object) -> T:
        """Run a blocking call (fsync, rename) off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, func, *args)

    # -- contents -------------------------------------------------------------------------------

    async def put_content(self, expected: str, body: AsyncIterable[bytes]) -> bool:
        """Store a content from a stream, verifying its hash; False when it was already here.
        The free space is looked at again as the bytes come, so a stream whose length was not
        told stops at the reserve."""
        held = self.holds(CONTENT, expected)
        with self.space.writing(0, held), self.contents.writer(expected) as pending:
            checked = 0
            async for chunk in body:
                pending.write(chunk)
                if pending.size - checked >= SPACE_CHECK_EVERY:
                    checked = pending.size
                    self.space.check(0, held)
            if self.committer is None:
                await self.run_io(pending.seal)
            else:
                pending.seal(fsync=False)
            staged = await self.run_io(self.contents.stage_file, pending)
            # Shielded: once placed, a file must reach the inventory even if the client left.
            return await asyncio.shield(self._place_content(staged))

    async def put_contents(self, items: Sequence[tuple[str, bytes | memoryview]]) -> int:
        """Store many small contents at once (an uploaded pack); returns how many were new.

        They are hashed and written aside in one worker call, then put in place through the group
        commit together; a content whose bytes do not match its name fails the whole pack before
        anything is placed.
        """
        maybe_held = self.filter.might_hold_many([name for name, _ in items])
        size = sum(len(data) for (_, data), held in zip(items, maybe_held, strict=True) if not held)
        with self.space.writing(size, held=all(maybe_held)):
            staged = await self.run_io(self._stage_contents, items, maybe_held)
            try:
                # Shielded: once placed, files must reach the inventory even if the client left.
                return await asyncio.shield(self._place_contents(staged))
            finally:
                for entry in staged:
                    entry.abort()

    async def _place_contents(self, staged: list[PendingFile | VolumeEntry]) -> int:
        """Put staged contents in place together: one inventory write, one group commit."""
        async with self.names.hold(entry.name or "" for entry in staged):
            fresh = await self.run_io(self._not_held, staged)
            if fresh:
                await self._add_files(CONTENT, [(e.name or "", e.size, e) for e in fresh])
            return len(fresh)

    async def _add_files(self, kind: str, files: Sequence[tuple[str, int, Staged]]) -> None:
        """`_add_file` for a batch of staged files: one inventory write, one group commit."""
        sizes = [(name, size) for name, size, _ in files]
        staged = [sfile for _, _, sfile in files]
        async with self._changing():
            entries = self.inventory.append_many("add", kind, sizes)
            try:
                if self.committer is None:
                    await self.run_io(_place_flushed, staged)
                else:
                    await self.committer.place_all(staged)
            except BaseException:
                self.inventory.durable_later(self.inventory.append_many("remove", kind, sizes)[-1])
                raise
            self._apply_added(kind, sizes)
        await self.inventory.durable(entries[-1])

    def _not_held(self, staged: list[PendingFile | VolumeEntry]) -> list[PendingFile | VolumeEntry]:
        named = [entry for entry in staged if entry.name]
        held = self.holds_many(CONTENT, [entry.name or "" for entry in named])
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
        store = self.contents
        wanted: dict[str, bytes | memoryview] = {}
        for (name, data), maybe in zip(items, maybe_held, strict=True):
            if name not in wanted and not (maybe and store.exists(name)):
                wanted[name] = data
        return store.stage_contents(list(wanted.items()), fsync=self.committer is None)

    async def _place_content(self, staged: PendingFile | VolumeEntry) -> bool:
        name = staged.name
        assert name is not None
        async with self.names.hold((name,)):
            if self.holds(CONTENT, name):
                return False
            committer = self.committer

            async def put_in_place() -> None:
                if committer is None:
                    await self.run_io(staged.place)
                else:
                    await committer.place(staged)

            await self._add_file(CONTENT, name, staged.size, put_in_place)
        return True

    async def delete(self, kind: str, name: str) -> bool:
        store = self.store_for(kind)
        async with self.names.hold((name,)):
            try:
                size = store.size(name)
            except FileNotFoundError:
                return False
            async with self._changing():
                entry = self.inventory.append("remove", kind, name, size)
                await self.run_io(store.delete, name)
                self._apply_removed(kind, name, size)
            await self.inventory.durable(entry)
        return True

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
        store = self.store_for(kind)
        target = self.root / QUARANTINE / kind / name
        try:
            size = store.size(name)
        except FileNotFoundError:
            return False
        async with self._changing():
            entry = self.inventory.append("remove", kind, name, size)
            try:
                await self.run_io(store.move_out, name, target)
            except OSError:
                self.inventory.durable_later(self.inventory.append("add", kind, name, size))
                raise
            self._apply_removed(kind, name, size)
        await self.inventory.durable(entry)
        log.warning("quarantined %s %s in %s", kind, name, target.parent)
        return True

    # -- structure files ------------------------------------------------------------------------

    async def append_captures(
        self, name: str, url: str, captures: Sequence[Capture], copy: Copy = Copy.ACTIVE
    ) -> tuple[int, bool]:
        """Add captures to a URL's structure file, creating it if needed; returns how many were
        new and whether the file was created. The caller has checked that the URL belongs to the
        file name (the HTTP handlers do)."""
        with self.space.writing(0, held=self.holds(STRUCTURE, name)):
            return await self._append_captures(name, url, captures, copy)

    async def _append_captures(
        self, name: str, url: str, captures: Sequence[Capture], copy: Copy
    ) -> tuple[int, bool]:
        store = self.structures
        async with self.names.hold((name,)):
            if not self.holds(STRUCTURE, name):
                unique = list(dict.fromkeys(captures))
                data = encode_file(url, unique)

                async def create() -> None:
                    await self._place_structure(await self.run_io(store.stage_version, name, data))

                await self._add_file(STRUCTURE, name, len(data), create)
                self._created([name], copy)
                return len(unique), True
            before = store.size(name)
            in_volume = store.in_volume(name)
            self._appended([name], copy)
            with store.open_structure(name, writable=not in_volume) as sfile:
                fresh, in_order = sfile.plan_append(captures)
                if not fresh:
                    return 0, False
                if in_order and not in_volume and self.committer is not None:
                    await self.run_io(sfile.append_in_order, fresh, False)
                    await self.committer.flush()
                elif in_order and not in_volume:
                    await self.run_io(sfile.append_in_order, fresh)
                else:
                    version = await self.run_io(
                        store.stage_version, name, sfile.merged_bytes(fresh)
                    )
                    await self._place_structure(version)
                    if self.committer is not None:
                        # The group commit flushed the bytes, then wrote the index record.
                        await self.committer.flush()
            self.counts.bytes[STRUCTURE] += store.size(name) - before
            return len(fresh), False

    def _appended(self, names: Iterable[str], copy: Copy) -> None:
        """An append to the active copy of a structure file makes it fresh (the master merges
        into it what a lost active copy had); one to another copy changes nothing."""
        if self.stale and copy is Copy.ACTIVE:
            for name in names:
                self.unmark_stale(name)

    def _created(self, names: list[str], copy: Copy) -> None:
        """A partial copy just created lacks the older records: stale until refreshed."""
        if copy is Copy.PARTIAL and names:
            self.mark_stale(names)

    async def append_in_volumes(
        self, files: Sequence[tuple[str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        """`append_captures` for a batch of files kept in volumes, together: their records are
        read and their new versions staged in one worker call, then placed through one group
        commit. Returns how many records each file got (0 when it had them all); a file left
        out is for `append_captures` (not held meanwhile, or kept as a file of its own, which
        is appended to in place). Of a name given twice, the first is taken. The caller has
        checked each URL against its file name."""
        wanted: dict[str, Sequence[Capture]] = {}
        for name, captures in files:
            wanted.setdefault(name, captures)
        if not wanted:
            return {}
        async with self.names.hold(wanted):
            with self.space.writing(0, held=True):
                planned = await self.run_io(self._plan_appends, list(wanted.items()))
                versions = [version for _, _, _, version in planned if version is not None]
                try:
                    if versions and self.committer is None:
                        await self.run_io(_place_flushed, versions)
                    elif versions and self.committer is not None:
                        await self.committer.place_all(versions)
                        # Replacements have no inventory entry to flush them: flush here.
                        await self.committer.flush()
                finally:
                    for version in versions:
                        version.abort()
            self.counts.bytes[STRUCTURE] += sum(grown for _, _, grown, _ in planned)
            self._appended([name for name, _, _, _ in planned], copy)
        return {name: count for name, count, _, _ in planned}

    def _plan_appends(
        self, wanted: list[tuple[str, Sequence[Capture]]]
    ) -> list[tuple[str, int, int, Staged | None]]:
        """For each file kept in a volume: (name, new records, bytes grown, new version staged,
        or None when nothing is new)."""
        store = self.structures
        unchanged: list[tuple[str, int, int, Staged | None]] = []
        grown: list[tuple[str, int, int]] = []
        files: list[tuple[str, bytes]] = []
        held = self.holds_many(STRUCTURE, [name for name, _ in wanted])
        for (name, captures), is_held in zip(wanted, held, strict=True):
            span = store.volume_span(name) if is_held else None
            if span is None:
                continue
            try:
                with StructureFile(Path(span.path), start=span.offset, length=span.size) as sfile:
                    fresh, _ = sfile.plan_append(captures)
                    data = sfile.merged_bytes(fresh) if fresh else b""
            except FileNotFoundError:
                continue  # its volume was compacted meanwhile: left for append_captures
            if not fresh:
                unchanged.append((name, 0, 0, None))
                continue
            grown.append((name, len(fresh), len(data) - span.size))
            files.append((name, data))
        versions = store.stage_versions(files, absent=True)
        return unchanged + [(*plan, version) for plan, version in zip(grown, versions, strict=True)]

    async def create_structures(
        self, files: Sequence[tuple[str, str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        """Create the structure files of a batch that do not exist yet, together: one staging
        call, one inventory write, one group commit. Returns how many records each created
        file got; a file that exists is left out, for `append_captures`. The caller has checked
        that each URL belongs to its file name (the HTTP handler does, file by file)."""
        wanted: dict[str, tuple[str, list[Capture]]] = {}
        for name, url, captures in files:
            if name not in wanted:
                wanted[name] = (url, [])
            wanted[name][1].extend(captures)
        async with self.names.hold(wanted):
            # A batch of files held already writes nothing new: only the floor applies.
            with self.space.writing(0, held=all(self.filter.might_hold_many(list(wanted)))):
                staged = await self.run_io(self._stage_structures, list(wanted.items()))
                try:
                    if staged:
                        await self._add_files(
                            STRUCTURE, [(name, size, sfile) for name, _, size, sfile in staged]
                        )
                        self._created([name for name, _, _, _ in staged], copy)
                finally:
                    # What a failure left unplaced is removed; a placed file has nothing left.
                    for _, _, _, sfile in staged:
                        sfile.abort()
            return {name: count for name, count, _, _ in staged}

    def _stage_structures(
        self, wanted: list[tuple[str, tuple[str, list[Capture]]]]
    ) -> list[tuple[str, int, int, Staged]]:
        """Write each absent file aside: (name, records, size, staged file)."""
        held = self.holds_many(STRUCTURE, [name for name, _ in wanted])
        files: list[tuple[str, bytes]] = []
        records: list[int] = []
        for (name, (url, captures)), is_held in zip(wanted, held, strict=True):
            if not is_held:
                unique = list(dict.fromkeys(captures))
                files.append((name, encode_file(url, unique)))
                records.append(len(unique))
        versions = self.structures.stage_versions(files, absent=True)
        return [
            (name, count, len(data), version)
            for (name, data), count, version in zip(files, records, versions, strict=True)
        ]

    async def put_structure(
        self, name: str, body: AsyncIterable[bytes], read_after: int | None = None
    ) -> bool:
        """Store a whole structure file (a copy sent by the master), after checking all of it;
        `read_after` is for `unmark_stale`."""
        with self.space.writing(0, held=self.holds(STRUCTURE, name)):
            return await self._put_structure(name, body, read_after)

    async def _put_structure(
        self, name: str, body: AsyncIterable[bytes], read_after: int | None
    ) -> bool:
        store = self.structures
        temp = store.files.tmp_root / f"copy-{uuid.uuid4().hex}.part"
        try:
            with open(temp, "wb") as out:
                async for chunk in body:
                    out.write(chunk)
            try:
                with StructureFile(temp) as sfile:
                    url = sfile.reader.url
                    await self.run_io(sfile.reader.check_all)
            except CorruptFile as exc:
                raise DamagedCopy(f"the structure file sent is damaged: {exc.reason}") from None
            if name != structure_name(url):
                raise UrlMismatch(f"structure file for {url[:200]!r} sent as {name}")
            size = temp.stat().st_size

            async def put_in_place() -> None:
                await self._place_structure(
                    await self.run_io(store.stage_version, name, None, temp)
                )

            async with self.names.hold((name,)):
                if not self.holds(STRUCTURE, name):
                    await self._add_file(STRUCTURE, name, size, put_in_place)
                    self.unmark_stale(name, read_after)
                    return True
                old_size = store.size(name)
                union = await self.run_io(self._union_with_held, name, temp)
                if union is None:
                    await put_in_place()
                else:
                    log.info("structure %s: the copy sent lacked records held here; kept", name)
                    size = len(union)
                    await self._place_structure(await self.run_io(store.stage_version, name, union))
                # No inventory entry flushes a replacement: make it durable here.
                if self.committer is not None:
                    await self.committer.flush()
                else:
                    await self.run_io(fsync_dir, store.files.path_for(name).parent)
                self.counts.bytes[STRUCTURE] += size - old_size
                self.unmark_stale(name, read_after)
                return False
        finally:
            temp.unlink(missing_ok=True)

    def _union_with_held(self, name: str, copy: Path) -> bytes | None:
        """The bytes of the structure copy at `copy` with the records of the copy held here that
        it lacks, or None when it lacks none. Records only accumulate, so a copy that replaces
        another keeps what that one had: records appended here that the master has not heard of
        yet (a copy the index node just appended to) are not lost to a refresh or a repair copy
        made from an older one. A held copy that does not read whole is replaced, never merged."""
        try:
            with self.structures.open_structure(name) as held:
                held.reader.check_all()
                records = held.reader.records()
        except (OSError, DlwebError):
            return None
        with StructureFile(copy) as sent:
            fresh, _ = sent.plan_append(records)
            return sent.merged_bytes(fresh) if fresh else None

    async def _place_structure(self, staged: Staged) -> None:
        """Put a staged structure file in place durably, with the group commit when there is one."""
        if self.committer is None:
            await self.run_io(staged.place)
        else:
            await self.committer.place(staged)

    def open_structure(self, name: str) -> StructureFile:
        try:
            return self.structures.open_structure(name)
        except FileNotFoundError:
            raise NotFound(f"no structure file {name} on this node") from None


def _place_flushed(files: Sequence[Staged]) -> None:
    """Put staged files in place, each flushed (there is no group commit); raises the first
    failure, after the others are in place."""
    failure = next((outcome for outcome in place_all(files) if outcome is not None), None)
    if failure is not None:
        raise failure
