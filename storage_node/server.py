"""Runs a storage node: the HTTP server, the multicast responder and the periodic state saves."""

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

from archive import discovery
from archive.bloom import load_arrays
from archive.config import ClusterConfig
from archive.errors import DlwebError
from archive.multicast import Responder
from archive.serving import serving
from archive.tasks import cancel_and_wait

from .http import build_app
from .master_link import MasterLink
from .node import StorageNode
from .space import DEFAULT_RESERVE, Reserve

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NodeOptions:
    root: Path
    host: str
    port: int
    config: ClusterConfig
    node_id: str | None = None
    advertise: str | None = None
    master: str | None = None
    domain: str = "default"
    reliability: str = "normal"
    stats_every: float = 2.0
    save_every: float = 30.0
    reserve: Reserve = DEFAULT_RESERVE


async def serve(options: NodeOptions, ready: asyncio.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM, then save state and stop cleanly."""
    node = StorageNode(options.root, options.node_id, options.reserve)
    load_arrays()  # what the filter's batches use, loaded before the first one waits for it
    address = options.advertise or f"http://{options.host}:{options.port}"
    config = options.config
    responder = Responder(
        config.multicast, config.secret, node.id, address, node.holds, node.is_stale
    )
    if config.multicast.join == "held":
        responder.join_groups(node.groups)
        node.on_new_group = lambda group: responder.join_groups([group])

    def link_to(master: str) -> MasterLink:
        return MasterLink(
            node, config, master, address, options.domain, options.reliability, options.stats_every
        )

    master = options.master or config.master
    links = [link_to(master)] if master else []

    async def join_when_found() -> None:
        """Without a master address, join the first master of the cluster announced on the LAN."""
        try:
            found = await discovery.address(
                discovery.MASTER, None, config, discovery.MASTER_HOW, timeout=None
            )
        except DlwebError as exc:
            log.warning("running without a master: %s", exc)
            return
        links.append(link_to(found))
        await links[0].start()

    def extra_status() -> dict[str, object]:
        return {
            "address": address,
            "domain": options.domain,
            "reliability": options.reliability,
            "master": links[0].status() if links else None,
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

    app = build_app(node, config.write_token, extra_status)
    loop = asyncio.get_running_loop()
    finding: asyncio.Task[None] | None = None
    try:
        async with serving(app, options.host, options.port, options.config.http) as stop:
            try:
                if config.lookup in ("multicast", "both"):
                    await responder.start()
                for link in links:
                    await link.start()
                if not links and config.discovery:
                    finding = asyncio.create_task(join_when_found())
                log.info(
                    "storage node %s serving %s at %s (start: %s in %.2f s)",
                    node.id,
                    options.root,
                    address,
                    node.start.how,
                    node.start.seconds,
                )
                if ready is not None:
                    ready.set()
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), options.save_every)
                    if stop.is_set():
                        break  # the state is saved on the way out (StorageNode.close)
                    try:
                        await node.save_state()
                        await loop.run_in_executor(node.executor, node.contents.compact)
                    except OSError as exc:
                        # A full disk: the node goes on serving and tries again next time.
                        log.error("saving state or compacting volumes failed: %s", exc)
            finally:
                if finding is not None:
                    await cancel_and_wait(finding)
                for link in links:
                    await link.close()
                await responder.close()
    finally:
        node.close()
        log.info("storage node %s stopped", node.id)
