"""Runs an index node: HIP for inserting clients, a status page, and the link to the master."""

import asyncio
import logging
import signal

from aiohttp import web

from .service import IndexNode, IndexOptions

log = logging.getLogger(__name__)

# Seconds a stopping server waits for requests and HIP connections in flight to end.
SHUTDOWN_TIMEOUT = 5.0

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
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await site.start()
        await index.start()
        log.info("index node %s at %s, master %s", index.id, index.address, options.master)
        await stop.wait()
    finally:
        await index.stop()
        await runner.cleanup()
        await index.close()
        log.info("index node stopped")
