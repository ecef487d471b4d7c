"""Runs an index node: HIP for inserting clients, a status page, and the link to the master."""

import logging

from aiohttp import web

from archive.serving import serving

from .options import IndexOptions
from .service import IndexNode

log = logging.getLogger(__name__)

INDEX = web.AppKey("index", IndexNode)


async def get_status(request: web.Request) -> web.Response:
    return web.json_response(request.app[INDEX].status())


async def serve(options: IndexOptions) -> None:
    """Run until SIGINT or SIGTERM."""
    index = IndexNode(options)
    app = web.Application()
    app[INDEX] = index
    index.hip.add_routes(app)
    app.router.add_get("/status", get_status)
    try:
        async with serving(app, options.host, options.port, options.config.http) as stop:
            await index.start()
            log.info("index node %s at %s, master %s", index.id, index.address, options.master)
            try:
                await stop.wait()
            finally:
                await index.stop()
    finally:
        await index.close()
        log.info("index node stopped")
