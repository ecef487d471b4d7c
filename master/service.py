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
from archive.config import RELIABILITIES, ClusterConfig
from archive.errors import ClientFault, NotFound
from archive.hashing import is_valid_name
from archive.hip import Handler, HipError, HipMaster, Peer, RemoteError, name_list
from archive.inserts import BadMessage
from archive.metadata import cluster_id

from .db import NO_READABLE_COPY, FileRef, MasterDB, NodeRow
from .membership import ADMIN_STATES, Membership
from .orphans import find_orphans
from .policy import choose_node, target_function
from .rebalance import Rebalancer
from .repair import Copier, Repairer

log = logging.getLogger(__name__)

MAX_LIST = 5_000
# Files below target an fsck report names (it counts them all).
MAX_PROBLEMS = 100
PASS_GAP = 0.25
IDLE_PASS_EVERY = 2.0
STALE_TIMEOUT = 5.0
# Nodes a structure.changed names for one file's copies, at most.
MAX_COPIES = 100
KINDS = ("content", "structure")
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


def _bad(message: str) -> RemoteError:
    return RemoteError("bad_params", message)


def _object(params: Any, method: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _bad(f"{method}: params must be an object")
    return params


def _field(params: dict[str, Any], key: str, kind: type, method: str) -> Any:
    value = params.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad(f"{method}: {key!r} must be {kind.__name__}")
    return value


def _entries(params: dict[str, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = _field(params, "entries", list, "node.inventory")
    if len(entries) > MAX_LIST:
        raise _bad(f"node.inventory: at most {MAX_LIST} entries a call")
    for index, entry in enumerate(entries):
        where = f"node.inventory: entries[{index}]"
        if not isinstance(entry, dict):
            raise _bad(f"{where} must be an object")
        if entry.get("op") not in ("add", "remove") or entry.get("kind") not in KINDS:
            raise _bad(f"{where}: op must be add or remove, kind content or structure")
        name, size = entry.get("name"), entry.get("size")
        if not isinstance(name, str) or not is_valid_name(name):
            raise _bad(f"{where}: name is not 64 lowercase hex digits")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _bad(f"{where}: size must be a non-negative integer")
    return entries


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
        self.index_nodes: dict[str, str] = {}
        # Storage nodes that joined again with the inventory position this master had stored.
        self.returning: set[str] = set()
        self._turn = itertools.count()
        self.scrubs: dict[str, dict[str, Any]] = {}
        self.started = time.time()
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
        self.wake.set()
        self.rebalancer.changed.set()
        self.nodes_changed.set()

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
        while True:
            await asyncio.sleep(0.2)
            self.members.tick()
            if self.options.scrub_every > 0:
                await self._scheduled_scrubs()

    async def _scheduled_scrubs(self) -> None:
        now = time.time()
        for node, row in self.members.rows.items():
            if self.members.connected(node) and now - row.last_scrub >= self.options.scrub_every:
                if row.last_scrub == 0:
                    # A new node starts its schedule now instead of scrubbing at once.
                    row.last_scrub = now
                    self.db.save_node(row)
                    continue
                await self.scrub([node])

    # -- admin ----------------------------------------------------------------------------------

    async def scrub(self, nodes: list[str]) -> dict[str, Any]:
        started = {}
        for node in nodes:
            peer = self.members.links.get(node)
            if peer is None:
                started[node] = {"started": False, "error": "not connected"}
                continue
            row = self.members.rows[node]
            row.last_scrub = time.time()
            self.db.save_node(row)
            try:
                started[node] = await peer.call("scrub", {}, timeout=30)
            except Exception as exc:
                started[node] = {"started": False, "error": str(exc)}
        return {"scrub": started}

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
                    "scrub": self.scrubs.get(row.id),
                    **({"drained": files == 0} if row.state == "draining" else {}),
                }
            )
        causes = self.db.short_counts()
        rebalance = self.rebalancer.state
        if rebalance.get("state") in ("running", "stopped", "done"):
            rebalance = {**rebalance, "progress": self.db.move_progress()}
        return {
            "cluster": self.options.config.name,
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
            "repairs": {**self.repairer.stats.to_json(), **self._to_check()},
            "rebalance": rebalance,
            "replication": self.options.config.replication.to_json(),
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

    def _require(self, peer: Peer, role: str, method: str) -> None:
        if peer.role != role:
            raise RemoteError("forbidden", f"{method} is for agents of role {role}")

    # -- HIP: storage nodes ---------------------------------------------------------------------

    async def _node_join(self, peer: Peer, params: Any) -> dict[str, Any]:
        self._require(peer, "storage", "node.join")
        p = _object(params, "node.join")
        node_id = _field(p, "id", str, "node.join")
        if node_id != peer.name:
            raise _bad(
                f"node.join: id {node_id!r} differs from the connection's name {peer.name!r}"
            )
        address = _field(p, "address", str, "node.join")
        if not address.startswith(("http://", "https://")):
            raise _bad("node.join: address must be an http:// or https:// URL")
        reliability = p.get("reliability", "normal")
        if reliability not in RELIABILITIES:
            raise _bad(f"node.join: reliability must be one of {', '.join(RELIABILITIES)}")
        seq = _field(p, "seq", int, "node.join")
        row = NodeRow(
            id=node_id,
            address=address.rstrip("/"),
            domain=str(p.get("domain", "default"))[:100],
            reliability=reliability,
            free=int(p.get("free", 0)),
            total=int(p.get("total", 0)),
            groups=[g for g in p.get("groups", []) if isinstance(g, int) and 0 <= g < 256],
            reserve=int(p.get("reserve", 0)),
            full=p.get("full") is True,
        )
        known = self.members.rows.get(node_id)
        if known is not None and seq < known.seq:
            log.warning(
                "node %s is at inventory %d, behind the %d stored: reading it again from 0",
                node_id,
                seq,
                known.seq,
            )
            self.db.forget_locations(node_id)
            known.seq = 0
        row = self.members.join(peer, row, seq)
        if row.seq > 0:
            self.returning.add(node_id)
        else:
            self.returning.discard(node_id)
        await self._tell_diverged(node_id)
        return {"since": row.seq, "state": row.state}

    async def _node_inventory(self, peer: Peer, params: Any) -> dict[str, Any]:
        self._require(peer, "storage", "node.inventory")
        p = _object(params, "node.inventory")
        entries = _entries(p)
        row = self.members.rows.get(peer.name)
        if row is None or self.members.links.get(peer.name) is not peer:
            raise RemoteError("not_joined", "call node.join first")
        seq = _field(p, "seq", int, "node.inventory")
        self.db.apply_inventory(peer.name, entries, seq, self.targets)
        self.repairer.heard_of((e["kind"], e["name"]) for e in entries if e["op"] == "add")
        removed = [e["name"] for e in entries if e["op"] == "remove" and e["kind"] == "structure"]
        self._active_lost(peer.name, removed)
        self._unheard_copies(peer.name, entries)
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
        self.scrubs[peer.name] = {
            "finished": time.time(),
            "checked": params.get("checked"),
            "bad": len(bad),
        }
        if bad:
            log.warning("scrub of %s found %d bad files; repairing them", peer.name, len(bad))
            self.db.remove_locations(peer.name, [(b["kind"], b["name"]) for b in bad])
            self._active_lost(peer.name, [b["name"] for b in bad if b["kind"] == "structure"])
            self._changed()

    def _unheard_copies(self, node: str, entries: list[dict[str, Any]]) -> None:
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

    def _active_lost(self, node: str, names: list[str]) -> None:
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

    # -- HIP: index nodes -----------------------------------------------------------------------

    async def _index_join(self, peer: Peer, params: Any) -> dict[str, Any]:
        self._require(peer, "index", "index.join")
        address = _field(_object(params, "index.join"), "address", str, "index.join")
        if not address.startswith(("ws://", "wss://")):
            raise _bad("index.join: address must be a ws:// or wss:// URL")
        self.index_nodes[peer.name] = address
        log.info("index node %s serves clients at %s", peer.name, address)
        return {}

    async def _search_changes(self, peer: Peer, params: Any) -> dict[str, Any]:
        """The change feed of structure files, for a search indexer."""
        self._require(peer, "search", CHANGES_METHOD)
        try:
            asked = ChangesAsked.from_json(params)
        except BadMessage as exc:
            raise _bad(str(exc)) from None
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
        """The node of each structure file's active copy (a new one is placed and recorded),
        and the nodes an append must also reach before an insert is acknowledged: the other
        readable holders, or for a new file, as many more placed nodes as the insert waits for
        copies."""
        self._require(peer, "index", "structure.claim")
        names = name_list(params, "structure.claim", MAX_LIST)
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
        replicas = self._structure_replicas(chosen, holders_of, readable, receivers, planned)
        if diverged:
            self.db.add_diverged(diverged)
        if new:
            self.db.set_active(new)
        return {
            "nodes": {name: self.members.address(node) for name, node in chosen.items()},
            "replicas": replicas,
        }

    def _structure_replicas(
        self,
        chosen: dict[str, str],
        holders_of: dict[str, list[str]],
        readable: set[str],
        receivers: list[NodeRow],
        planned: dict[str, int],
    ) -> dict[str, list[str]]:
        """The addresses of the copies of each structure file beside its active one that an
        append reaches too: its readable holders, or nodes placed for a file no node holds."""
        wanted = self.options.config.replication.insert_copies - 1
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
        self._record_appended(self._appended(params, names))
        self.db.mark_dirty(names)
        self.db.record_changes(names)
        self.structures_changed.set()
        try:
            await self._tell_stale(names)
        finally:
            self.wake.set()
        return {}

    def _appended(
        self, params: dict[str, Any], names: list[str]
    ) -> dict[str, tuple[set[str], set[str]]]:
        """The nodes an index node says each changed file's records were appended to: as its
        active copy, and as other copies; addresses of no known node are left out."""
        copies = params.get("copies")
        if not isinstance(copies, dict):
            return {}
        by_address = {row.address: node for node, row in self.members.rows.items()}
        changed = set(names)
        found: dict[str, tuple[set[str], set[str]]] = {}
        for name, item in copies.items():
            if name not in changed or not isinstance(item, dict):
                continue
            sides = [item.get("active"), item.get("others")]
            active, others = (
                {by_address[a] for a in side[:MAX_COPIES] if isinstance(a, str) and a in by_address}
                if isinstance(side, list)
                else set()
                for side in sides
            )
            found[name] = (active, others)
        return found

    def _record_appended(self, appended: dict[str, tuple[set[str], set[str]]]) -> None:
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

    async def _tell_stale(self, names: list[str]) -> None:
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
                for start in range(0, len(names), MAX_LIST):
                    await peer.notify("stale", {"names": names[start : start + MAX_LIST]})
        except (HipError, TimeoutError) as exc:
            log.warning("could not tell %s of %d stale structure copies: %s", node, len(names), exc)

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

    def set_node_state(self, node: str, state: str) -> dict[str, Any]:
        if node not in self.members.rows:
            raise NotFound(f"no node {node[:100]!r} in this cluster")
        if state not in ADMIN_STATES:
            raise ClientFault(f"state must be one of {', '.join(ADMIN_STATES)}")
        return self.members.set_admin_state(node, state).to_json()
