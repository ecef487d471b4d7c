"""Where a structure file's records are: which copy is active (appends go there first), which
other copies lack records of it or hold records it lacks (merged into it before a refresh), and
the nodes told that their copy answers late until it is refreshed (docs/cluster.md, "merge")."""

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from archive.config import Replication
from archive.hip import HipError, RemoteError
from archive.index_calls import Appended, Claimed
from archive.node_calls import MAX_FILES, STALE, StaleCopies

from .db import FileRef, MasterDB, NodeRow, TargetFn
from .membership import Membership
from .policy import choose_node

log = logging.getLogger(__name__)

STALE_TIMEOUT = 5.0


@dataclass(eq=False, repr=False)
class StructureCopies:
    db: MasterDB
    members: Membership
    targets: TargetFn
    replication: Replication
    # Storage nodes that joined again with the inventory position this master had stored.
    returning: set[str] = field(init=False, default_factory=set)

    # -- active copies --------------------------------------------------------------------------

    def claim(self, names: list[str]) -> Claimed:
        """The node of each structure file's active copy (a new one is placed and recorded),
        and the nodes an append must also reach before an insert is acknowledged: the other
        readable holders, or for a new file, as many more placed nodes as the insert waits for
        copies."""
        readable = set(self.members.readable())
        receivers = self.members.receivers()
        chosen: dict[str, str] = {}
        new: list[tuple[str, str]] = []
        planned: dict[str, int] = {}
        diverged: list[tuple[str, str]] = []
        actives = self.db.active_nodes(names)
        # A full node takes no appends: its active copies move to another holder, and what
        # they hold is merged in there as from an unreachable active copy.
        appendable = {node for node in readable if not self.members.rows[node].full}
        for name, active in actives.items():
            if active in appendable:
                chosen[name] = active
        unanswered = [name for name in dict.fromkeys(names) if name not in chosen]
        holders_of = self.db.holders_of("structure", list(dict.fromkeys(names)))
        for name in unanswered:
            every = holders_of[name]
            holders = [h for h in every if h in appendable]
            holders.sort(key=lambda h: self.members.rows[h].state != "alive")
            if holders:
                chosen[name] = holders[0]
            else:
                row = choose_node(receivers, name, (), (), planned)
                if row is None:
                    raise RemoteError("no_node", "no storage node can take a new structure file")
                chosen[name] = row.id
                planned[row.id] = planned.get(row.id, 0) + 4096
            new.append((name, chosen[name]))
            # Every other copy may hold records the new active copy lacks: the unreachable
            # active copy its last appends, one more copy those of the write quorum, and a copy
            # made active on a node that held none lacks them all. Each is merged into the new
            # active copy before anything is refreshed over it.
            diverged.extend((name, holder) for holder in every if holder != chosen[name])
        replicas = self._replicas(chosen, holders_of, readable, receivers, planned)
        if diverged:
            self.db.add_diverged(diverged)
        if new:
            self.db.set_active(new)
        return Claimed(
            {name: self.members.address(node) for name, node in chosen.items()},
            {name: tuple(addresses) for name, addresses in replicas.items()},
        )

    def _replicas(
        self,
        chosen: dict[str, str],
        holders_of: dict[str, list[str]],
        readable: set[str],
        receivers: list[NodeRow],
        planned: dict[str, int],
    ) -> dict[str, list[str]]:
        """The addresses of the copies of each structure file beside its active one that an
        append reaches too: its readable holders, or nodes placed for a file no node holds."""
        wanted = self.replication.insert_copies - 1
        replicas: dict[str, list[str]] = {}
        if wanted <= 0:
            return replicas
        for name, active in chosen.items():
            others = [h for h in holders_of.get(name, []) if h != active and h in readable]
            if not holders_of.get(name):
                domains = {self.members.rows[active].domain}
                for _ in range(wanted):
                    row = choose_node(receivers, name, {active, *others}, domains, planned)
                    if row is None:
                        break
                    others.append(row.id)
                    domains.add(row.domain)
                    planned[row.id] = planned.get(row.id, 0) + 4096
            replicas[name] = [self.members.address(node) for node in others]
        return replicas

    def active_lost(self, node: str, names: list[str]) -> None:
        """A node no longer holds these structure files (its scrub found them bad, or they were
        removed otherwise): each that was its active copy gets another holder's copy as active,
        readable ones first, and the other holders' copies are merged into it, since any of them
        may hold records the new active copy lacks (the last appends reached the lost copy and
        one more copy)."""
        active = self.db.active_nodes(names)
        lost = [name for name in names if active.get(name) == node]
        if not lost:
            return
        readable = set(self.members.readable())
        moved: list[tuple[str, str]] = []
        diverged: list[tuple[str, str]] = []
        for name, holders in self.db.holders_of("structure", lost).items():
            others = sorted((h for h in holders if h != node), key=lambda h: h not in readable)
            if others:
                moved.append((name, others[0]))
                diverged.extend((name, other) for other in others[1:])
        if moved:
            log.warning(
                "%d active structure copies lost on %s: made active elsewhere", len(moved), node
            )
            self.db.set_active(moved)
            self.db.add_diverged(diverged)
            self.db.mark_dirty(name for name, _ in moved)

    # -- copies to merge ------------------------------------------------------------------------

    async def joined(self, node: str, since: int) -> None:
        """Note whether a node joined again from an inventory position this master had stored
        (its copies made meanwhile are looked for in what it sends), and tell it which of its
        copies wait to be merged."""
        if since > 0:
            self.returning.add(node)
        else:
            self.returning.discard(node)
        await self._tell_diverged(node)

    def unheard_copies(self, node: str, entries: list[dict[str, Any]]) -> None:
        """Structure copies a returning node made while this master could not hear of them (its
        inventory entries from before it joined): created just before the node was lost, or
        while it was cut off, such a copy may hold records the active copy lacks, and lacks those
        appended since, while no refresh knew of it. Unless it is the active copy, it is merged
        into the active copy, then refreshed. A node read from its first entry (new to this
        master, or its disk replaced) is left out: the first copy heard of is made active."""
        if node not in self.returning:
            return
        announced = self.members.announced.get(node, 0)
        names = list(
            dict.fromkeys(
                e["name"]
                for e in entries
                if e["op"] == "add"
                and e["kind"] == "structure"
                and isinstance(e.get("seq"), int)
                and e["seq"] <= announced
            )
        )
        if not names:
            return
        active = self.db.active_nodes(names)
        holders = self.db.holders_of("structure", names)
        diverged = [
            (name, node)
            for name in names
            if active.get(name, node) != node and node in holders[name]
        ]
        if diverged:
            log.info("%s made %d structure copies while away; merging them", node, len(diverged))
            self.db.add_diverged(diverged)

    def appended(self, copies: Mapping[str, Appended]) -> dict[str, tuple[set[str], set[str]]]:
        """The nodes an index node says each changed file's records were appended to: as its
        active copy, and as other copies; addresses of no known node are left out."""
        by_address = {row.address: node for node, row in self.members.rows.items()}
        return {
            name: (
                {by_address[a] for a in item.active if a in by_address},
                {by_address[a] for a in item.others if a in by_address},
            )
            for name, item in copies.items()
        }

    def record_appended(self, appended: dict[str, tuple[set[str], set[str]]]) -> None:
        """Record where an insert's records went. A copy they were appended to is held by its
        node now (a copy just created there is refreshed with the others). When the copy they
        were appended to as active is not the active copy (the index node appended to the copy
        it had cached, while this master made another one active), every copy that took them
        may hold records the active copy lacks: each is merged into it before it is refreshed."""
        active = self.db.active_nodes(list(appended))
        holders = self.db.holders_of("structure", list(appended))
        held: dict[str, list[FileRef]] = {}
        diverged: list[tuple[str, str]] = []
        for name, (as_active, others) in appended.items():
            current = active.get(name)
            took = (as_active | others) - {current}
            for node in took - set(holders.get(name, ())):
                held.setdefault(node, []).append(FileRef("structure", name, 0))
            if current is not None and as_active - {current}:
                diverged.extend((name, node) for node in sorted(took))
        for node, files in held.items():
            self.db.add_locations(node, files, self.targets)
        if diverged:
            log.info(
                "%d structure copies took records beside the active copy; merging them into it",
                len(diverged),
            )
            self.db.add_diverged(diverged)

    # -- stale copies ---------------------------------------------------------------------------

    async def tell_stale(self, names: list[str]) -> None:
        """Tell each node holding a copy of these structure files other than the active one that
        its copy lacks the records just appended: until the repair pass replaces it, it answers
        lookups late, so that readers take the active copy (docs/cluster.md)."""
        active = self.db.active_nodes(names)
        stale: dict[str, list[str]] = {}
        for name, holders in self.db.holders_of("structure", names).items():
            for node in holders:
                if name in active and node != active[name]:
                    stale.setdefault(node, []).append(name)
        await self._notify_all(stale)

    async def _tell_diverged(self, node: str) -> None:
        """Tell a node back in the cluster which of its structure copies wait to be merged into
        an active copy on another node: they lack what was appended while it was away."""
        names = self.db.diverged_names(node)
        active = self.db.active_nodes(names)
        await self._notify_all({node: [n for n in names if active.get(n, node) != node]})

    async def _notify_all(self, stale: dict[str, list[str]]) -> None:
        """Send each node its `stale` notifications, all at once, none waited for longer than
        STALE_TIMEOUT: a node that cannot take them answers on time until the refresh."""
        await asyncio.gather(*(self._notify(node, names) for node, names in stale.items()))

    async def _notify(self, node: str, names: list[str]) -> None:
        peer = self.members.links.get(node)
        if peer is None or not names:
            return
        try:
            async with asyncio.timeout(STALE_TIMEOUT):
                for start in range(0, len(names), MAX_FILES):
                    await STALE.notify(peer, StaleCopies(names[start : start + MAX_FILES]))
        except (HipError, TimeoutError) as exc:
            log.warning("could not tell %s of %d stale structure copies: %s", node, len(names), exc)
