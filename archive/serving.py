"""Serving an aiohttp application until the process is told to stop (SIGINT or SIGTERM)."""

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator

from aiohttp import web

from .errors import DlwebError

# Seconds a stopping server gives requests and HIP connections still open to end.
SHUTDOWN_TIMEOUT = 5.0


@contextlib.asynccontextmanager
async def serving(app: web.Application, host: str, port: int) -> AsyncIterator[asyncio.Event]:
    """Serve `app` on host:port; yields the event that SIGINT or SIGTERM sets."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        try:
            await web.TCPSite(runner, host, port, reuse_address=True).start()
        except OSError as exc:
            raise DlwebError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        yield stop
    finally:
        await runner.cleanup()
