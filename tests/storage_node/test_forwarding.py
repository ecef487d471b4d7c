"""A storage node passes an upload on down its chain while storing it, and its receipt says
which nodes hold a copy: a node after it that refuses, breaks off or is silent is named as
failed, never counted as a copy."""

import asyncio
import hashlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from archive import pack
from archive.config import ClusterConfig
from archive.insert_calls import FORWARD_HEADER, UploadReceipt
from deploy.testing.disk import stored_content
from deploy.testing.web_server import WebServer

from .test_node_http import auth, sha

LARGE = 3 * 1024 * 1024  # streamed chunk by chunk (above the node's in-memory limit)

Serve = Callable[[web.Application], Awaitable[str]]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[WebServer] = []

    async def start(app: web.Application) -> str:
        server = WebServer(app)
        servers.append(server)
        await server.start_here()
        return server.base

    yield start
    for server in servers:
        await server.stop_here()


async def upload(
    session: aiohttp.ClientSession,
    config: ClusterConfig,
    first: str,
    chain: list[str],
    data: bytes,
) -> tuple[int, UploadReceipt]:
    name = sha(data)
    headers = {**auth(config), FORWARD_HEADER: ",".join(chain)}
    async with session.put(f"{first}/content/{name}", data=data, headers=headers) as r:
        return r.status, UploadReceipt.from_json(await r.json())


@pytest.mark.parametrize("size", [5_000, LARGE])
async def test_an_upload_is_stored_on_every_node_of_its_chain(
    node_factory, cluster, session, size
) -> None:
    config = cluster[1]
    a, b, c = node_factory("a"), node_factory("b"), node_factory("c")
    data = os.urandom(size)
    status, receipt = await upload(session, config, a.url, [b.url, c.url], data)
    assert status == 201
    assert receipt.forwarded == (b.url, c.url) and receipt.failed == {}
    for node in (a, b, c):
        assert stored_content(node.root, sha(data)) == data


async def test_a_pack_is_passed_on_whole(node_factory, cluster, session) -> None:
    config = cluster[1]
    a, b = node_factory("a"), node_factory("b")
    items = [(sha(data), data) for data in (os.urandom(100 + i) for i in range(20))]
    headers = {**auth(config), FORWARD_HEADER: b.url}
    async with session.post(f"{a.url}/contents", data=pack.Upload(items), headers=headers) as r:
        assert r.status == 200
        receipt = UploadReceipt.from_json(await r.json())
    assert receipt.created == 20 and receipt.forwarded == (b.url,)
    for name, data in items:
        assert stored_content(b.root, name) == data


class BreaksOff:
    """A node that reads part of an upload, then closes the connection."""

    def __init__(self) -> None:
        self.received = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_put("/content/{name}", self.put)
        return app

    async def put(self, request: web.Request) -> web.Response:
        async for chunk in request.content.iter_chunked(64 * 1024):
            self.received += len(chunk)
            if self.received > LARGE // 3:
                assert request.transport is not None
                request.transport.close()
                break
        return web.json_response({"error": "cut"}, status=500)


class Corrupts:
    """A node that passes on other bytes than it received, as a bad disk or memory would."""

    def __init__(self, session: aiohttp.ClientSession, token: str) -> None:
        self.session = session
        self.token = token

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_put("/content/{name}", self.put)
        return app

    async def put(self, request: web.Request) -> web.Response:
        data = bytearray(await request.read())
        data[0] ^= 0xFF
        nxt = request.headers[FORWARD_HEADER]
        headers = {"Authorization": f"Bearer {self.token}"}
        url = f"{nxt}/content/{request.match_info['name']}"
        async with self.session.put(url, data=bytes(data), headers=headers) as r:
            if r.status >= 400:
                return web.json_response(
                    {"created": 1, "failed": {nxt: f"answered {r.status}: {await r.text()}"}}
                )
        return web.json_response({"created": 1, "forwarded": [nxt]})


async def test_a_next_node_that_breaks_off_halfway_is_named_and_holds_nothing(
    node_factory, cluster, session, serve
) -> None:
    config = cluster[1]
    a = node_factory("a")
    breaker = BreaksOff()
    cut = await serve(breaker.app())
    data = os.urandom(LARGE)
    status, receipt = await upload(session, config, a.url, [cut], data)
    assert status == 201
    assert receipt.forwarded == () and cut in receipt.failed
    assert 0 < breaker.received < LARGE
    # The first node's own copy is whole: the break down the chain does not touch it.
    assert stored_content(a.root, sha(data)) == data


async def test_wrong_bytes_passed_on_are_refused_by_the_node_after(
    node_factory, cluster, session, serve
) -> None:
    config = cluster[1]
    b = node_factory("b")
    liar = await serve(Corrupts(session, config.write_token).app())
    data = os.urandom(5_000)
    headers = {**auth(config), FORWARD_HEADER: b.url}
    async with session.put(f"{liar}/content/{sha(data)}", data=data, headers=headers) as r:
        receipt = UploadReceipt.from_json(await r.json())
    assert receipt.forwarded == () and b.url in receipt.failed
    assert "400" in receipt.failed[b.url]
    assert stored_content(b.root, sha(data)) is None


async def test_a_silent_next_node_is_given_up_and_named(node_factory, cluster, session) -> None:
    config = cluster[1]
    a, b = node_factory("a"), node_factory("b")
    assert b.process is not None
    b.process.send_signal(signal.SIGSTOP)
    try:
        data = os.urandom(5_000)
        async with asyncio.timeout(60):
            status, receipt = await upload(session, config, a.url, [b.url], data)
    finally:
        b.process.send_signal(signal.SIGCONT)
    assert status == 201 and receipt.forwarded == ()
    assert "no answer for 15 s" in receipt.failed[b.url]
    assert stored_content(a.root, sha(data)) == data


async def test_a_chain_naming_other_than_node_addresses_is_refused(
    node_factory, cluster, session
) -> None:
    config = cluster[1]
    a = node_factory("a")
    data = b"forwarded nowhere"
    for chain in ("file:///etc/passwd", "http://x, http://x", "not an address"):
        headers = {**auth(config), FORWARD_HEADER: chain}
        async with session.put(f"{a.url}/content/{sha(data)}", data=data, headers=headers) as r:
            assert r.status == 400, chain
            assert FORWARD_HEADER in (await r.json())["error"]
    assert stored_content(a.root, hashlib.sha256(data).hexdigest()) is None
