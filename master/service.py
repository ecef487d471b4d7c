"""The master: HIP handlers for storage nodes and index nodes, and the loops that keep files safe."""

import asyncio
import contextlib
import itertools
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive.changes import CHANGED_NOTE, CHANGES_METHOD, Change, Changes, ChangesAsked
from archive.cluster import KINDS
from archive.config import ClusterConfig
from archive.hashing import is_valid_name
from archive.hip import Handler, HipError, HipMaster, Peer, RemoteError, name_list
from archive.inserts import BadMessage
from archive.metadata import cluster_id

from .admin_answers import AdminAnswers
from .db import MasterDB
from .hip_params import (
    MAX_LIST,
    as_object,
    bad_params,
    field,
    inventory_entries,
    joining_node,
    require_role,
)
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


@dataclass(frozen=True)
class MasterOptions:
    data: Path
    host: str
    port: int
    config: ClusterConfig
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
        handlers: dict[str, Handler] = {
            "node.join": self._node_join,
            "node.inventory": self._node_inventory,
            "node.stats": self._node_stats,
            "node.scrubbed": self._node_scrubbed,
            "index.join": self._index_join,
            "cluster.nodes": self._cluster_nodes,
            "structure.claim": self._structure_claim,
            "structure.changed": self._structure_changed,
            "content.refs": self._content_refs,
            CHANGES_METHOD: self._search_changes,
            "insert": self._no_index,
            "stored": self._no_index,
        }
        self.hip = HipMaster(
            config.secret,
            "master",
            handlers,
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
                    await peer.notify("nodes.changed", {})
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
                    await peer.notify(CHANGED_NOTE, {"last": last})
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

    async def _no_index(self, peer: Peer, params: Any) -> None:
        """A client reaches the master itself only when no index node was there to redirect it."""
        raise RemoteError(
            "no_index", "no index node is connected to the master; start one (dlweb index-node)"
        )

    # -- HIP: storage nodes ---------------------------------------------------------------------

    async def _node_join(self, peer: Peer, params: Any) -> dict[str, Any]:
        require_role(peer, "storage", "node.join")
        row, seq = joining_node(peer, params)
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
        return {"since": row.seq, "state": row.state}

    async def _node_inventory(self, peer: Peer, params: Any) -> dict[str, Any]:
        require_role(peer, "storage", "node.inventory")
        p = as_object(params, "node.inventory")
        entries = inventory_entries(p)
        row = self.members.rows.get(peer.name)
        if row is None or self.members.links.get(peer.name) is not peer:
            raise RemoteError("not_joined", "call node.join first")
        seq = field(p, "seq", int, "node.inventory")
        self.db.apply_inventory(peer.name, entries, seq, self.targets)
        self.repairer.heard_of((e["kind"], e["name"]) for e in entries if e["op"] == "add")
        removed = [e["name"] for e in entries if e["op"] == "remove" and e["kind"] == "structure"]
        self.copies.active_lost(peer.name, removed)
        self.copies.unheard_copies(peer.name, entries)
        row.seq = seq
        self._changed()
        return {"seq": seq}

    async def _node_stats(self, peer: Peer, params: Any) -> None:
        row = self.members.rows.get(peer.name)
        if peer.role != "storage" or row is None or not isinstance(params, dict):
            return
        for key in ("free", "total", "reserve"):
            value = params.get(key)
            if isinstance(value, int) and value >= 0:
                setattr(row, key, value)
        groups = params.get("groups")
        if isinstance(groups, list):
            row.groups = [g for g in groups if isinstance(g, int) and 0 <= g < 256]
        row.last_seen = time.time()
        full = params.get("full")
        if isinstance(full, bool) and self.members.links.get(peer.name) is peer:
            self.members.set_full(peer.name, full)

    async def _node_scrubbed(self, peer: Peer, params: Any) -> None:
        if peer.role != "storage" or not isinstance(params, dict):
            return
        bad = [
            b
            for b in params.get("bad", [])
            if isinstance(b, dict) and b.get("kind") in KINDS and is_valid_name(str(b.get("name")))
        ]
        self.scrubs.reports[peer.name] = {
            "finished": time.time(),
            "checked": params.get("checked"),
            "bad": len(bad),
        }
        if bad:
            log.warning("scrub of %s found %d bad files; repairing them", peer.name, len(bad))
            self.db.remove_locations(peer.name, [(b["kind"], b["name"]) for b in bad])
            self.copies.active_lost(peer.name, [b["name"] for b in bad if b["kind"] == "structure"])
            self._changed()

    # -- HIP: index nodes -----------------------------------------------------------------------

    async def _index_join(self, peer: Peer, params: Any) -> dict[str, Any]:
        require_role(peer, "index", "index.join")
        address = field(as_object(params, "index.join"), "address", str, "index.join")
        if not address.startswith(("ws://", "wss://")):
            raise bad_params("index.join: address must be a ws:// or wss:// URL")
        self.index_nodes[peer.name] = address
        log.info("index node %s serves clients at %s", peer.name, address)
        return {}

    async def _search_changes(self, peer: Peer, params: Any) -> dict[str, Any]:
        """The change feed of structure files, for a search indexer."""
        require_role(peer, "search", CHANGES_METHOD)
        try:
            asked = ChangesAsked.from_json(params)
        except BadMessage as exc:
            raise bad_params(str(exc)) from None
        changes = [
            Change(name, seq) for name, seq in self.db.changes_after(asked.after, asked.limit)
        ]
        return Changes(changes, self.db.last_change(), self.db.feed).to_json()

    async def _cluster_nodes(self, peer: Peer, params: Any) -> dict[str, Any]:
        nodes = [
            {**row.to_json(), "state": self.members.public_state(row)}
            for row in self.members.rows.values()
        ]
        return {"nodes": nodes, "replication": self.options.config.replication.to_json()}

    async def _structure_claim(self, peer: Peer, params: Any) -> dict[str, Any]:
        require_role(peer, "index", "structure.claim")
        return self.copies.claim(name_list(params, "structure.claim", MAX_LIST))

    async def _structure_changed(self, peer: Peer, params: Any) -> dict[str, Any]:
        """Record that structure files changed and tell the nodes of their other copies; the
        answer says both are done (an index node acknowledges no insert before)."""
        if peer.role != "index":
            return {}
        try:
            names = name_list(params, "structure.changed", MAX_LIST)
        except RemoteError as exc:
            log.warning("ignored structure.changed from %s: %s", peer.name, exc.message)
            return {}
        # Marked dirty at once (a drain then keeps their active copies), and the pass woken once
        # the replicas' nodes were told, so that the order replacing a copy comes after its
        # notice (a pass woken otherwise meanwhile can refresh a copy before its notice: it then
        # answers late, though fresh, until the next refresh or append).
        self.copies.record_appended(self.copies.appended(params, names))
        self.db.mark_dirty(names)
        self.db.record_changes(names)
        self.structures_changed.set()
        try:
            await self.copies.tell_stale(names)
        finally:
            self.wake.set()
        return {}

    async def _content_refs(self, peer: Peer, params: Any) -> None:
        if peer.role != "index" or not isinstance(params, dict):
            return
        refs = params.get("refs")
        if not isinstance(refs, dict):
            return
        clean = {
            name: count
            for name, count in list(refs.items())[:MAX_LIST]
            if is_valid_name(name) and isinstance(count, int) and count >= 0
        }
        self.db.set_refs(clean, self.targets)
        self.wake.set()
