"""A scheduler's HTTP API served on loopback for a test, over the scheduler the test made."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from crawler.scheduler.http import build_app
from crawler.scheduler.service import Scheduler


@asynccontextmanager
async def scheduler_api(scheduler: Scheduler, token: str) -> AsyncIterator[TestClient[Any, Any]]:
    """A client of the scheduler's API; the scheduler's store is closed after it."""
    client: TestClient[Any, Any] = TestClient(TestServer(build_app(scheduler, token)))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        scheduler.store.close()
