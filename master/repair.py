"""Keeping every file at its replica target: copies after a loss, drains, trims, refreshes, and
merges of structure copies that diverged while their node was away.

Each pass looks only at the files marked in the database since the last one (their locations or
target changed, or a node holding them started or stopped counting), plans copies of those below
target in batches per destination node, and asks the destinations to fetch from a node that
holds the file (`fetch`, docs/cluster.md). Copies are throttled to a rate in files per second;
the most endangered files of a batch go first. A full scan marks every file below or above
target at start-up, now and then as a safety net, and when more nodes may hold replicas.
"""

import asyncio
import itertools
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import InitVar, dataclass, field

import aiohttp

from archive.counts import Counts
from archive.hip import HipError, RemoteError
from archive.network import NETWORK_ERRORS
from archive.node_calls import DELETE, FETCH, DeleteOrder, FetchOrder, NodeFile

from .db import FileRef, MasterDB, Needy, Problem, Replicas, TargetFn
from .file_ids import FIRST_ID
from .membership import ADMIN_STATES, Membership
from .policy import choose_node
from .records import merge_copy

log = logging.getLogger(__name__)

BATCH = 500
EXAMINE = BATCH * 4
# Files a step of the full scan looks at, at most a step every SCAN_STEP_EVERY seconds (5,000
# files a second: 10M files in about half an hour), and where the database keeps its place. A
# step a pass would speed the scan up when the master is busiest: an import wakes the pass for
# every batch of inventory, and each step read 10,000 files beside the import's own writing.
SCAN_STEP = 10_000
SCAN_STEP_EVERY = 2.0
SCAN_META = "full_scan_at"
CALL_TIMEOUT = 600.0
# Merging reads a whole structure file and appends it; a silent node is given up after this.
MERGE_TIMEOUT = aiohttp.ClientTimeout(total=300, sock_connect=10, sock_read=30)
# Files below target kept in memory to look at again when a node joins; beyond this many, the
# next join brings a full scan instead.
UNPLACED_MAX = 100_000
# A file first heard of this recently is not copied yet when only some of its holders reported
# it: the inventory entries of the copies made at insertion (on other nodes, each sending a batch
# every half second) may still be on their way, and a copy made meanwhile would be trimmed again.
NEW_FILE_SETTLE = 2.0
# A file whose copy failed is not tried again before RETRY_FIRST seconds, twice as long after
# each failure in a row up to RETRY_MOST: a copy that cannot be made (its source's copy bad, its
# destination refusing it) is not asked for again and again, logging each time. RETRY_MOST is
# short: the cause may be gone the next moment (a scrub set a bad copy aside, a disk freed).
# At most FAILED_KEPT files are kept waiting; beyond that, the oldest are marked at once.
RETRY_FIRST = 1.0
RETRY_MOST = 8.0
FAILED_KEPT = 100_000


class RepairStats(Counts):
    """What the repair passes did, for the master's status."""

    copied: int = 0
    failed: int = 0
    deleted: int = 0
    refreshed: int = 0
    merged: int = 0
    running: int = 0
    examined: int = 0
    examined_last_pass: int = 0
    full_scans: int = 0


@dataclass(eq=False)
class Throttle:
    """Spaces out work to a rate (items per second, bytes per second); 0 means no limit."""

    per_second: float = 0.0
    bytes_per_second: float = 0.0
    _next: float = field(init=False, default_factory=time.monotonic)

    async def take(self, items: int, size: int = 0) -> None:
        cost = 0.0
        if self.per_second > 0:
            cost = max(cost, items / self.per_second)
        if self.bytes_per_second > 0:
            cost = max(cost, size / self.bytes_per_second)
        now = time.monotonic()
        start = max(now, self._next)
        self._next = start + cost
        if start > now:
            await asyncio.sleep(start - now)


