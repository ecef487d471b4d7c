"""The crawler's HTTP client, checked where politeness matters: at the servers it talks to.

Each test starts small HTTP/1.1 servers in-process with `asyncio.start_server` on 127.0.0.2 and
127.0.0.3 (Linux routes all of 127/8 to lo), one port for every address. A server records what
it saw: the connections it accepted and the ones the client closed, every request with its time
and connection, the most requests it had in progress at once, and the response heads it sent.
A listening server is ready as soon as `start_server` returns; anything the tests wait for is
awaited on the server's record, with a deadline.
"""

import asyncio
import contextlib
import gzip
import hashlib
import socket
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotlicffi
import pytest

from archive.content_coding import BadCoding
from crawler.fetch import IN_MEMORY, Fetcher, FetchError, Politeness, Resolver

A, B = "127.0.0.2", "127.0.0.3"
HOST_A, HOST_B, HOST_C, HOST_RR = "www.a.test", "www.b.test", "www.c.test", "www.rr.test"
WAIT = 10.0  # deadline for anything awaited from a server
CHUNK = 7  # chunked replies are cut in pieces this long


@dataclass
class Reply:
    """What a test server answers to one request."""

    status: int = 200
    reason: str = "OK"
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunked: bool = False
    close: bool = False  # say `Connection: close`, then close once answered
    raw: bytes | None = None  # sent as it is instead of a response
    hang: bool = False  # never answer

    def head(self) -> bytes:
        fields = list(self.headers)
        if self.chunked:
            fields.append(("Transfer-Encoding", "chunked"))
        else:
            fields.append(("Content-Length", str(len(self.body))))
        if self.close:
            fields.append(("Connection", "close"))
        lines = [f"HTTP/1.1 {self.status} {self.reason}", *(f"{n}: {v}" for n, v in fields)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def payload(self) -> bytes:
        if not self.chunked:
            return self.body
        pieces = [self.body[i : i + CHUNK] for i in range(0, len(self.body), CHUNK)]
        return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@dataclass
class Request:
    time: float  # time.monotonic() once its head was read
    target: str
    headers: dict[str, str]  # names in lower case
    connection: int  # the server's number for the connection it came on, from 1


Handler = Callable[[Request], Reply]


class Server:
    """One address's HTTP/1.1 server, and what it saw."""

    def __init__(self, address: str, handler: Handler, service_time: float) -> None:
        self.address = address
        self.handler = handler
        self.service_time = service_time  # each answer waits this long: overlaps get caught
        self.accepted = 0
        self.open = 0
        self.requests: list[Request] = []
        self.in_progress = 0
        self.max_in_progress = 0
        self.answered: list[float] = []  # when each response was written
        self.client_closed: list[float] = []  # when the client was seen closing a connection
        self.heads: list[bytes] = []  # the response heads sent, in order
        self._changed = asyncio.Event()
        self._stopped = asyncio.Event()
        self._open: dict[asyncio.StreamWriter, asyncio.Task[Any]] = {}
        self._hung_up: set[asyncio.StreamWriter] = set()
        self._listener: asyncio.Server | None = None

    async def listen(self, port: int) -> int:
        self._listener = await asyncio.start_server(self._serve, self.address, port)
        bound: int = self._listener.sockets[0].getsockname()[1]
        return bound

    async def until(self, condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
        """Wait until `condition` holds on this server's record, failing after `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.address}: timed out waiting for {what}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def hang_up(self) -> None:
        """Close every open connection from the server's side, and wait until they are."""
        for writer in self._open:
            self._hung_up.add(writer)
            writer.close()
        await asyncio.gather(*self._open.values(), return_exceptions=True)

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
        self._stopped.set()
        await self.hang_up()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open[writer] = task
        self.accepted += 1
        number = self.accepted
        self.open += 1
        self._notify()
        try:
            await self._exchanges(reader, writer, number)
        finally:
            self.open -= 1
            del self._open[writer]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._notify()

    async def _exchanges(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                if writer not in self._hung_up:
                    self.client_closed.append(time.monotonic())
                return
            request = _parse(head, number)
            self.requests.append(request)
            self.in_progress += 1
            self.max_in_progress = max(self.max_in_progress, self.in_progress)
            self._notify()
            reply = self.handler(request)
            try:
                if reply.hang:
                    await self._stopped.wait()
                    return
                if self.service_time:
                    await asyncio.sleep(self.service_time)
                if reply.raw is not None:
                    writer.write(reply.raw)
                else:
                    self.heads.append(reply.head())
                    writer.write(reply.head() + reply.payload())
                await writer.drain()
            except ConnectionError:
                return
            finally:
                self.in_progress -= 1
            self.answered.append(time.monotonic())
            self._notify()
            if reply.close:
                return


def _parse(head: bytes, connection: int) -> Request:
    lines = head.decode("latin-1").split("\r\n")
    _, target, _ = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return Request(time.monotonic(), target, headers, connection)


@dataclass
class Site:
    """Servers on one port of several addresses, all answering with the same handler."""

    port: int
    servers: dict[str, Server]

    def url(self, host: str, target: str = "/") -> str:
        return f"http://{host}:{self.port}{target}"

    def times(self) -> list[tuple[float, str]]:
        """Every request's time and the address it came to, in order."""
        return sorted((r.time, s.address) for s in self.servers.values() for r in s.requests)


Serve = Callable[..., Awaitable[Site]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """`await serve(handler, *addresses, service_time=0.0)`: a Site, stopped after the test."""
    started: list[Server] = []

    async def start(handler: Handler, *addresses: str, service_time: float = 0.0) -> Site:
        for _ in range(20):  # another program may hold the port on a later address
            servers = [Server(address, handler, service_time) for address in addresses or (A,)]
            started.extend(servers)
            try:
                port = await servers[0].listen(0)
                for server in servers[1:]:
                    await server.listen(port)
            except OSError:
                for server in servers:
                    await server.stop()
                continue
            return Site(port, {server.address: server for server in servers})
        raise AssertionError(f"no port free on all of {addresses}")

    yield start
    for server in started:
        await server.stop()


def fetcher(spool: Path, hosts: dict[str, list[str]], **politeness: Any) -> Fetcher:
    """A Fetcher with `hosts` pinned and no temporisation unless asked for."""
    politeness.setdefault("delay", 0.0)
    return Fetcher(Politeness(**politeness), Resolver(hosts), spool)


def pages(request: Request) -> Reply:
    """A distinct body per target, header names in mixed case."""
    body = f"the page at {request.target}\n".encode() * 3
    return Reply(headers=[("X-Served-By", "test"), ("content-TYPE", "text/plain")], body=body)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- one connection, kept alive; responses as they were sent --------------------------------


async def test_twenty_sequential_fetches_use_one_kept_alive_connection(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        results = [await client.fetch(site.url(HOST_A, f"/page/{i}")) for i in range(20)]
        assert client.connections_opened == 1
    assert server.accepted == 1
    assert [r.target for r in server.requests] == [f"/page/{i}" for i in range(20)]
    assert {r.connection for r in server.requests} == {1}
    for i, (fetched, head) in enumerate(zip(results, server.heads, strict=True)):
        body = f"the page at /page/{i}\n".encode() * 3
        assert fetched.url == site.url(HOST_A, f"/page/{i}")
        assert (fetched.status, fetched.reason) == (200, "OK")
        assert fetched.body.data == body
        assert fetched.body.path is None
        assert (fetched.size, fetched.truncated) == (len(body), False)
        assert fetched.sha256 == sha256(body)
        assert fetched.header_block == head
        assert fetched.header_block.startswith(b"HTTP/1.1 200 OK\r\n")
        assert fetched.header_block.endswith(b"\r\n\r\n")
        assert b"\r\ncontent-TYPE: text/plain\r\n" in fetched.header_block
        assert ("content-TYPE", "text/plain") in fetched.headers
        assert fetched.content_type == "text/plain"
        assert abs(fetched.time / 1e6 - time.time()) < 60


async def test_status_and_reason_are_kept_as_sent(serve: Serve, tmp_path: Path) -> None:
    site = await serve(lambda r: Reply(404, "Nowhere To Be Found", body=b"gone"))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        fetched = await client.fetch(site.url(HOST_A, "/missing"))
    assert (fetched.status, fetched.reason) == (404, "Nowhere To Be Found")
    assert fetched.header_block.startswith(b"HTTP/1.1 404 Nowhere To Be Found\r\n")
    assert fetched.body.data == b"gone"


async def test_request_carries_host_user_agent_target_and_extra_headers(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages)
    async with fetcher(tmp_path, {HOST_A: [A]}, user_agent="test-agent/1") as client:
        await client.fetch(site.url(HOST_A, "/search?q=1&r=2"), [("If-None-Match", '"v1"')])
    (request,) = site.servers[A].requests
    assert request.target == "/search?q=1&r=2"
    assert request.headers["host"] == f"{HOST_A}:{site.port}"
    assert request.headers["user-agent"] == "test-agent/1"
    assert request.headers["if-none-match"] == '"v1"'


async def test_chunked_response_is_stored_dechunked(serve: Serve, tmp_path: Path) -> None:
    body = b"".join(b"line %d of a chunked body\n" % i for i in range(40))
    site = await serve(lambda r: Reply(body=body, chunked=True))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        first = await client.fetch(site.url(HOST_A, "/one"))
        second = await client.fetch(site.url(HOST_A, "/two"))
    for fetched in (first, second):
        assert fetched.body.data == body
        assert fetched.size == len(body)
        assert fetched.sha256 == sha256(body)
        assert b"\r\nTransfer-Encoding: chunked\r\n" in fetched.header_block
    assert site.servers[A].accepted == 1  # the end of a chunked body leaves the connection usable


async def test_gzip_content_encoding_is_asked_for_and_kept_as_sent(
    serve: Serve, tmp_path: Path
) -> None:
    plain = b"compress me, but store me compressed\n" * 100
    packed = gzip.compress(plain)
    site = await serve(lambda r: Reply(headers=[("Content-Encoding", "gzip")], body=packed))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        fetched = await client.fetch(site.url(HOST_A, "/packed"))
        given = await client.fetch(site.url(HOST_A, "/own"), [("Accept-Encoding", "identity")])
    first, second = site.servers[A].requests
    assert first.headers["accept-encoding"] == "gzip"  # Brotli over HTTPS only, as browsers
    assert second.headers["accept-encoding"] == "identity"  # a caller's replaces the crawler's
    assert fetched.body.data == packed
    assert fetched.size == len(packed)
    assert fetched.sha256 == sha256(packed)
    assert fetched.header("content-encoding") == "gzip"
    assert fetched.decoded(1 << 20) == plain
    assert fetched.decoded(10) == plain[:10]  # a bomb is cut where the reader stops
    given.body.discard()


async def test_a_brotli_body_is_decoded_for_its_readers(serve: Serve, tmp_path: Path) -> None:
    plain = b"body { color: red }\n" * 50
    packed = brotlicffi.compress(plain)
    site = await serve(lambda r: Reply(headers=[("Content-Encoding", "br")], body=packed))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        fetched = await client.fetch(site.url(HOST_A, "/style.css"))
    assert fetched.body.data == packed and fetched.decoded(1 << 20) == plain


async def test_a_body_whose_coding_is_damaged_or_unknown_is_not_decoded(
    serve: Serve, tmp_path: Path
) -> None:
    def coded(request: Request) -> Reply:
        coding = "gzip" if request.target == "/damaged" else "x-unheard-of"
        return Reply(headers=[("Content-Encoding", coding)], body=b"not what it says")

    site = await serve(coded)
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        for path in ("/damaged", "/unknown"):
            fetched = await client.fetch(site.url(HOST_A, path))
            with pytest.raises(BadCoding):
                fetched.decoded(1 << 20)
            assert fetched.body.data == b"not what it says"  # stored as sent all the same


OLD_STYLE_HEAD = b"HTTP/1.1 200 OK\r\nX-Old: yes\r\n\r\n"  # no length, no chunks, no close
OLD_STYLE_BODY = b"the end of the connection ends me\n" * 50


def old_style(request: Request) -> Reply:
    """A body the server ends by closing the connection, as HTTP/1.0 servers did."""
    if request.target == "/old":
        return Reply(raw=OLD_STYLE_HEAD + OLD_STYLE_BODY, close=True)
    return Reply(body=b"framed")


async def test_body_ended_by_the_connection_close_is_read_whole(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(old_style)
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        fetched = await client.fetch(site.url(HOST_A, "/old"))
    assert fetched.body.data == OLD_STYLE_BODY
    assert (fetched.size, fetched.sha256) == (len(OLD_STYLE_BODY), sha256(OLD_STYLE_BODY))
    assert fetched.header_block == OLD_STYLE_HEAD


async def test_after_a_body_ended_by_the_close_the_next_fetch_opens_a_new_connection(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(old_style)
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        await client.fetch(site.url(HOST_A, "/old"))
        fetched = await client.fetch(site.url(HOST_A, "/next"))
    assert fetched.body.data == b"framed"
    assert site.servers[A].accepted == 2


async def test_large_body_is_spooled_to_a_file(serve: Serve, tmp_path: Path) -> None:
    body = bytes(range(256)) * ((IN_MEMORY + 100_000) // 256)
    site = await serve(lambda r: Reply(body=body))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        fetched = await client.fetch(site.url(HOST_A, "/large"))
    assert fetched.body.path is not None
    assert fetched.body.path.parent == tmp_path
    assert fetched.body.path.read_bytes() == body
    assert b"".join(fetched.body.chunks()) == body
    assert (fetched.size, fetched.sha256) == (len(body), sha256(body))
    spooled = fetched.body.path
    fetched.body.discard()
    assert not spooled.exists()


# -- one request at a time per server address ---------------------------------------------


async def test_concurrent_fetches_to_one_host_never_overlap_at_its_server(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages, service_time=0.02)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        results = await asyncio.gather(
            *(client.fetch(site.url(HOST_A, f"/{i}")) for i in range(10))
        )
    assert [f.body.data for f in results] == [f"the page at /{i}\n".encode() * 3 for i in range(10)]
    assert len(server.requests) == 10
    assert server.max_in_progress == 1
    assert server.accepted == 1


async def test_two_host_names_on_one_address_share_its_one_connection(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages, service_time=0.02)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A], HOST_C: [A]}) as client:
        await asyncio.gather(
            *(client.fetch(site.url(host, f"/{i}")) for i in range(5) for host in (HOST_A, HOST_C))
        )
    assert len(server.requests) == 10
    assert {r.headers["host"] for r in server.requests} == {
        f"{HOST_A}:{site.port}",
        f"{HOST_C}:{site.port}",
    }
    assert server.max_in_progress == 1
    assert server.accepted == 1


async def test_hosts_on_different_addresses_are_fetched_each_one_at_a_time(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages, A, B, service_time=0.02)
    async with fetcher(tmp_path, {HOST_A: [A], HOST_B: [B]}) as client:
        await asyncio.gather(
            *(client.fetch(site.url(host, f"/{i}")) for i in range(5) for host in (HOST_A, HOST_B))
        )
    for address, host in ((A, HOST_A), (B, HOST_B)):
        server = site.servers[address]
        assert len(server.requests) == 5  # both got theirs; they may have overlapped
        assert {r.headers["host"] for r in server.requests} == {f"{host}:{site.port}"}
        assert server.max_in_progress == 1
        assert server.accepted == 1


# -- round-robin over a host's addresses ---------------------------------------------------


async def test_resolver_gives_a_hosts_addresses_in_turn() -> None:
    resolver = Resolver({"WWW.RR.test": [A, B]})
    turns = [await resolver.next_address(HOST_RR, 80) for _ in range(5)]
    assert turns == [A, B, A, B, A]


async def test_each_new_connection_takes_the_hosts_next_address(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(lambda r: Reply(body=b"closing", close=True), A, B)
    async with fetcher(tmp_path, {HOST_RR: [A, B]}) as client:
        for i in range(6):
            fetched = await client.fetch(site.url(HOST_RR, f"/{i}"))
            assert fetched.body.data == b"closing"
    assert sum(s.accepted for s in site.servers.values()) == 6  # one connection per fetch
    assert [address for _, address in site.times()] == [A, B, A, B, A, B]


# -- idle connections closed ---------------------------------------------------------------


async def test_idle_connection_is_closed_by_the_client(serve: Serve, tmp_path: Path) -> None:
    site = await serve(pages)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}, idle_close=0.3) as client:
        await client.fetch(site.url(HOST_A, "/first"))
        await server.until(lambda: bool(server.client_closed), "the idle connection to close")
        idle = server.client_closed[0] - server.answered[0]
        assert 0.3 - 1e-3 <= idle < 3.0
        fetched = await client.fetch(site.url(HOST_A, "/second"))  # on a new connection
    assert fetched.body.data == b"the page at /second\n" * 3
    assert server.accepted == 2
    assert [r.connection for r in server.requests] == [1, 2]


# -- temporisation paid in bursts ----------------------------------------------------------


async def test_temporisation_is_paid_in_bursts_on_a_new_connection(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}, delay=0.1, burst=0.5) as client:
        for i in range(12):
            await client.fetch(site.url(HOST_A, f"/{i}"))
    times = [r.time for r in server.requests]
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    pauses = [i for i, gap in enumerate(gaps) if gap >= 0.45]
    # 0.1 s owed per request: 0.5 s is paid once five requests are done, before the sixth.
    assert pauses == [4, 9], gaps
    assert all(gaps[i] < 3.0 for i in pauses), gaps
    short = [gap for i, gap in enumerate(gaps) if i not in pauses]
    assert statistics.median(short) < 0.08, gaps  # not 0.1 s paid after every request
    assert server.accepted == 3
    assert [r.connection for r in server.requests] == [1] * 5 + [2] * 5 + [3] * 2


# -- rate limits per period ----------------------------------------------------------------

PERIOD = 0.6
# The limit's period opens with the Fetcher, a moment before its first request reaches the
# server: a request counted in the first period may arrive that much after the period began.
START_SLACK = 0.1


def assert_at_most_three_per_period(times: list[float], started: float) -> None:
    assert len(times) == 7
    assert times[2] - times[0] < PERIOD  # up to the limit, nothing waits
    assert times[-1] - started >= 2 * PERIOD - 0.01  # seven requests need three periods
    for first, fourth in zip(times, times[3:], strict=False):
        assert fourth - first >= PERIOD - START_SLACK, times


async def test_page_limit_per_period(serve: Serve, tmp_path: Path) -> None:
    site = await serve(pages)
    started = time.monotonic()
    async with fetcher(tmp_path, {HOST_A: [A]}, max_pages=3, period=PERIOD) as client:
        for i in range(7):
            await client.fetch(site.url(HOST_A, f"/{i}"))
    assert_at_most_three_per_period([r.time for r in site.servers[A].requests], started)


async def test_byte_limit_per_period(serve: Serve, tmp_path: Path) -> None:
    site = await serve(lambda r: Reply(body=b"x" * 1000))
    started = time.monotonic()
    async with fetcher(tmp_path, {HOST_A: [A]}, max_bytes=3000, period=PERIOD) as client:
        for i in range(7):
            fetched = await client.fetch(site.url(HOST_A, f"/{i}"))
            assert fetched.size == 1000
    assert_at_most_three_per_period([r.time for r in site.servers[A].requests], started)


# -- errors --------------------------------------------------------------------------------


async def test_connection_refused_is_a_connect_error(tmp_path: Path) -> None:
    with socket.socket() as bound:  # bound, not listening: connections to it are refused
        bound.bind((A, 0))
        port = bound.getsockname()[1]
        async with fetcher(tmp_path, {HOST_A: [A]}) as client:
            with pytest.raises(FetchError) as caught:
                await client.fetch(f"http://{HOST_A}:{port}/")
    assert caught.value.kind == "connect"


async def test_server_that_never_answers_is_a_timeout(serve: Serve, tmp_path: Path) -> None:
    site = await serve(lambda r: Reply(hang=True))
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}, read_timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(FetchError) as caught:
            await client.fetch(site.url(HOST_A, "/silent"))
        waited = time.monotonic() - started
    assert caught.value.kind == "timeout"
    assert 0.3 - 0.01 <= waited < 5.0
    assert len(server.requests) == 1  # the request did arrive


async def test_garbage_instead_of_a_status_line_is_a_protocol_error(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(lambda r: Reply(raw=b"SSH-2.0-OpenSSH_9.6\r\nnot HTTP at all\r\n\r\n"))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        with pytest.raises(FetchError) as caught:
            await client.fetch(site.url(HOST_A, "/"))
    assert caught.value.kind == "protocol"


async def test_garbage_then_close_is_a_protocol_error(serve: Serve, tmp_path: Path) -> None:
    site = await serve(lambda r: Reply(raw=b"<html>not HTTP, then hung up</html>\n", close=True))
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        with pytest.raises(FetchError) as caught:
            await client.fetch(site.url(HOST_A, "/"))
    assert caught.value.kind == "protocol"


@pytest.mark.parametrize(
    "url",
    ["ftp://www.a.test/file", "http:///no-host", "http://www.a.test:99999/", "www.a.test/"],
)
async def test_invalid_url_is_refused_before_any_connection(url: str, tmp_path: Path) -> None:
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        with pytest.raises(FetchError) as caught:
            await client.fetch(url)
        assert client.connections_opened == 0
    assert caught.value.kind == "invalid-url"


async def test_body_over_max_size_is_truncated_and_the_server_still_usable(
    serve: Serve, tmp_path: Path
) -> None:
    big = bytes(range(256)) * 20

    def handler(request: Request) -> Reply:
        return Reply(body=big if request.target == "/big" else b"small")

    site = await serve(handler)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}, max_size=1000) as client:
        truncated = await client.fetch(site.url(HOST_A, "/big"))
        after = await client.fetch(site.url(HOST_A, "/small"))
    assert truncated.truncated
    assert truncated.size == 1000
    assert truncated.body.data == big[:1000]
    assert truncated.sha256 == sha256(big[:1000])
    assert (after.truncated, after.body.data) == (False, b"small")
    assert server.accepted == 2  # the cut connection was not used again
    assert [r.connection for r in server.requests] == [1, 2]


async def test_kept_alive_connection_closed_by_the_server_is_reopened(
    serve: Serve, tmp_path: Path
) -> None:
    site = await serve(pages)
    server = site.servers[A]
    async with fetcher(tmp_path, {HOST_A: [A]}) as client:
        await client.fetch(site.url(HOST_A, "/before"))
        await server.hang_up()
        assert server.open == 0
        fetched = await client.fetch(site.url(HOST_A, "/after"))
        assert client.connections_opened == 2
    assert fetched.status == 200
    assert fetched.body.data == b"the page at /after\n" * 3
    assert server.accepted == 2
    assert [(r.target, r.connection) for r in server.requests] == [("/before", 1), ("/after", 2)]
