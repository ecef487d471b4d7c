"""Passing an upload on down its chain of nodes while writing it here.

A client sends each byte once: the first node of a chain stores the upload and, at the same
time, sends it to the next node with the rest of the chain, which does the same. Each node
answers only once its own copy is fsynced and the node after it has answered, so the receipt
that reaches the client names every node holding a copy (and why the others do not). A node
that cannot pass an upload on still stores its own copy: the client then sends the missing
copies to spare nodes itself.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp

from archive.errors import DlwebError
from archive.insert_calls import UploadReceipt, chain_header
from archive.network import NETWORK_ERRORS, PEER_SILENCE, UPLOAD_TIMEOUT, failure, peer_timeout

__all__ = ["Forwarder", "Passed"]

# Chunks of a streamed upload waiting for the next node; the writer here waits past this many.
QUEUED_CHUNKS = 16

Passed = tuple[tuple[str, ...], dict[str, str]]  # nodes holding a copy down the chain, failures


class Forwarder:
    """The session a storage node passes uploads on with (made by `cleanup` as the app
    starts)."""

    def __init__(self, token: str, silence: float = PEER_SILENCE) -> None:
        self._auth = {"Authorization": f"Bearer {token}"}
        self.silence = silence
        self._session: aiohttp.ClientSession | None = None

    async def cleanup(self, _app: object) -> AsyncIterator[None]:
        """An aiohttp cleanup context: the session lives as long as the app."""
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=32))
        yield
        await self._session.close()

    async def send(self, chain: list[str], path: str, method: str, data: Any) -> Passed:
        """Send an upload to chain[0], to be passed on to the rest; which nodes hold it."""
        if not chain:
            return (), {}
        assert self._session is not None
        url = f"{chain[0]}{path}"
        timeout = peer_timeout(UPLOAD_TIMEOUT, self.silence * len(chain))
        headers = {**self._auth, **chain_header(chain[1:])}
        try:
            async with self._session.request(
                method, url, data=data, headers=headers, timeout=timeout
            ) as r:
                answer = await r.json(content_type=None)
                if r.status not in (200, 201):
                    error = answer.get("error") if isinstance(answer, dict) else answer
                    return (), {chain[0]: f"answered {r.status}: {str(error)[:300]}"}
            receipt = UploadReceipt.from_json(answer)
        except (*NETWORK_ERRORS, ValueError, DlwebError) as exc:
            return (), {chain[0]: failure(exc, self.silence)}
        return (chain[0], *receipt.forwarded), receipt.failed

    async def along(
        self,
        chain: list[str],
        path: str,
        method: str,
        store: Callable[[], Awaitable[int]],
        data: Any,
    ) -> tuple[int, Passed]:
        """Store an upload held in memory here and send it down the chain at once; what
        `store` answered and which nodes down the chain hold it. A failure here is raised."""
        passing = asyncio.create_task(self.send(chain, path, method, data))
        try:
            created = await store()
        except BaseException:
            passing.cancel()
            raise
        return created, await passing

    async def tee(
        self,
        chain: list[str],
        path: str,
        body: AsyncIterable[bytes],
        store: Callable[[AsyncIterable[bytes]], Awaitable[bool]],
    ) -> tuple[bool, Passed]:
        """Store a streamed upload here while sending its chunks down the chain as they
        arrive; a next node that fails or falls behind for good is dropped, not waited for."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUED_CHUNKS)
        dropped = False

        async def outgoing() -> AsyncIterator[bytes]:
            while (chunk := await queue.get()) is not None:
                yield chunk

        async def passing() -> Passed:
            nonlocal dropped
            try:
                return await self.send(chain, path, "PUT", outgoing())
            finally:
                dropped = True
                while not queue.empty():
                    queue.get_nowait()

        async def incoming() -> AsyncIterator[bytes]:
            async for chunk in body:
                if not dropped:
                    await queue.put(chunk)
                yield chunk
            if not dropped:
                await queue.put(None)

        task = asyncio.create_task(passing())
        try:
            created = await store(incoming())
        except BaseException:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
        return created, await task