@dataclass(eq=False, repr=False)
class Copier:
    """Asks nodes to fetch and delete files, and records what they report in the database."""

    db: MasterDB
    members: Membership
    targets: TargetFn
    token: str
    busy: set[tuple[str, str]] = field(init=False, default_factory=set)
    # Files whose last copy failed: when to try again, and the failures in a row.
    retry_at: dict[tuple[str, str], float] = field(init=False, default_factory=dict)
    failures: dict[tuple[str, str], int] = field(init=False, default_factory=dict)
    # The nodes each structure file is being copied to: a refresh meanwhile refreshes
    # their copies too (the one on its way may be older; a node keeps the records of both).
    arriving: dict[str, set[str]] = field(init=False, default_factory=dict)

    def release(self, files: Iterable[tuple[str, str]]) -> None:
        """End work on files: no longer busy, and looked at again by the next repair pass (those
        whose copy failed once their wait is over)."""
        keys = list(files)
        self.busy.difference_update(keys)
        self.db.mark(key for key in keys if key not in self.retry_at)

    def due(self, now: float) -> list[tuple[str, str]]:
        """The files whose wait after a failed copy is over, no longer waiting."""
        keys = [key for key, when in self.retry_at.items() if when <= now]
        for key in keys:
            del self.retry_at[key]
        return keys

    def _failed(self, keys: Iterable[tuple[str, str]]) -> None:
        """Keep files whose copy failed waiting, longer after each failure in a row."""
        now = time.monotonic()
        for key in keys:
            count = self.failures.pop(key, 0) + 1
            self.failures[key] = count  # last in the dict: the oldest come first
            self.retry_at.pop(key, None)
            self.retry_at[key] = now + min(RETRY_FIRST * 2 ** (count - 1), RETRY_MOST)
        while len(self.failures) > FAILED_KEPT:
            del self.failures[next(iter(self.failures))]
        overflow = list(itertools.islice(self.retry_at, max(len(self.retry_at) - FAILED_KEPT, 0)))
        for key in overflow:
            del self.retry_at[key]
        if overflow:
            self.db.mark(overflow)

    def source_for(
        self, kind: str, name: str, holders: tuple[str, ...], readable: set[str]
    ) -> str | None:
        """A readable holder to copy from: the active copy for a structure file, then the rest."""
        if kind == "structure":
            active = self.db.active_node(name)
            if active is not None and active in readable and active in holders:
                return active
        ordered = sorted(
            (h for h in holders if h in readable),
            key=lambda h: self.members.rows[h].state == "draining",
        )
        return ordered[0] if ordered else None

    async def fetch(self, dst: str, files: list[tuple[FileRef, str]]) -> tuple[int, int]:
        """Have dst fetch each file from its source node; returns (copied, failed). While a
        structure file is copied, a refresh of it copies the active copy to dst too: the copy
        on its way may have been read before the last appends."""
        structures = [ref.name for ref, _ in files if ref.kind == "structure"]
        for name in structures:
            self.arriving.setdefault(name, set()).add(dst)
        try:
            return await self._fetch(dst, files)
        finally:
            for name in structures:
                nodes = self.arriving.get(name, set())
                nodes.discard(dst)
                if not nodes:
                    self.arriving.pop(name, None)

    async def _fetch(self, dst: str, files: list[tuple[FileRef, str]]) -> tuple[int, int]:
        """Order the copies; record those made, forget the source copies that are not there
        (the file is looked at again with the holders it has), and keep the rest waiting."""
        peer = self.members.links.get(dst)
        if peer is None:
            self._failed((ref.kind, ref.name) for ref, _ in files)
            return 0, len(files)
        order = FetchOrder(
            tuple(NodeFile(ref.kind, ref.name, self.members.address(src)) for ref, src in files)
        )
        try:
            result = await FETCH.call(peer, order, timeout=CALL_TIMEOUT)
        except (HipError, RemoteError) as exc:
            log.warning("node %s could not fetch %d files: %s", dst, len(files), exc)
            self._failed((ref.kind, ref.name) for ref, _ in files)
            return 0, len(files)
        fetched, missing = set(result.fetched), result.missing
        for name, error in [item for item in result.failed if item[0] not in missing][:5]:
            log.warning("node %s could not fetch %s: %s", dst, name, error)
        done = [ref for ref, _ in files if ref.name in fetched]
        self.db.add_locations(dst, done, self.targets)
        for ref in done:
            self.failures.pop((ref.kind, ref.name), None)
        self._forget_sources([(ref, src) for ref, src in files if ref.name in missing])
        self._failed((ref.kind, ref.name) for ref, _ in files if ref.name not in fetched | missing)
        return len(done), len(files) - len(done)

    def _forget_sources(self, gone: list[tuple[FileRef, str]]) -> None:
        """Forget copies their node says it does not hold (the master's record was wrong)."""
        by_source: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for ref, src in gone:
            by_source[src].append((ref.kind, ref.name))
        for src, keys in by_source.items():
            self._forget(src, keys)

    def _forget(self, node: str, keys: list[tuple[str, str]]) -> None:
        """Forget copies a node said it does not hold; the files are looked at again."""
        log.warning(
            "node %s does not hold %d files recorded on it (%s %s, ...): copies forgotten",
            node,
            len(keys),
            *keys[0],
        )
        self.db.remove_locations(node, keys)

    async def merge(self, pairs: list[tuple[str, str, str]]) -> tuple[list[tuple[str, str]], int]:
        """For each (structure name, node, active node), append to the active copy the records
        of the node's copy it lacks. Returns the (name, node) pairs merged and the records added."""
        merged: list[tuple[str, str]] = []
        added = 0
        async with aiohttp.ClientSession(timeout=MERGE_TIMEOUT) as session:
            for name, node, active in pairs:
                source, target = self.members.address(node), self.members.address(active)
                try:
                    added += await merge_copy(session, self.token, name, source, target)
                except (*NETWORK_ERRORS, ValueError, KeyError) as exc:
                    log.warning(
                        "could not merge structure %s from %s into %s: %s", name, node, active, exc
                    )
                    continue
                merged.append((name, node))
        return merged, added

    async def delete(self, node: str, files: list[tuple[str, str]]) -> list[str]:
        """Have a node delete files; those it did not delete are looked at again, and those it
        does not hold are forgotten there (a delete asked again would fail again, forever)."""
        peer = self.members.links.get(node)
        if not files:
            return []
        deleted: set[str] = set()
        missing: set[str] = set()
        if peer is not None:
            order = DeleteOrder(tuple(NodeFile(kind, name) for kind, name in files))
            try:
                answer = await DELETE.call(peer, order, timeout=CALL_TIMEOUT)
                deleted, missing = set(answer.deleted), set(answer.missing) - set(answer.deleted)
            except (HipError, RemoteError) as exc:
                log.warning("node %s could not delete %d files: %s", node, len(files), exc)
        self.db.remove_locations(node, [(k, n) for k, n in files if n in deleted])
        if gone := [(k, n) for k, n in files if n in missing]:
            self._forget(node, gone)
        self.db.mark((k, n) for k, n in files if n not in deleted | missing)
        return list(deleted)


