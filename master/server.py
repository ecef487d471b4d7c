"""Runs the master: the HTTP and HIP server, and the loops that keep files at their targets."""

import asyncio
import logging
import signal

from aiohttp import web

from .http import build_app
from .service import Master, MasterOptions

log = logging.getLogger(__name__)

# Seconds a stopping server waits for requests and HIP connections in flight to end.
SHUTDOWN_TIMEOUT = 5.0


async def serve(options: MasterOptions) -> None:
    """Run until SIGINT or SIGTERM."""
    options.data.mkdir(parents=True, exist_ok=True)
    master = Master(options)
    runner = web.AppRunner(build_app(master), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await site.start()
        master.start()
        log.info(
            "master of cluster %s at http://%s:%d", options.config.name, options.host, options.port
        )
        await stop.wait()
    finally:
        try:
            await asyncio.wait_for(master.stop(), SHUTDOWN_TIMEOUT)
        except TimeoutError:
            _log_stuck_tasks()
        await runner.cleanup()
        master.close()
        log.info("master stopped")


def _log_stuck_tasks() -> None:
    """Say what kept the master from stopping in time, so it can be fixed."""
    current = asyncio.current_task()
    for task in asyncio.all_tasks():
        if task is not current:
            frames = "".join(f"\n  {f.f_code.co_filename}:{f.f_lineno}" for f in task.get_stack())
            log.error("still running at shutdown: %s%s", task.get_name(), frames)
