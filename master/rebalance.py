"""Rebalancing: a plan of moves that evens out how full the nodes are, applied throttled.

The plan is shown before anything moves. Applying it stores every move in the master's database
and carries them out in batches (copy to the destination, then delete from the source), so a
restarted master resumes where it stopped and an admin can stop it at any time.
"""

import asyncio
import contextlib
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from archive.master_answers import MoveProgress, MoveSummary, Rebalance, RebalancePlan

from .db import FileRef, MasterDB, Move, NodeRow
from .membership import Membership
from .repair import BATCH, Copier, Throttle

log = logging.getLogger(__name__)

TOLERANCE = 0.10
MIN_EXCESS_BYTES = 4 * 1024
DEFAULT_FILES_PER_S = 200.0
DEFAULT_BYTES_PER_S = 64.0 * 1024 * 1024


@dataclass(frozen=True)
class PlannedMove:
    kind: str
    name: str
    src: str
    dst: str
    size: int


def summarise(moves: list[PlannedMove] | list[Move]) -> tuple[MoveSummary, ...]:
    """Moves per source and destination, with files and bytes."""
    files: Counter[tuple[str, str]] = Counter()
    size: Counter[tuple[str, str]] = Counter()
    for move in moves:
        files[(move.src, move.dst)] += 1
        size[(move.src, move.dst)] += move.size
    return tuple(
        MoveSummary(src, dst, files[(src, dst)], size[(src, dst)]) for src, dst in sorted(files)
    )


@dataclass
class _Planning:
    """What a plan being made keeps track of: the bytes each node holds above its share, those
    each below its share lacks, and the nodes each file is planned to go to."""

    by_id: dict[str, NodeRow]
    excess: dict[str, float]
    deficit: dict[str, float]
    arriving: defaultdict[tuple[str, str], set[str]] = field(
        default_factory=lambda: defaultdict(set)
    )


