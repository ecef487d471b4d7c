"""What the master's HTTP interface answers: the cluster's status, fsck reports, the readable
holders of files, and an admin's change of a node's state."""

import time
from dataclasses import dataclass, field
from typing import Any

from archive.config import ClusterConfig
from archive.errors import ClientFault, NotFound

from .db import NO_READABLE_COPY, MasterDB
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

    def status(self) -> dict[str, Any]:
        totals = self.db.node_totals()
        nodes = []
        for row in self.members.rows.values():
            files, size = totals.get(row.id, (0, 0))
            nodes.append(
                {
                    **row.to_json(),
                    "state": self.members.public_state(row),
                    "connected": self.members.connected(row.id),
                    "files": files,
                    "bytes": size,
                    "scrub": self.scrubs.reports.get(row.id),
                    **({"drained": files == 0} if row.state == "draining" else {}),
                }
            )
        causes = self.db.short_counts()
        rebalance = self.rebalancer.state
        if rebalance.get("state") in ("running", "stopped", "done"):
            rebalance = {**rebalance, "progress": self.db.move_progress()}
        return {
            "cluster": self.config.name,
            "uptime": round(time.time() - self.started, 1),
            "nodes": nodes,
            "index_nodes": sorted(self.index_nodes.values()),
            "files": self.db.file_counts(),
            "below_target": sum(causes.values()),
            "lost": causes[NO_READABLE_COPY],
            "below_target_causes": causes,
            "placing": self._placing(),
            "structures_dirty": self.db.count_dirty(),
            "structures_diverged": self.db.count_diverged(),
            "repairs": {
                **self.repairer.stats.to_json(),
                **self._to_check(),
                "retry_waiting": len(self.repairer.copier.retry_at),
            },
            "rebalance": rebalance,
            "replication": self.config.replication.to_json(),
            "metadata": self.db.storage(),
        }

    def _to_check(self) -> dict[str, Any]:
        """What the repair pass has yet to look at: the counts of files below target are as
        it last found them."""
        files, nodes = self.db.count_marked()
        return {"to_check": files, "nodes_to_check": nodes, "full_scan_at": self.repairer.scan_at}

    def _placing(self) -> dict[str, int]:
        """How many nodes take new files now, in how many failure domains: no file gets more
        copies than that (a file wanting more is below target and cannot be placed)."""
        receivers = self.members.receivers()
        return {"nodes": len(receivers), "domains": len({row.domain for row in receivers})}

    async def fsck(self, deep: bool = False, recount: bool = False) -> dict[str, Any]:
        """Files below target, by cause, and structure files without an active copy; with
        `deep`, also contents that no structure file names (it reads every structure file);
        with `recount`, the totals `status` shows checked against a full count and mended."""
        readable = self.members.readable()
        # The first problems, most endangered first; every one is listed by fsck_problems.
        problems = [problem.to_json() for problem in self.db.most_endangered(MAX_PROBLEMS)]
        causes = self.db.short_counts()
        without_active = self.db.structures_without_active(readable)
        report: dict[str, Any] = {
            "files": self.db.file_counts(),
            "below_target": sum(causes.values()),
            "lost": causes[NO_READABLE_COPY],
            "below_target_causes": causes,
            "placing": self._placing(),
            "orphans": None,
            "structures_without_active": without_active,
            "structures_dirty": self.db.count_dirty(),
            "repairs": self._to_check(),
            "ok": not problems and without_active == 0,
            "problems": problems,
            "totals_drift": self.db.recount(mend=True) if recount else None,
        }
        if deep:
            orphans = await find_orphans(self.db, self.members)
            report.update(orphans.to_json())
            report["ok"] = report["ok"] and not orphans.orphans and not orphans.unreadable
        return report

    def fsck_problems(self, after: tuple[str, str], limit: int) -> list[dict[str, Any]]:
        """The files below target in name order, the first `limit` after `after`."""
        return [problem.to_json() for problem in self.db.short_after(after, limit)]

    def locate(self, kind: str, name: str) -> list[dict[str, str]]:
        """The readable holders of one file."""
        return self._readable_holders(kind, [name])[name]

    def structures(self, after: str, limit: int) -> list[dict[str, Any]]:
        """A page of the structure files with their readable holders, for a full export."""
        names = self.db.structure_page(after, limit)
        holders = self._readable_holders("structure", names)
        return [{"name": name, "nodes": holders[name]} for name in names]

    def _readable_holders(self, kind: str, names: list[str]) -> dict[str, list[dict[str, str]]]:
        """The readable holders of files, a structure file's active copy first."""
        readable = set(self.members.readable())
        holders = (
            self.db.structure_holders(names)
            if kind == "structure"
            else self.db.holders_of(kind, names)
        )
        return {
            name: [
                {"id": node, "address": self.members.address(node)}
                for node in nodes
                if node in readable
            ]
            for name, nodes in holders.items()
        }

    def set_node_state(self, node: str, state: str) -> dict[str, Any]:
        """An admin's state for a node (alive, draining, read-only); the node's row after it."""
        if node not in self.members.rows:
            raise NotFound(f"no node {node[:100]!r} in this cluster")
        if state not in ADMIN_STATES:
            raise ClientFault(f"state must be one of {', '.join(ADMIN_STATES)}")
        return self.members.set_admin_state(node, state).to_json()
