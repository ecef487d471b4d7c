"""Fixtures of the kernel's tests."""

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from deploy.testing.web_server import WebServer

Serve = Callable[[web.Application], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serve aiohttp applications on loopback ports, in the test's event loop; their base URLs."""
    servers: list[WebServer] = []

    async def start(app: web.Application) -> str:
        server = WebServer(app)
        servers.append(server)
        await server.start_here()
        return server.base

    yield start
    for server in servers:
        await server.stop_here()
