"""Runs a storage node: the HTTP server, the multicast responder and the periodic state saves."""

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

from archive.config import ClusterConfig
from archive.multicast import Responder
from archive.serving import serving

from .http import build_app
from .master_link import MasterLink
from .node import StorageNode

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


async def serve(options: NodeOptions, ready: asyncio.Event | None = None) -> None:
    """Run until SIGINT or SIGTERM, then save state and stop cleanly."""
    node = StorageNode(options.root, options.node_id)
    address = options.advertise or f"http://{options.host}:{options.port}"
    config = options.config
    responder = Responder(config.multicast, config.secret, node.id, address, node.holds)
    if config.multicast.join == "held":
        responder.join_groups(node.groups)
        node.on_new_group = lambda group: responder.join_groups([group])

    master = options.master or config.master
    link = (
        MasterLink(
            node,
            config,
            master,
            address,
            options.domain,
            options.reliability,
            options.stats_every,
        )
        if master
        else None
    )

    def extra_status() -> dict[str, object]:
        return {
            "address": address,
            "domain": options.domain,
            "reliability": options.reliability,
            "master": link.status() if link is not None else None,
            "groups_joined": len(responder.groups),
            "multicast": {
                "requests": responder.requests,
                "answers": responder.answers,
                "rejected": responder.rejected,
            },
        }

    app = build_app(node, config.write_token, extra_status)
    loop = asyncio.get_running_loop()
    try:
        async with serving(app, options.host, options.port) as stop:
            try:
                if config.lookup in ("multicast", "both"):
                    await responder.start()
                if link is not None:
                    await link.start()
                log.info("storage node %s serving %s at %s", node.id, options.root, address)
                if ready is not None:
                    ready.set()
                while not stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), options.save_every)
                    await loop.run_in_executor(node.executor, node.save_state)
            finally:
                if link is not None:
                    await link.close()
                await responder.close()
    finally:
        node.close()
        log.info("storage node %s stopped", node.id)
