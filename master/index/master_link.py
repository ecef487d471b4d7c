"""The index node's link to the master: the storage nodes it lists, the nodes holding the active
copies of structure files (claims), and the changed structure files it must record."""

import asyncio
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from archive.hip import HipError, HipSlave, Nothing, Peer, RemoteError, hip_url
from archive.index_calls import (
    CLUSTER_NODES,
    INDEX_JOIN,
    NODES_CHANGED,
    STRUCTURE_CHANGED,
    STRUCTURE_CLAIM,
    Appended,
    Claim,
    IndexJoin,
    StructureChanges,
)
from archive.insert_calls import MAX_CAPTURES

from .options import IndexOptions
from .placement import NodeInfo, node_info

log = logging.getLogger(__name__)

REFRESH_EVERY = 2.0
# Cached answers of structure.claim; past this many the cache starts again.
MAX_CLAIMS = 1_000_000
# Changed structure files kept while the master cannot be told.
MAX_UNSENT = 1_000_000
# How long an insert waits for the master to record which structure files it changed (a master
# that is restarting included), as it waits for a claim.
TELL_TIMEOUT = 60.0
# States of the nodes whose active structure copies may be remembered between calls.
APPENDABLE = frozenset(("alive", "read-only"))


class MasterLink:
    """The part of the index node that talks to the master: it keeps the node list, asks which
    node holds each structure file's active copy, and has the master record the files changed."""

    def __init__(self, options: IndexOptions, node_id: str) -> None:
        self.options = options
        self.id = node_id
        self.address = options.advertise or f"ws://{options.host}:{options.port}/hip"
        self.nodes: list[NodeInfo] = []
        self.claims: dict[str, str] = {}
        # The other copies a claimed structure file's appends reach too, as the master named them.
        self.replicas: dict[str, tuple[str, ...]] = {}
        self.stats: Counter[str] = Counter()
        self.upstream = HipSlave(
            hip_url(options.master),
            options.config.secret,
            self.id,
            {NODES_CHANGED.name: NODES_CHANGED.handler(self._nodes_changed)},
            role="index",
            on_connect=self._on_connect,
        )
        self._refresh: asyncio.Task[None] | None = None
        self._appendable: frozenset[str] = frozenset()
        # Changed structure files the master has not recorded yet, with the copies each insert
        # appended to (see `_tell_changed`).
        self._unsent: dict[str, Appended] = {}

    def _master_connected(self) -> bool:
        peer = self.upstream.peer
        return peer is not None and not peer.closed

    async def _on_connect(self, peer: Peer) -> None:
        await INDEX_JOIN.call(peer, IndexJoin(self.address))
        await self._load_nodes(peer)
        if told := await self._send_unsent(peer):
            log.info("told the master of %d structure changes made while away", told)
        log.info("index node %s joined master %s; clients at %s", self.id, peer.name, self.address)

    async def _load_nodes(self, peer: Peer) -> None:
        answer = await CLUSTER_NODES.call(peer, Nothing())
        self.nodes = [node_info(item) for item in answer.nodes]
        appendable = frozenset(node.address for node in self.nodes if node.state in APPENDABLE)
        if self._appendable - appendable:
            # A node left or stopped taking writes: the master moves its active copies, so
            # what was claimed on it is claimed again.
            self.claims = {n: a for n, a in self.claims.items() if a in appendable}
            self.replicas.clear()
        self._appendable = appendable

    async def _nodes_changed(self, peer: Peer, params: Nothing) -> Nothing:
        await self._reload_nodes()
        return Nothing()

    async def _refresh_nodes(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_EVERY)
            await self._reload_nodes()

    async def _reload_nodes(self) -> None:
        """Ask the master for the node list again; keep the old one if it cannot answer."""
        peer = self.upstream.peer
        if peer is None or peer.closed:
            return
        try:
            await self._load_nodes(peer)
        except (HipError, RemoteError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("could not refresh the node list: %s", exc)

    async def _claim(self, names: list[str]) -> dict[str, str]:
        """Ask the master which node holds the active copy of each structure file (placing the
        new ones); the answers on nodes that take appends are remembered."""
        found: dict[str, str] = {}
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                answer = await STRUCTURE_CLAIM.call(self.upstream, Claim(part), timeout=60)
            except HipError as exc:
                raise RemoteError("unavailable", f"the master cannot be reached: {exc}") from None
            found.update(answer.nodes)
            self.replicas.update(answer.replicas)
        missing = [name for name in names if name not in found]
        if missing:
            raise RemoteError("error", f"the master placed no node for structure {missing[0]}")
        if len(self.claims) + len(found) > MAX_CLAIMS:
            self.claims.clear()
            self.replicas.clear()
        self.claims.update((n, a) for n, a in found.items() if a in self._appendable)
        self.stats["claims"] += len(names)
        return found

    async def _tell_changed(self, changes: dict[str, Appended]) -> None:
        """Have the master record that these structure files changed, so that their other
        copies are marked stale and refreshed, before the insert that changed them is
        acknowledged. A notification is not enough: a master that dies before reading it leaves
        those copies unmarked for good, while the insert is acknowledged.

        Each file comes with the copies its records were appended to: the master compares the
        one appended to as active with its own active copy (which moves when a node is lost,
        while this node may still append to the old one, as cached), and learns of the copies
        just created on other nodes. RemoteError when the master does not answer; the changes
        are then kept and told on the next connection, or with the next change told."""
        self._keep_unsent(changes)
        try:
            await self._send_unsent(self.upstream)
        except (HipError, RemoteError) as exc:
            log.warning(
                "could not tell the master of %d changed structure files: %s",
                len(self._unsent),
                exc,
            )
            raise RemoteError(
                "unavailable", f"the master did not record the changed structure files: {exc}"
            ) from None

    async def _tell_master(self, method: str, params: dict[str, Any]) -> None:
        """Notify the master without waiting for a connection (what is lost is sent again with
        the next change)."""
        peer = self.upstream.peer
        try:
            if peer is None or peer.closed:
                raise HipError("not connected")
            await peer.notify(method, params)
        except HipError as exc:
            log.warning("could not notify the master (%s): %s", method, exc)

    def _keep_unsent(self, changes: Mapping[str, Appended]) -> None:
        if len(self._unsent) + len(changes) > MAX_UNSENT:
            log.warning("dropping %d unsent structure changes", len(self._unsent))
            self._unsent.clear()
        for name, appended in changes.items():
            self._unsent[name] = appended | self._unsent.get(name, Appended())

    async def _send_unsent(self, to: "Peer | HipSlave") -> int:
        """Tell the master the changes it may not have recorded, MAX_CAPTURES a call; those not
        told stay kept when a call fails. How many were told."""
        names, pending = list(self._unsent), self._unsent
        self._unsent = {}
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                await STRUCTURE_CHANGED.call(
                    to, StructureChanges.of(part, pending), timeout=TELL_TIMEOUT
                )
            except (HipError, RemoteError):
                self._keep_unsent({name: pending[name] for name in names[start:]})
                raise
        return len(names)