@dataclass(eq=False, repr=False)
class Repairer:
    """The passes that bring files back to target; run whenever the cluster changes."""

    db: MasterDB
    members: Membership
    copier: Copier
    unreliable_extra: int
    rate: InitVar[float]
    full_scan_every: float
    throttle: Throttle = field(init=False)
    stats: RepairStats = field(init=False, default_factory=RepairStats)
    next_full_scan: float = field(init=False, default=0.0)
    next_scan_step: float = field(init=False, default=0.0)
    # Where the full scan is (the key of the next file it looks at), None between scans:
    # kept in the database, so that a restarted master goes on from there.
    scan_at: int | None = field(init=False)
    scan_marked: int = field(init=False, default=0)
    # The nodes files were readable from and could be copied to when the files below target
    # were last looked at: their causes change with these.
    view: tuple[frozenset[str], frozenset[str]] | None = field(init=False, default=None)
    # Files below target that found no readable source (a holder may come back within its
    # grace period) or no node to take a copy; None when there were too many to keep.
    unplaced: set[tuple[str, str]] | None = field(init=False, default_factory=set)
    # When each file recently added to a node was first heard of, oldest first.
    young: dict[tuple[str, str], float] = field(init=False, default_factory=dict)
    # Files left for later because they were young, and when to look at them again.
    deferred: dict[tuple[str, str], float] = field(init=False, default_factory=dict)

    def __post_init__(self, rate: float) -> None:
        self.throttle = Throttle(rate)
        position = self.db.get_meta(SCAN_META)
        self.scan_at = position if isinstance(position, int) else None

    def heard_of(self, files: Iterable[tuple[str, str]]) -> None:
        """Note files a node just reported added (NEW_FILE_SETTLE)."""
        now = time.monotonic()
        for key in files:
            self.young.setdefault(key, now)
        while self.young:
            oldest = next(iter(self.young))
            if now - self.young[oldest] < NEW_FILE_SETTLE:
                break
            del self.young[oldest]

    async def run_pass(self) -> bool:
        """One round of every kind of work; True when it did something or left marked files
        (run again soon). While the view of who holds what is incomplete, nothing is copied or
        trimmed: a copy that is only missing from the view would be made, then trimmed again."""
        if self.members.settling():
            worked = await self.drain()
            worked = await self.merge_diverged() or worked
            return await self.refresh_structures() or worked
        self.mark_again()
        await self.scan_step()
        needy, more = self.review()
        worked = await self.copy_short(needy)
        worked = await self.drain() or worked
        worked = await self.merge_diverged() or worked
        worked = await self.refresh_structures() or worked
        if not worked and not self.members.in_grace():
            worked = await self.trim()
        return worked or more

    def mark_again(self) -> None:
        """A full scan at start-up, every `full_scan_every` seconds and when more nodes may hold
        replicas, a step a pass; the files that could not be placed when a node joined or changed
        state; every file below target when the nodes it may be read from or copied to changed."""
        now = time.monotonic()
        widened = self.members.widened
        self.members.widened = False
        if self.members.rescan or now >= self.next_full_scan or (widened and self.unplaced is None):
            self.members.rescan = False
            self.next_full_scan = now + self.full_scan_every
            self.unplaced = set()
            if self.scan_at is None:
                self.scan_at = FIRST_ID
        elif widened and self.unplaced:
            self.db.mark(self.unplaced)
            self.unplaced = set()
        view = (
            frozenset(self.members.readable()),
            frozenset(row.id for row in self.members.receivers()),
        )
        if view != self.view:
            self.view = view
            self.db.mark_short()
        due = [key for key, when in self.deferred.items() if when <= now]
        if due:
            self.db.mark(due)
            for key in due:
                del self.deferred[key]
        if waited := self.copier.due(now):
            self.db.mark(waited)

    async def scan_step(self) -> None:
        """A step of the full scan under way, if one is and its time has come: its reading runs
        in a thread."""
        now = time.monotonic()
        if self.scan_at is None or now < self.next_scan_step:
            return
        self.next_scan_step = now + SCAN_STEP_EVERY
        found, self.scan_at = await asyncio.to_thread(
            self.db.scan,
            self.members.counting(),
            self.members.usable(),
            self.unreliable_extra,
            self.scan_at,
            SCAN_STEP,
        )
        self.db.mark(found)
        self.scan_marked += len(found)
        self.db.set_meta(SCAN_META, self.scan_at)
        if self.scan_at is None:
            self.stats.full_scans += 1
            if self.scan_marked:
                log.info(
                    "full scan: %d more files below or above target to look at", self.scan_marked
                )
            self.scan_marked = 0

    def review(self) -> tuple[list[Needy], bool]:
        """The marked files below target, most endangered first, and whether more are marked;
        which are below target and why, and which above target, are recorded (the latter for
        the trim step)."""
        files = self.db.take_marked(EXAMINE)
        more = self.db.any_marked() or bool(self.deferred)
        self.stats.examined += len(files)
        self.stats.examined_last_pass = len(files)
        counting = set(self.members.counting())
        readable = set(self.members.readable())
        receivers = {row.id for row in self.members.receivers()}
        usable = self.members.usable()
        needy: list[Needy] = []
        short: list[Problem] = []
        not_short: list[tuple[str, str]] = []
        over: list[tuple[str, str]] = []
        not_over: list[tuple[str, str]] = []
        for ref in files:
            key = (ref.kind, ref.name)
            counted = [h for h in ref.holders if h in counting]
            have = len(counted)
            (over if have > ref.target else not_over).append(key)
            want = self._want(ref, counted, usable)
            if have >= want:
                not_short.append(key)
                continue
            found = Needy(ref.kind, ref.name, ref.size, have, want, ref.holders)
            cause = found.cause(readable, receivers)
            short.append(Problem(ref.kind, ref.name, have, want, ref.size, cause))
            if not self._settling(key, have):
                needy.append(found)
        self.db.record_review(short, not_short, over, not_over)
        needy.sort(key=lambda n: (n.have, n.kind != "structure", n.size))
        return needy, more

    def _settling(self, key: tuple[str, str], have: int) -> bool:
        """Whether a file below target is young and held somewhere: it is then looked at again
        once the reports of its other copies had the time to arrive."""
        first = self.young.get(key)
        if first is None or have == 0 or time.monotonic() - first >= NEW_FILE_SETTLE:
            return False
        self.deferred[key] = first + NEW_FILE_SETTLE
        return True

    def _want(self, ref: Replicas, counted: list[str], usable: int) -> int:
        """Its target, `unreliable_extra` more when none of its counted replicas is on a reliable
        node, never more than `usable`, the nodes whose copies count."""
        reliable = any(self.members.rows[h].reliability != "low" for h in counted)
        return min(ref.target + (0 if reliable else self.unreliable_extra), usable)

    def _unplaced(self, key: tuple[str, str]) -> None:
        if self.unplaced is not None:
            self.unplaced.add(key)
            if len(self.unplaced) > UNPLACED_MAX:
                self.unplaced = None

    async def copy_short(self, needy: list[Needy]) -> bool:
        counting = self.members.counting()
        receivers = self.members.receivers()
        readable = set(self.members.readable())
        plans: dict[str, list[tuple[FileRef, str]]] = defaultdict(list)
        planned: dict[str, int] = Counter()
        for item in needy:
            key = (item.kind, item.name)
            if key in self.copier.busy or key in self.copier.retry_at:
                continue  # marked again when that work ends, or its wait after a failure
            source = self.copier.source_for(item.kind, item.name, item.holders, readable)
            if source is None:
                # A down holder marks its files when it returns; one within grace does not.
                if any(self._in_grace(h) for h in item.holders):
                    self._unplaced(key)
                continue
            holders = set(item.holders)
            domains = {self.members.rows[h].domain for h in holders if h in counting}
            for _ in range(item.want - item.have):
                dst = choose_node(receivers, item.name, holders, domains, planned)
                if dst is None:
                    self._unplaced(key)
                    break
                holders.add(dst.id)
                domains.add(dst.domain)
                plans[dst.id].append((FileRef(item.kind, item.name, item.size), source))
                planned[dst.id] += item.size
                self.copier.busy.add(key)
        if not plans:
            return False
        await asyncio.gather(*(self._copy(dst, batch) for dst, batch in plans.items()))
        return True

    async def _copy(self, dst: str, batch: list[tuple[FileRef, str]]) -> None:
        try:
            for start in range(0, len(batch), BATCH):
                part = batch[start : start + BATCH]
                await self.throttle.take(len(part))
                self.stats.running += len(part)
                try:
                    copied, failed = await self.copier.fetch(dst, part)
                finally:
                    self.stats.running -= len(part)
                self.stats.copied += copied
                self.stats.failed += failed
        finally:
            self.copier.release((ref.kind, ref.name) for ref, _ in batch)

    def _in_grace(self, node: str) -> bool:
        """Whether a holder that serves no reads is lost for less than its grace period."""
        row = self.members.rows.get(node)
        return row is not None and row.state in ADMIN_STATES

    async def drain(self) -> bool:
        """Delete from draining nodes the files that now have their target elsewhere."""
        worked = False
        counting = set(self.members.counting())
        usable = self.members.usable()
        for node, row in list(self.members.rows.items()):
            if row.state != "draining" or not self.members.connected(node):
                continue
            files = self.db.files_on(node, BATCH * 4)
            targets = self.db.targets_of((f.kind, f.name) for f in files)
            # An active copy whose replicas lack its last records (not refreshed yet) stays
            # until they have them: the copy made active instead would lack them for good.
            dirty = self.db.dirty_among([f.name for f in files if f.kind == "structure"])
            removable = []
            for ref in files:
                holders = self.db.holders(ref.kind, ref.name)
                elsewhere = [h for h in holders if h in counting and h != node]
                wanted = min(targets.get((ref.kind, ref.name), 1), max(usable, 1))
                if ref.kind == "structure" and node in self.db.diverged_on(ref.name):
                    continue  # its records are merged into the active copy first
                if len(elsewhere) >= wanted:
                    if ref.kind == "structure" and self.db.active_node(ref.name) == node:
                        if ref.name in dirty or (ref.kind, ref.name) in self.copier.busy:
                            continue
                        self.db.set_active([(ref.name, elsewhere[0])])
                    removable.append((ref.kind, ref.name))
            if removable:
                deleted = await self.copier.delete(node, removable)
                self.stats.deleted += len(deleted)
                worked = worked or bool(deleted)
        return worked

    async def trim(self) -> bool:
        """Remove copies above target, from the fullest holders, never the active structure copy."""
        counting = set(self.members.counting())
        readable = set(self.members.readable())
        deletions: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for ref in self.db.take_over_target(BATCH):
            extra = sum(1 for h in ref.holders if h in counting) - ref.target
            if extra <= 0 or (ref.kind, ref.name) in self.copier.busy:
                continue
            keep = set()
            if ref.kind == "structure":
                keep = {self.db.active_node(ref.name)} | self.db.diverged_on(ref.name)
            candidates = [h for h in ref.holders if h in readable and h not in keep]
            candidates.sort(key=lambda h: self.members.rows[h].free)
            for node in candidates[:extra]:
                deletions[node].append((ref.kind, ref.name))
        if not deletions:
            return False
        results = await asyncio.gather(
            *(self.copier.delete(node, files) for node, files in deletions.items())
        )
        self.stats.deleted += sum(len(r) for r in results)
        return any(results)

    async def merge_diverged(self) -> bool:
        """Merge the copies that may have diverged from the active copy, now that their nodes
        are readable again, into the active copy; the refresh then copies the union over them."""
        readable = set(self.members.readable())
        pairs = self.db.diverged(BATCH, sorted(readable))
        if not pairs:
            return False
        to_merge: list[tuple[str, str, str]] = []
        settled: list[tuple[str, str]] = []
        for name, node in pairs:
            active = self.db.active_node(name)
            if active is None or active == node:
                settled.append((name, node))  # it is the copy the others are refreshed from
            elif active in readable:
                to_merge.append((name, node, active))
        merged, added = await self.copier.merge(to_merge)
        self.stats.merged += added
        done = settled + merged
        self.db.mark_dirty(name for name, _ in done)
        self.db.settle_diverged(done)
        return bool(done)

    async def refresh_structures(self) -> bool:
        """Copy the active copy of structure files that changed over their replicas. A file's
        mark is cleared once every copy planned was made (not before: a master that dies while
        they are made refreshes them when it is back) and no change came meanwhile."""
        names = self.db.dirty(BATCH)
        if not names:
            return False
        marks = self.db.dirty_marks(names)
        readable = set(self.members.readable())
        plans: dict[str, list[tuple[FileRef, str]]] = defaultdict(list)
        settled: list[str] = []
        missed: list[tuple[str, str]] = []
        actives = self.db.active_nodes(names)
        diverged = self.db.diverged_on_many(names)
        holders_of = self.db.holders_of("structure", names)
        for name in names:
            active = actives.get(name)
            if active is None or active not in readable:
                if active is not None:
                    # Its replicas are refreshed when it is back (see merge_diverged).
                    missed.append((name, active))
                settled.append(name)
                continue
            waiting = diverged.get(name, set())
            holders = holders_of[name]
            # A copy on its way is refreshed too (an unreadable node's fails anyway).
            arriving = self.copier.arriving.get(name, set()) - {active, *holders}
            replicas = [h for h in holders if h != active]
            replicas += sorted(node for node in arriving if node in readable)
            for node in replicas:
                if node in waiting:
                    continue  # overwritten once its records are merged into the active copy
                if node in readable:
                    plans[node].append((FileRef("structure", name, 0), active))
                else:
                    missed.append((name, node))
            settled.append(name)
        self.db.add_diverged(missed)
        copying = {ref.name for batch in plans.values() for ref, _ in batch}
        self.db.clean(name for name in settled if name not in copying)
        # Counted as running, so that /status shows the copies are not all fresh yet.
        copies = sum(len(batch) for batch in plans.values())
        self.stats.running += copies
        try:
            results = await asyncio.gather(
                *(self.copier.fetch(node, batch) for node, batch in plans.items())
            )
        finally:
            self.stats.running -= copies
        unfinished: set[str] = set()
        for batch, (copied, failed) in zip(plans.values(), results, strict=True):
            self.stats.refreshed += copied
            if failed:
                unfinished.update(ref.name for ref, _ in batch)
        finished = copying - unfinished
        self.db.clean(finished, marks)
        # Refreshes that failed (a node out of space refuses them) wait for the next pass
        # instead of being retried at once.
        return bool(finished)
