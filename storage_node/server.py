"""Runs a storage node: the HTTP server, the multicast responder and the periodic state saves."""

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from archive import discovery
from archive.bloom import load_arrays
from archive.config import ClusterConfig
from archive.errors import DlwebError
from archive.multicast import Responder
from archive.server_options import ServerOptions
from archive.serving import serving
from archive.tasks import cancel_and_wait

from .http import build_app
from .master_link import MasterLink
from .node import StorageNode
from .space import DEFAULT_RESERVE, Reserve

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeOptions(ServerOptions):
    node_id: str | None = None
    advertise: str | None = None
    master: str | None = None
    domain: str = "default"
    reliability: str = "normal"
    stats_every: float = 2.0
    save_every: float = 30.0
    reserve: Reserve = DEFAULT_RESERVE


class _MasterLinks:
    """The node's link to its master: to the one configured, or else (with discovery on) to the
    first master of the cluster announced on the LAN."""

    def __init__(self, node: StorageNode, options: NodeOptions, address: str) -> None:
        self.node = node
        self.options = options
        self.address = address
        master = options.master or options.config.master
        self.links = [self._link_to(master)] if master else []
        self._finding: asyncio.Task[None] | None = None

    def _link_to(self, master: str) -> MasterLink:
        options = self.options
        return MasterLink(
            self.node,
            options.config,
            master,
            self.address,
            options.domain,
            options.reliability,
            options.stats_every,
        )

    async def start(self) -> None:
        for link in self.links:
            await link.start()
        if not self.links and self.options.config.discovery:
            self._finding = asyncio.create_task(self._join_when_found())

    async def _join_when_found(self) -> None:
        """Without a master address, join the first master of the cluster announced on the LAN."""
        try:
            found = await discovery.address(
                discovery.MASTER, None, self.options.config, discovery.MASTER_HOW, timeout=None
            )
        except DlwebError as exc:
            log.warning("running without a master: %s", exc)
            return
        self.links.append(self._link_to(found))
        await self.links[0].start()

    def status(self) -> dict[str, object] | None:
        return self.links[0].status() if self.links else None

    async def close(self) -> None:
        if self._finding is not None:
            await cancel_and_wait(self._finding)
        for link in self.links:
            await link.close()


def _responder(node: StorageNode, config: ClusterConfig, address: str) -> Responder:
    """The multicast responder, joined to the groups of the files held when so configured."""
    responder = Responder(
        config.multicast, config.secret, node.id, address, node.holds, node.is_stale
    )
    if config.multicast.join == "held":
        responder.join_groups(node.groups)
        node.on_new_group = lambda group: responder.join_groups([group])
    return responder


def _extra_status(
    node: StorageNode,
    options: NodeOptions,
    address: str,
    links: _MasterLinks,
    responder: Responder,
) -> dict[str, object]:
    """What /status tells beyond the node's store: its place in the cluster, the multicast
    lookups answered, the stale copies and how the node started."""
    return {
        "address": address,
        "domain": options.domain,
        "reliability": options.reliability,
        "master": links.status(),
        "groups_joined": len(responder.groups),
        "multicast": {
            "requests": responder.requests,
            "answers": responder.answers,
            "late": responder.late,
            "rejected": responder.rejected,
        },
        "stale_structures": {"now": len(node.stale), "marked": node.stale_marked},
        "start": node.start.to_json(),
    }


async def _save_until(node: StorageNode, stop: asyncio.Event, every: float) -> None:
    """Save the state and compact the content volumes every `every` s until `stop` is set."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if stop.is_set():
            break  # the state is saved on the way out (StorageNode.close)
        try:
            await node.save_state()
            await loop.run_in_executor(node.executor, node.contents.compact)
        except OSError as exc:
            # A full disk: the node goes on serving and tries again next time.
            log.error("saving state or compacting volumes failed: %s", exc)


async def serve(options: NodeOptions, ready: asyncio.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM, then save state and stop cleanly."""
    node = StorageNode(options.data, options.node_id, options.reserve)
    load_arrays()  # what the filter's batches use, loaded before the first one waits for it
    address = options.advertise or f"http://{options.host}:{options.port}"
    config = options.config
    responder = _responder(node, config, address)
    links = _MasterLinks(node, options, address)
    app = build_app(
        node,
        config.write_token,
        lambda: _extra_status(node, options, address, links, responder),
    )
    try:
        async with serving(app, options.host, options.port, options.config.http) as stop:
            try:
                if config.lookup in ("multicast", "both"):
                    await responder.start()
                await links.start()
                log.info(
                    "storage node %s serving %s at %s (start: %s in %.2f s)",
                    node.id,
                    options.data,
                    address,
                    node.start.how,
                    node.start.seconds,
                )
                if ready is not None:
                    ready.set()
                await _save_until(node, stop, options.save_every)
            finally:
                # Each step of the way out is logged: a node slow to stop names the step.
                log.info("storage node %s stopping: closing its link to the master", node.id)
                await links.close()
                log.info("storage node %s stopping: leaving its multicast groups", node.id)
                await responder.close()
                log.info("storage node %s stopping: closing its HTTP server", node.id)
    finally:
        log.info("storage node %s stopping: saving its state", node.id)
        node.close()
        log.info("storage node %s stopped", node.id)
