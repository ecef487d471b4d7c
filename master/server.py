"""Runs the master: the HTTP and HIP server, and the loops that keep files at their targets."""

import asyncio
import logging

from archive.discovery import MASTER, Announcement
from archive.serving import SHUTDOWN_TIMEOUT, serving

from .http import build_app
from .service import Master, MasterOptions

log = logging.getLogger(__name__)


async def serve(options: MasterOptions) -> None:
    """Run until SIGINT or SIGTERM."""
    options.data.mkdir(parents=True, exist_ok=True)
    master = Master(options)
    try:
        url = f"http://{options.host}:{options.port}"
        async with serving(
            build_app(master), options.host, options.port, options.config.http
        ) as stop:
            master.start()
            log.info("master of cluster %s at %s", options.config.name, url)
            try:
                async with Announcement(MASTER, options.config, url):
                    await stop.wait()
            finally:
                try:
                    await asyncio.wait_for(master.stop(), SHUTDOWN_TIMEOUT)
                except TimeoutError:
                    _log_stuck_tasks()
    finally:
        master.close()
        log.info("master stopped")


def _log_stuck_tasks() -> None:
    """Say what kept the master from stopping in time, so it can be fixed."""
    current = asyncio.current_task()
    for task in asyncio.all_tasks():
        if task is not current:
            frames = "".join(f"\n  {f.f_code.co_filename}:{f.f_lineno}" for f in task.get_stack())
            log.error("still running at shutdown: %s%s", task.get_name(), frames)
