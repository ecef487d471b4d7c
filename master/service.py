"""The master: HIP handlers for storage nodes and index nodes, and the loops that keep files safe."""

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass
from typing import Any

from archive.changes import Change
from archive.hip import Handler, HipError, HipMaster, Method, Nothing, Peer, RemoteError
from archive.index_calls import (
    CLUSTER_NODES,
    CONTENT_REFS,
    FEED_CHANGED,
    INDEX_JOIN,
    NODES_CHANGED,
    SEARCH_CHANGES,
    STRUCTURE_CHANGED,
    STRUCTURE_CLAIM,
    Claim,
    Claimed,
    ClusterNodes,
    ContentRefs,
    Done,
    FeedAsked,
    FeedChanges,
    FeedNote,
    IndexJoin,
    StructureChanges,
)
from archive.master_answers import ScrubDone
from archive.metadata import cluster_id
from archive.node_calls import (
    NODE_INVENTORY,
    NODE_JOIN,
    NODE_SCRUBBED,
    NODE_STATS,
    InventoryAnswer,
    JoinAnswer,
    NodeInventory,
    NodeJoin,
    NodeStats,
    ScrubReport,
)
from archive.server_options import ServerOptions

from .admin_answers import AdminAnswers
from .db import MasterDB
from .hip_params import joining_node, require_role
from .membership import Membership
from .policy import target_function
from .rebalance import Rebalancer
from .repair import Copier, Repairer
from .scrubs import Scrubs
from .structure_copies import StructureCopies

log = logging.getLogger(__name__)

PASS_GAP = 0.25
IDLE_PASS_EVERY = 2.0
# Notes to the change feed's followers, at most one per this many seconds.
FEED_NOTE_GAP = 0.2
# The calls of an inserting client, which reach the master only when no index node is there to
# redirect it to: whatever their params, they are answered no_index.
NO_INDEX = tuple(Method(name, Nothing, Nothing) for name in ("insert", "stored"))


@dataclass(frozen=True)
class MasterOptions(ServerOptions):
    # The metadata URL (archive.metadata); None for the SQLite file in `data`.
    metadata: str | None = None
    grace: float = 30.0
    dead_after: float = 7 * 86400.0
    repair_rate: float = 20_000.0
    scrub_every: float = 7 * 86400.0
    full_scan_every: float = 300.0