class Rebalancer:
    def __init__(self, db: MasterDB, members: Membership, copier: Copier) -> None:
        self.db = db
        self.members = members
        self.copier = copier
        self.task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()

    @property
    def state(self) -> dict[str, Any]:
        saved = self.db.get_meta("rebalance")
        return saved if isinstance(saved, dict) else {"state": "idle"}

    def plan(self) -> list[PlannedMove]:
        """Moves from nodes holding more than their share of bytes to nodes holding less; a
        node read-only because its disk is full gives files and takes none."""
        nodes = [
            row
            for row in self.members.rows.values()
            if (row.state == "alive" or row.reason == "full") and self.members.connected(row.id)
        ]
        if len(nodes) < 2:
            return []
        totals = self.db.node_totals()
        held = {row.id: totals.get(row.id, (0, 0))[1] for row in nodes}
        capacity = {row.id: max(row.total, 1) for row in nodes}
        everything = sum(held.values())
        whole = sum(capacity.values())
        share = {node: everything * capacity[node] / whole for node in held}
        excess = {node: held[node] - share[node] for node in held}
        deficit = {node: -value for node, value in excess.items() if value < 0}
        moves: list[PlannedMove] = []
        # Nothing moves while every node is within the tolerance of its share; once one is not
        # (a new node far below, say), every node above its share gives towards it.
        if all(abs(excess[n]) <= max(MIN_EXCESS_BYTES, TOLERANCE * share[n]) for n in held):
            return []
        sources = sorted(
            (n for n, v in excess.items() if v > MIN_EXCESS_BYTES), key=lambda n: -excess[n]
        )
        planning = _Planning({row.id: row for row in nodes}, excess, deficit)
        for src in sources:
            moves.extend(self._moves_from(src, planning))
        return moves

    def _moves_from(self, src: str, planning: _Planning) -> list[PlannedMove]:
        """The moves that bring one source down to its share, its files read a batch at a time."""
        moves: list[PlannedMove] = []
        excess, deficit = planning.excess, planning.deficit
        after = ("", "")
        while excess[src] > 0:
            files = self.db.files_on(src, BATCH, after)
            if not files:
                break
            after = (files[-1].kind, files[-1].name)
            for ref in files:
                if excess[src] <= 0:
                    break
                # A move must shrink the gap: neither side may overshoot by more than half.
                if ref.size > 2 * excess[src]:
                    continue
                dst = self._destination(src, ref, planning)
                if dst is None:
                    continue
                moves.append(PlannedMove(ref.kind, ref.name, src, dst.id, ref.size))
                planning.arriving[(ref.kind, ref.name)].add(dst.id)
                excess[src] -= ref.size
                deficit[dst.id] -= ref.size
        return moves

    def _destination(self, src: str, ref: FileRef, planning: _Planning) -> NodeRow | None:
        """The node a file of `src` moves to, if one below its share can take it."""
        takers = [
            planning.by_id[n]
            for n, d in planning.deficit.items()
            if 2 * d >= ref.size and planning.by_id[n].state == "alive"
        ]
        # Holders as they will be once the moves planned so far are made: a file held on two
        # sources must not be sent to the same node by both.
        holders = set(self.db.holders(ref.kind, ref.name))
        holders |= planning.arriving[(ref.kind, ref.name)]
        domains = {
            self.members.rows[h].domain for h in holders if h != src and h in self.members.rows
        }
        # The node furthest below its share first (in a failure domain without a copy first):
        # a node that has just joined takes files before nodes a little under their share,
        # which hold more multicast groups.
        fresh = [row for row in takers if row.id not in holders]
        if not fresh:
            return None
        return min(fresh, key=lambda row: (row.domain in domains, -planning.deficit[row.id]))

    def progress(self) -> MoveProgress:
        """How far the stored moves are."""
        return MoveProgress(**self.db.move_progress())

    def report(self) -> Rebalance:
        """The running or stopped rebalance with its progress, or a fresh plan."""
        state = self.state
        if state.get("state") in ("running", "stopped"):
            pending = self.db.pending_moves(1_000_000)
            return Rebalance(**state, progress=self.progress(), moves=summarise(pending))
        moves = self.plan()
        plan = RebalancePlan(len(moves), sum(m.size for m in moves), summarise(moves))
        return Rebalance(**state, plan=plan)

    def apply(self, files_per_s: float, bytes_per_s: float) -> Rebalance:
        if self.task is not None and not self.task.done():
            return Rebalance(**self.state, progress=self.progress())
        moves = self.plan()
        self.db.replace_moves((m.kind, m.name, m.src, m.dst, m.size) for m in moves)
        state: dict[str, Any] = {
            "state": "running" if moves else "done",
            "files_per_s": files_per_s,
            "bytes_per_s": bytes_per_s,
        }
        self.db.set_meta("rebalance", state)
        log.info("rebalance of %d files applied", len(moves))
        if moves:
            self.start()
        return Rebalance(**state, progress=self.progress(), moves=summarise(moves))

    def stop(self) -> Rebalance:
        state = self.state
        if state.get("state") == "running":
            state["state"] = "stopped"
            self.db.set_meta("rebalance", state)
            log.info("rebalance stopped")
        if self.task is not None:
            self.task.cancel()
        return Rebalance(**state, progress=self.progress())

    def start(self) -> None:
        """Run the stored moves in the background (also after a master restart)."""
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run(), name="rebalance")

    async def _run(self) -> None:
        state = self.state
        throttle = Throttle(
            float(state.get("files_per_s", DEFAULT_FILES_PER_S)),
            float(state.get("bytes_per_s", DEFAULT_BYTES_PER_S)),
        )
        while self.state.get("state") == "running":
            pending = self.db.pending_moves(BATCH)
            if not pending:
                self.db.set_meta("rebalance", {**self.state, "state": "done"})
                log.info("rebalance done: %s", self.db.move_progress())
                return
            ready, skipped = self._sort(pending)
            self.db.finish_moves(skipped, outcome=2)
            if not ready:
                if not skipped:
                    await self._wait_for_nodes()
                continue
            for chunk_start in range(0, len(ready), 50):
                chunk = ready[chunk_start : chunk_start + 50]
                await throttle.take(len(chunk), sum(m.size for m in chunk))
                await self._move(chunk)

    def _sort(self, pending: list[Move]) -> tuple[list[Move], list[int]]:
        """Moves that can run now, and ids of moves no longer needed or possible."""
        ready, skipped = [], []
        for move in pending:
            src, dst = self.members.rows.get(move.src), self.members.rows.get(move.dst)
            holders = self.db.holders(move.kind, move.name)
            gone = (
                src is None
                or dst is None
                or src.state == "dead"
                or dst.state in ("dead", "draining", "read-only")
            )
            if gone or move.src not in holders or move.dst in holders:
                skipped.append(move.id)
            elif self.members.connected(move.src) and self.members.connected(move.dst):
                ready.append(move)
        return ready, skipped

    async def _wait_for_nodes(self) -> None:
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), 1.0)

    async def _move(self, moves: list[Move]) -> None:
        """Copy each file to its destination, then delete it from its source."""
        by_dst: dict[str, list[Move]] = defaultdict(list)
        for move in moves:
            by_dst[move.dst].append(move)
        for dst, group in by_dst.items():
            keys = [(m.kind, m.name) for m in group]
            self.copier.busy.update(keys)
            try:
                await self.copier.fetch(
                    dst, [(FileRef(m.kind, m.name, m.size), m.src) for m in group]
                )
                by_src: dict[str, list[Move]] = defaultdict(list)
                for move in group:
                    if dst in self.db.holders(move.kind, move.name):
                        by_src[move.src].append(move)
                for src, done in by_src.items():
                    for move in done:
                        if move.kind == "structure" and self.db.active_node(move.name) == src:
                            self.db.set_active([(move.name, dst)])
                    await self.copier.delete(src, [(m.kind, m.name) for m in done])
                    self.db.finish_moves([m.id for m in done])
            finally:
                self.copier.release(keys)
