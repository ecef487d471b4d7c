"""Fixtures of the kernel's tests."""

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

Serve = Callable[[web.Application], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serve aiohttp applications on loopback ports; their base URLs."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    yield start
    for runner in runners:
        await runner.cleanup()