class Master:
    def __init__(self, options: MasterOptions) -> None:
        self.options = options
        config = options.config
        self.db = MasterDB(
            options.metadata or options.data / "master.db", cluster_id(config.name, config.secret)
        )
        self.targets = target_function(config.replication)
        self.db.retarget(self.targets)
        self.wake = asyncio.Event()
        self.nodes_changed = asyncio.Event()
        self.structures_changed = asyncio.Event()
        self.members = Membership(self.db, options.grace, options.dead_after, self._changed)
        self.copier = Copier(self.db, self.members, self.targets, config.write_token)
        self.repairer = Repairer(
            self.db,
            self.members,
            self.copier,
            config.replication.unreliable_extra,
            options.repair_rate,
            options.full_scan_every,
        )
        self.rebalancer = Rebalancer(self.db, self.members, self.copier)
        self.copies = StructureCopies(self.db, self.members, self.targets, config.replication)
        self.scrubs = Scrubs(self.db, self.members, options.scrub_every)
        # The address each connected index node serves clients at, by its name.
        self.index_nodes: dict[str, str] = {}
        self.admin = AdminAnswers(
            config,
            self.db,
            self.members,
            self.repairer,
            self.rebalancer,
            self.scrubs,
            self.index_nodes,
        )
        self._turn = itertools.count()
        self.handlers: dict[str, Handler] = {
            NODE_JOIN.name: NODE_JOIN.handler(self._on_node_join),
            NODE_INVENTORY.name: NODE_INVENTORY.handler(self._on_node_inventory),
            NODE_STATS.name: NODE_STATS.handler(self._on_node_stats),
            NODE_SCRUBBED.name: NODE_SCRUBBED.handler(self._on_node_scrubbed),
            INDEX_JOIN.name: INDEX_JOIN.handler(self._on_index_join),
            CLUSTER_NODES.name: CLUSTER_NODES.handler(self._on_cluster_nodes),
            STRUCTURE_CLAIM.name: STRUCTURE_CLAIM.handler(self._on_structure_claim),
            # Decoded by the handler itself, which ignores rather than refuses a bad one.
            STRUCTURE_CHANGED.name: self._structure_changed,
            CONTENT_REFS.name: CONTENT_REFS.handler(self._on_content_refs),
            SEARCH_CHANGES.name: SEARCH_CHANGES.handler(self._on_search_changes),
            **{method.name: method.handler(self._no_index) for method in NO_INDEX},
        }
        self.hip = HipMaster(
            config.secret,
            "master",
            self.handlers,
            on_disconnect=self._on_disconnect,
            redirect=self._redirect,
        )
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self.members.start()
        self._tasks = [
            asyncio.create_task(self._repair_loop(), name="repair"),
            asyncio.create_task(self._clock(), name="clock"),
            asyncio.create_task(self._tell_index_nodes(), name="node changes"),
            asyncio.create_task(self._tell_followers(), name="structure changes"),
        ]
        self.wake.set()
        if self.rebalancer.state.get("state") == "running":
            log.info("resuming the rebalance that was running")
            self.rebalancer.start()

    async def stop(self) -> None:
        """Stop the loops and close every HIP connection; the database stays open for
        requests still being answered."""
        tasks = [*self._tasks]
        if self.rebalancer.task is not None:
            tasks.append(self.rebalancer.task)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.hip.close()

    def close(self) -> None:
        self.db.close()

    def _changed(self) -> None:
        """A node or what it holds changed: the repair pass and the rebalance look again, and
        the index nodes are told."""
        self.wake.set()
        self.rebalancer.changed.set()
        self.nodes_changed.set()

    # -- loops ----------------------------------------------------------------------------------

    async def _tell_index_nodes(self) -> None:
        """Tell the index nodes the node list changed, once for each burst of changes, so that
        a node that joined or stopped taking writes is placed on or avoided at once rather than
        at their next refresh."""
        while True:
            await self.nodes_changed.wait()
            self.nodes_changed.clear()
            for name in list(self.index_nodes):
                peer = self.hip.slaves.get(name)
                if peer is None:
                    continue
                try:
                    await NODES_CHANGED.notify(peer, Nothing())
                except HipError as exc:
                    log.warning("could not tell index node %s the nodes changed: %s", name, exc)

    async def _tell_followers(self) -> None:
        """Tell the followers of the change feed (search indexers) there are new changes, at
        most every FEED_NOTE_GAP s: a burst of inserts is one note, and each follower then asks
        for every change since its last."""
        while True:
            await self.structures_changed.wait()
            self.structures_changed.clear()
            last = self.db.last_change()
            for peer in list(self.hip.slaves.values()):
                if peer.role != "search":
                    continue
                try:
                    await FEED_CHANGED.notify(peer, FeedNote(last))
                except HipError as exc:
                    log.warning("could not tell %s of changed structure files: %s", peer.name, exc)
            await asyncio.sleep(FEED_NOTE_GAP)

    async def _repair_loop(self) -> None:
        """A pass whenever something changed, at most every PASS_GAP seconds while idle, so a
        stream of inventory entries is looked at in batches rather than a few files a pass."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), IDLE_PASS_EVERY)
            self.wake.clear()
            try:
                if await self.repairer.run_pass():
                    self.wake.set()
                    continue
            except Exception:
                log.exception("repair pass failed; trying again")
            await asyncio.sleep(PASS_GAP)

    async def _clock(self) -> None:
        """Membership's timeouts, and the scrubs that fall due."""
        while True:
            await asyncio.sleep(0.2)
            self.members.tick()
            if self.options.scrub_every > 0:
                await self.scrubs.start_due()

    # -- HIP: connections -----------------------------------------------------------------------

    def _redirect(self, name: str, role: str) -> str | None:
        """Inserting clients go to an index node, in turn."""
        if role != "client" or not self.index_nodes:
            return None
        addresses = sorted(self.index_nodes.values())
        return addresses[next(self._turn) % len(addresses)]

    async def _on_disconnect(self, peer: Peer) -> None:
        if peer.role == "storage":
            self.members.leave(peer)
        elif peer.role == "index":
            self.index_nodes.pop(peer.name, None)

    async def _no_index(self, peer: Peer, params: Nothing) -> Nothing:
        """A client reaches the master itself only when no index node was there to redirect it."""
        raise RemoteError(
            "no_index", "no index node is connected to the master; start one (dlweb index-node)"
        )

    # -- HIP: the calls as HIP hands them over, raw params in and raw answer out -----------------

    async def _node_join(self, peer: Peer, params: Any) -> Any:
        return await self.handlers[NODE_JOIN.name](peer, params)

    async def _node_inventory(self, peer: Peer, params: Any) -> Any:
        return await self.handlers[NODE_INVENTORY.name](peer, params)

    async def _node_scrubbed(self, peer: Peer, params: Any) -> Any:
        return await self.handlers[NODE_SCRUBBED.name](peer, params)

    async def _structure_claim(self, peer: Peer, params: Any) -> Any:
        return await self.handlers[STRUCTURE_CLAIM.name](peer, params)

    async def _search_changes(self, peer: Peer, params: Any) -> Any:
        return await self.handlers[SEARCH_CHANGES.name](peer, params)

    async def _structure_changed(self, peer: Peer, params: Any) -> Any:
        """structure.changed from anyone but an index node, or with params it cannot take, is
        ignored (logged), not refused: an index node keeps the changes a master refuses and
        tells them again, failing every insert meanwhile."""
        if peer.role != "index":
            return Done().to_json()
        try:
            changes = StructureChanges.from_json(params, STRUCTURE_CHANGED.name)
        except RemoteError as exc:
            log.warning("ignored structure.changed from %s: %s", peer.name, exc.message)
            return Done().to_json()
        return (await self._on_structure_changed(peer, changes)).to_json()

    # -- HIP: storage nodes ---------------------------------------------------------------------

    async def _on_node_join(self, peer: Peer, joining: NodeJoin) -> JoinAnswer:
        require_role(peer, "storage", NODE_JOIN.name)
        row, seq = joining_node(peer, joining), joining.seq
        known = self.members.rows.get(row.id)
        if known is not None and seq < known.seq:
            log.warning(
                "node %s is at inventory %d, behind the %d stored: reading it again from 0",
                row.id,
                seq,
                known.seq,
            )
            self.db.forget_locations(row.id)
            known.seq = 0
        row = self.members.join(peer, row, seq)
        await self.copies.joined(row.id, row.seq)
        return JoinAnswer(row.seq, row.state)

    async def _on_node_inventory(self, peer: Peer, batch: NodeInventory) -> InventoryAnswer:
        require_role(peer, "storage", NODE_INVENTORY.name)
        entries, seq = batch.entries, batch.seq
        row = self.members.rows.get(peer.name)
        if row is None or self.members.links.get(peer.name) is not peer:
            raise RemoteError("not_joined", "call node.join first")
        self.db.apply_inventory(peer.name, entries, seq, self.targets)
        self.repairer.heard_of((e["kind"], e["name"]) for e in entries if e["op"] == "add")
        removed = [e["name"] for e in entries if e["op"] == "remove" and e["kind"] == "structure"]
        self.copies.active_lost(peer.name, removed)
        self.copies.unheard_copies(peer.name, entries)
        row.seq = seq
        self._changed()
        return InventoryAnswer(seq)

    async def _on_node_stats(self, peer: Peer, stats: NodeStats) -> Nothing:
        row = self.members.rows.get(peer.name)
        if peer.role != "storage" or row is None:
            return Nothing()
        for key, value in (
            ("free", stats.free),
            ("total", stats.total),
            ("reserve", stats.reserve),
        ):
            if value is not None:
                setattr(row, key, value)
        if stats.groups is not None:
            row.groups = list(stats.groups)
        row.last_seen = time.time()
        if stats.full is not None and self.members.links.get(peer.name) is peer:
            self.members.set_full(peer.name, stats.full)
        return Nothing()

    async def _on_node_scrubbed(self, peer: Peer, report: ScrubReport) -> Nothing:
        if peer.role != "storage":
            return Nothing()
        bad = report.bad
        self.scrubs.reports[peer.name] = ScrubDone(time.time(), report.checked, len(bad))
        if bad:
            log.warning("scrub of %s found %d bad files; repairing them", peer.name, len(bad))
            self.db.remove_locations(peer.name, [(b["kind"], b["name"]) for b in bad])
            self.copies.active_lost(peer.name, [b["name"] for b in bad if b["kind"] == "structure"])
            self._changed()
        return Nothing()

    # -- HIP: index nodes -----------------------------------------------------------------------

    async def _on_index_join(self, peer: Peer, joining: IndexJoin) -> Done:
        require_role(peer, "index", INDEX_JOIN.name)
        self.index_nodes[peer.name] = joining.address
        log.info("index node %s serves clients at %s", peer.name, joining.address)
        return Done()

    async def _on_search_changes(self, peer: Peer, asked: FeedAsked) -> FeedChanges:
        """The change feed of structure files, for a search indexer."""
        require_role(peer, "search", SEARCH_CHANGES.name)
        changes = [
            Change(name, seq) for name, seq in self.db.changes_after(asked.after, asked.limit)
        ]
        return FeedChanges(changes, self.db.last_change(), self.db.feed)

    async def _on_cluster_nodes(self, peer: Peer, params: Nothing) -> ClusterNodes:
        nodes = [
            {**row.to_json(), "state": self.members.public_state(row)}
            for row in self.members.rows.values()
        ]
        return ClusterNodes(nodes, self.options.config.replication.to_json())

    async def _on_structure_claim(self, peer: Peer, claim: Claim) -> Claimed:
        require_role(peer, "index", STRUCTURE_CLAIM.name)
        return self.copies.claim(claim.names)

    async def _on_structure_changed(self, peer: Peer, changes: StructureChanges) -> Done:
        """Record that structure files changed and tell the nodes of their other copies; the
        answer says both are done (an index node acknowledges no insert before)."""
        names = changes.names
        # Marked dirty at once (a drain then keeps their active copies), and the pass woken once
        # the replicas' nodes were told, so that the order replacing a copy comes after its
        # notice (a pass woken otherwise meanwhile can refresh a copy before its notice: it then
        # answers late, though fresh, until the next refresh or append).
        self.copies.record_appended(self.copies.appended(changes.copies))
        self.db.mark_dirty(names)
        self.db.record_changes(names)
        self.structures_changed.set()
        try:
            await self.copies.tell_stale(names)
        finally:
            self.wake.set()
        return Done()

    async def _on_content_refs(self, peer: Peer, refs: ContentRefs) -> Nothing:
        if peer.role == "index" and refs.refs:
            self.db.set_refs(refs.refs, self.targets)
            self.wake.set()
        return Nothing()
