"""What the master's HTTP interface answers: the cluster's status, fsck reports, the readable
holders of files, and an admin's change of a node's state."""

import time
from dataclasses import dataclass, field, fields, replace

from archive.config import ClusterConfig
from archive.errors import ClientFault, NotFound
from archive.master_answers import (
    BelowTarget,
    ClusterStatus,
    FileBelowTarget,
    FileCounts,
    FsckReport,
    Holder,
    Located,
    MetadataSize,
    NodeRecord,
    NodeStatus,
    Placing,
    Rebalance,
    Repairs,
    StructureHolders,
    StructurePage,
    ToCheck,
)

from .db import MasterDB
from .membership import ADMIN_STATES, Membership
from .orphans import find_orphans
from .rebalance import Rebalancer
from .repair import Repairer
from .scrubs import Scrubs

# Files below target an fsck report names (it counts them all).
MAX_PROBLEMS = 100


@dataclass(eq=False, repr=False)
class AdminAnswers:
    config: ClusterConfig
    db: MasterDB
    members: Membership
    repairer: Repairer
    rebalancer: Rebalancer
    scrubs: Scrubs
    # The address each connected index node serves clients at, by its name (the master's).
    index_nodes: dict[str, str]
    started: float = field(init=False, default_factory=time.time)

    def status(self) -> ClusterStatus:
        totals = self.db.node_totals()
        nodes = []
        for row in self.members.rows.values():
            files, size = totals.get(row.id, (0, 0))
            record = replace(row.record(), state=self.members.public_state(row))
            nodes.append(
                NodeStatus(
                    **{f.name: getattr(record, f.name) for f in fields(record)},
                    connected=self.members.connected(row.id),
                    files=files,
                    bytes=size,
                    scrub=self.scrubs.reports.get(row.id),
                    drained=(files == 0) if row.state == "draining" else None,
                )
            )
        causes = BelowTarget(**self.db.short_counts())
        rebalance = Rebalance(**self.rebalancer.state)
        if rebalance.state in ("running", "stopped", "done"):
            rebalance = replace(rebalance, progress=self.rebalancer.progress())
        return ClusterStatus(
            self.config.name,
            round(time.time() - self.started, 1),
            tuple(nodes),
            tuple(sorted(self.index_nodes.values())),
            FileCounts(**self.db.file_counts()),
            causes.total,
            causes.no_readable_copy,
            causes,
            self._placing(),
            self.db.count_dirty(),
            self.db.count_diverged(),
            Repairs(
                **self.repairer.stats.to_json(),
                **self._to_check().to_json(),
                retry_waiting=len(self.repairer.copier.retry_at),
            ),
            rebalance,
            self.config.replication.to_json(),
            MetadataSize(**self.db.storage()),
        )

    def _to_check(self) -> ToCheck:
        """What the repair pass has yet to look at: the counts of files below target are as
        it last found them."""
        files, nodes = self.db.count_marked()
        return ToCheck(files, nodes, self.repairer.scan_at)

    def _placing(self) -> Placing:
        """How many nodes take new files now, in how many failure domains: no file gets more
        copies than that (a file wanting more is below target and cannot be placed)."""
        receivers = self.members.receivers()
        return Placing(len(receivers), len({row.domain for row in receivers}))

    async def fsck(self, deep: bool = False, recount: bool = False) -> FsckReport:
        """Files below target, by cause, and structure files without an active copy; with
        `deep`, also contents that no structure file names (it reads every structure file);
        with `recount`, the totals `status` shows checked against a full count and mended."""
        readable = self.members.readable()
        # The first problems, most endangered first; every one is listed by fsck_problems.
        problems = tuple(problem.answer() for problem in self.db.most_endangered(MAX_PROBLEMS))
        causes = BelowTarget(**self.db.short_counts())
        without_active = self.db.structures_without_active(readable)
        report = FsckReport(
            FileCounts(**self.db.file_counts()),
            causes.total,
            causes.no_readable_copy,
            causes,
            self._placing(),
            None,
            without_active,
            self.db.count_dirty(),
            self._to_check(),
            not problems and without_active == 0,
            problems,
            self.db.recount(mend=True) if recount else None,
        )
        if deep:
            orphans = await find_orphans(self.db, self.members)
            ok = report.ok and not orphans.orphans and not orphans.unreadable
            report = replace(report, **orphans.to_json(), ok=ok)
        return report

    def fsck_problems(self, after: tuple[str, str], limit: int) -> list[FileBelowTarget]:
        """The files below target in name order, the first `limit` after `after`."""
        return [problem.answer() for problem in self.db.short_after(after, limit)]

    def locate(self, kind: str, name: str) -> Located:
        """The readable holders of one file."""
        return Located(kind, name, self._readable_holders(kind, [name])[name])

    def structures(self, after: str, limit: int) -> StructurePage:
        """A page of the structure files with their readable holders, for a full export."""
        names = self.db.structure_page(after, limit)
        holders = self._readable_holders("structure", names)
        return StructurePage(tuple(StructureHolders(name, holders[name]) for name in names))

    def _readable_holders(self, kind: str, names: list[str]) -> dict[str, tuple[Holder, ...]]:
        """The readable holders of files, a structure file's active copy first."""
        readable = set(self.members.readable())
        holders = (
            self.db.structure_holders(names)
            if kind == "structure"
            else self.db.holders_of(kind, names)
        )
        return {
            name: tuple(
                Holder(node, self.members.address(node)) for node in nodes if node in readable
            )
            for name, nodes in holders.items()
        }

    def set_node_state(self, node: str, state: str) -> NodeRecord:
        """An admin's state for a node (alive, draining, read-only); the node's row after it."""
        if node not in self.members.rows:
            raise NotFound(f"no node {node[:100]!r} in this cluster")
        if state not in ADMIN_STATES:
            raise ClientFault(f"state must be one of {', '.join(ADMIN_STATES)}")
        return self.members.set_admin_state(node, state).record()
