"""Downloading, politely: one connection per server, one request at a time on it.

The client is h11 over asyncio streams rather than a pooled HTTP library because politeness is
about connections: each server address gets exactly one, reused while requests follow each
other, closed when idle for 15 s or when the accumulated temporisation is spent as one pause.
The response's status line and header fields are kept as they arrived, the body as it was sent
(chunked transfer coding removed, content coding kept) and hashed with SHA-256 while it arrives.
Every request asks for a compressed answer (ACCEPT_ENCODING): a server compresses what
compresses (HTML, CSS, scripts, JSON, XML, text), the archive stores it as sent, and readers of its
text undo the coding within a bound (`Fetched.decoded`). Brotli is asked for over HTTPS only, as
browsers ask: a capture is replayed to a browser over its own scheme, and a browser reads no
Brotli over plain HTTP.
"""

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import h11

from archive.content_coding import inflate
from archive.errors import DlwebError

__all__ = ["Body", "FetchError", "Fetched", "Fetcher", "Politeness", "Resolver"]

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
IN_MEMORY = 4 * 1024 * 1024
USER_AGENT = "dlweb-crawler/0.1 (web archive; +https://github.com/dlweb)"
ACCEPT_ENCODING = {"https": "gzip, br", "http": "gzip"}


class FetchError(DlwebError):
    """A download that gave no response; `kind` names the cause for the site's report."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Politeness:
    """How hard one site's servers may be asked."""

    delay: float = 1.0  # seconds owed to a server after each request
    burst: float = (
        10.0  # owed time is paid as one pause, with the connection closed, once this large
    )
    idle_close: float = 15.0
    max_pages: int = 0  # per period and site; 0: no limit
    max_bytes: int = 0
    period: float = 60.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_time: float = 300.0  # for one whole response
    max_size: int = 100 * 1024 * 1024
    retries: int = 2  # tries more of a fetch that failed for a reason that may pass (retries.py)
    retry_delay: float = 5.0  # seconds before the first of them; twice as long each time
    user_agent: str = USER_AGENT


class Resolver:
    """Host names to addresses: `--resolve` entries first, the system's resolver otherwise.

    A host with several addresses is served round-robin, one address per new connection.
    """

    def __init__(self, pinned: dict[str, list[str]] | None = None) -> None:
        self.pinned = {host.lower(): list(addresses) for host, addresses in (pinned or {}).items()}
        self._turns: dict[str, Iterator[str]] = {}

    async def next_address(self, host: str, port: int) -> str:
        host = host.lower()
        turn = self._turns.get(host)
        if turn is None:
            addresses = self.pinned.get(host) or await self._lookup(host, port)
            turn = self._turns[host] = itertools.cycle(addresses)
        return next(turn)

    async def _lookup(self, host: str, port: int) -> list[str]:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=1)
        except OSError as exc:
            raise FetchError("dns", f"cannot resolve {host}: {exc}") from None
        return list(dict.fromkeys(str(info[4][0]) for info in infos)) or [host]


@dataclass
class Body:
    """A response body: in memory, or in a file once it outgrew IN_MEMORY."""

    data: bytes = b""
    path: Path | None = None

    def chunks(self, size: int = READ_SIZE) -> Iterator[bytes]:
        if self.path is None:
            for start in range(0, len(self.data), size):
                yield self.data[start : start + size]
            return
        with self.path.open("rb") as source:
            while chunk := source.read(size):
                yield chunk

    def head(self, size: int = 512) -> bytes:
        return next(self.chunks(size), b"")

    def discard(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
        self.data = b""


@dataclass
class Fetched:
    url: str
    time: int  # capture time, microseconds since the epoch, when the response began
    status: int
    reason: str
    header_block: bytes
    headers: list[tuple[str, str]]
    body: Body
    sha256: str
    size: int
    truncated: bool = False

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    @property
    def content_type(self) -> str | None:
        return self.header("content-type")

    def decoded(self, cap: int) -> bytes:
        """The body with its content coding undone, its first `cap` bytes at most (a bomb is
        never made whole); BadCoding when the coding is damaged or not one read here."""
        coding = self.header("content-encoding") or ""
        return inflate(coding, b"".join(self.body.chunks()), cap, whole=False, cut=True)


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    http: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    last_used: float = field(default_factory=time.monotonic)

    def close(self) -> None:
        self.writer.close()


@dataclass
class _Server:
    """One server address: its connection, its lock and the temporisation it is owed."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    connection: _Connection | None = None
    owed: float = 0.0

    def drop(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Fetcher:
    """Use as `async with Fetcher(politeness, resolver, spool_dir) as fetcher:`."""

    def __init__(self, politeness: Politeness, resolver: Resolver, spool: Path) -> None:
        self.politeness = politeness
        self.resolver = resolver
        self.spool = spool
        self._servers: dict[tuple[str, int, str], _Server] = {}
        self._addresses: dict[tuple[str, int, str], str] = {}
        self._reaper: asyncio.Task[None] | None = None
        self.connections_opened = 0
        self._window = (time.monotonic(), 0, 0)  # start, requests, bytes

    async def __aenter__(self) -> "Fetcher":
        self._reaper = asyncio.create_task(self._close_idle())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        for server in self._servers.values():
            server.drop()

    def set_delay(self, delay: float) -> None:
        """A larger delay asked for by a site (robots.txt Crawl-delay) replaces the default."""
        self.politeness.delay = max(self.politeness.delay, delay)

    async def _close_idle(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.politeness.idle_close / 4))
            now = time.monotonic()
            for server in self._servers.values():
                connection = server.connection
                if (
                    connection is not None
                    and not server.lock.locked()
                    and now - connection.last_used >= self.politeness.idle_close
                ):
                    server.drop()

    async def fetch(
        self,
        url: str,
        extra_headers: list[tuple[str, str]] | None = None,
        method: str = "GET",
        body: bytes | None = None,
    ) -> Fetched:
        """Ask for one URL (GET unless told), waiting for its server to be free and for the
        temporisation owed to it."""
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
        if scheme not in ("http", "https") or not host:
            raise FetchError("invalid-url", f"cannot fetch {url!r}: not an http(s) URL with a host")
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise FetchError("invalid-url", f"cannot fetch {url!r}: bad port") from None
        sni = host if scheme == "https" else ""
        name = (host.lower(), port, scheme)
        address = self._addresses.get(name, "")
        server = self._servers.get((address, port, sni))
        if server is None or (server.connection is None and not server.lock.locked()):
            # A new connection is needed: it goes to the host's next address, in turn.
            address = self._addresses[name] = await self.resolver.next_address(host, port)
            server = self._servers.setdefault((address, port, sni), _Server())
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc.rpartition("@")[2]
        async with server.lock:
            await self._within_limits()
            await self._pay(server)
            request = h11.Request(
                method=method,
                target=target.encode("ascii", "replace"),
                headers=self._headers(scheme, netloc, extra_headers, body),
            )
            try:
                # A timeout scope, not wait_for: no task made for each request (nor for each read).
                async with asyncio.timeout(self.politeness.max_time):
                    return await self._exchange(server, address, port, sni, url, request, body)
            except TimeoutError:
                server.drop()
                raise FetchError(
                    "timeout", f"{url}: no complete response in {self.politeness.max_time:g} s"
                ) from None
            finally:
                server.owed += self.politeness.delay
                start, requests, size = self._window
                self._window = (start, requests + 1, size)

    def _count_bytes(self, size: int) -> None:
        start, requests, total = self._window
        self._window = (start, requests, total + size)

    async def _within_limits(self) -> None:
        """Wait out the period once the site's pages or bytes for it are used up."""
        limits = self.politeness
        start, requests, size = self._window
        now = time.monotonic()
        if now - start >= limits.period:
            self._window = (now, 0, 0)
            return
        if (limits.max_pages and requests >= limits.max_pages) or (
            limits.max_bytes and size >= limits.max_bytes
        ):
            for server in self._servers.values():
                server.drop()
            await asyncio.sleep(start + limits.period - now)
            self._window = (time.monotonic(), 0, 0)

    async def _pay(self, server: _Server) -> None:
        """Spend the owed temporisation as one pause, connection closed, once it adds up."""
        if server.owed >= self.politeness.burst or (server.connection is None and server.owed > 0):
            server.drop()
            await asyncio.sleep(server.owed)
            server.owed = 0.0

    async def _connect(self, address: str, port: int, sni: str) -> _Connection:
        timeout = self.politeness.connect_timeout
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    address, port, ssl=tls_context() if sni else None, server_hostname=sni or None
                )
        except TimeoutError:
            raise FetchError(
                "timeout", f"{address}:{port}: no connection in {timeout:g} s"
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise FetchError("connect", f"{address}:{port}: cannot connect: {exc}") from None
        self.connections_opened += 1
        return _Connection(reader, writer)

    def _headers(
        self, scheme: str, netloc: str, extra: list[tuple[str, str]] | None, body: bytes | None
    ) -> list[tuple[str, str]]:
        """The crawler's own fields, then the caller's (an Accept or Accept-Encoding of its own
        replaces ours)."""
        given = {name.lower() for name, _ in extra or ()}
        headers = [("Host", netloc), ("User-Agent", self.politeness.user_agent)]
        if "accept" not in given:
            headers.append(("Accept", "*/*"))
        if "accept-encoding" not in given:
            headers.append(("Accept-Encoding", ACCEPT_ENCODING[scheme]))
        headers.extend(extra or ())
        if body is not None:
            headers.append(("Content-Length", str(len(body))))
        return headers

    async def _exchange(
        self,
        server: _Server,
        address: str,
        port: int,
        sni: str,
        url: str,
        request: h11.Request,
        body: bytes | None,
    ) -> Fetched:
        for attempt in (1, 2):
            reused = server.connection is not None
            if server.connection is None:
                server.connection = await self._connect(address, port, sni)
            connection = server.connection
            try:
                head = connection.http.send(request) or b""
                if body:
                    head += connection.http.send(h11.Data(data=body)) or b""
                connection.writer.write(head + (connection.http.send(h11.EndOfMessage()) or b""))
                await connection.writer.drain()
                return await self._receive(server, connection, url)
            except _StaleConnection:
                # A kept-alive connection the server had closed: say it again on a new one.
                server.drop()
                if attempt == 2 or not reused:
                    raise FetchError(
                        "connection", f"{url}: the server closed the connection"
                    ) from None
            except (ConnectionError, OSError) as exc:
                server.drop()
                if attempt == 2 or not reused:
                    raise FetchError("connection", f"{url}: {exc}") from None
            except h11.RemoteProtocolError as exc:
                server.drop()
                raise FetchError("protocol", f"{url}: not a valid HTTP response: {exc}") from None
            except BaseException:
                server.drop()  # a connection left mid-exchange cannot carry another request
                raise
        raise AssertionError("unreachable")

    async def _read(self, connection: _Connection, url: str) -> bytes:
        try:
            async with asyncio.timeout(self.politeness.read_timeout):
                return await connection.reader.read(READ_SIZE)
        except TimeoutError:
            raise FetchError(
                "timeout", f"{url}: nothing received for {self.politeness.read_timeout:g} s"
            ) from None

    async def _next_event(self, connection: _Connection, url: str, started: bool) -> object:
        while True:
            event = connection.http.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self._read(connection, url)
            if not data and not started and not connection.http.trailing_data[0]:
                raise _StaleConnection
            connection.http.receive_data(data)

    async def _receive(self, server: _Server, connection: _Connection, url: str) -> Fetched:
        event = await self._next_event(connection, url, started=False)
        while isinstance(event, h11.InformationalResponse):
            event = await self._next_event(connection, url, started=True)
        if not isinstance(event, h11.Response):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        captured = time.time_ns() // 1000
        version = event.http_version.decode("ascii", "replace")
        reason = event.reason.decode("latin-1")
        raw = list(event.headers.raw_items())
        block = b"".join(
            [f"HTTP/{version} {event.status_code} ".encode() + event.reason + b"\r\n"]
            + [name + b": " + value + b"\r\n" for name, value in raw]
            + [b"\r\n"]
        )
        fields = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in raw]
        body, digest, size, truncated = await self._body(connection, url)
        self._count_bytes(size)
        connection.last_used = time.monotonic()
        if (
            truncated
            or connection.reader.at_eof()  # the body ended with the connection
            or connection.http.our_state is not h11.DONE
            or connection.http.their_state is not h11.DONE
        ):
            server.drop()
        else:
            connection.http.start_next_cycle()
        return Fetched(
            url=url,
            time=captured,
            status=event.status_code,
            reason=reason,
            header_block=block,
            headers=fields,
            body=body,
            sha256=digest,
            size=size,
            truncated=truncated,
        )

    async def _body(self, connection: _Connection, url: str) -> tuple[Body, str, int, bool]:
        digest = hashlib.sha256()
        parts: list[bytes] = []
        size = 0
        spill = None
        limit = self.politeness.max_size
        try:
            while True:
                event = await self._next_event(connection, url, started=True)
                if isinstance(event, h11.EndOfMessage):
                    break
                if isinstance(event, h11.ConnectionClosed):
                    break
                if not isinstance(event, h11.Data):
                    continue
                data = bytes(event.data)
                if size + len(data) > limit:
                    data = data[: limit - size]
                    digest.update(data)
                    size += len(data)
                    parts.append(data)
                    return self._finish(parts, spill), digest.hexdigest(), size, True
                digest.update(data)
                size += len(data)
                parts.append(data)
                if size > IN_MEMORY and spill is None:
                    spill = tempfile.NamedTemporaryFile(  # noqa: SIM115 (outlives the loop)
                        dir=self.spool, prefix="body-", delete=False
                    )
                if spill is not None:
                    spill.write(b"".join(parts))
                    parts.clear()
        except BaseException:
            if spill is not None:
                spill.close()
                os.unlink(spill.name)
            raise
        return self._finish(parts, spill), digest.hexdigest(), size, False

    @staticmethod
    def _finish(parts: list[bytes], spill: "tempfile._TemporaryFileWrapper[bytes] | None") -> Body:
        if spill is None:
            return Body(b"".join(parts))
        spill.write(b"".join(parts))
        spill.close()
        return Body(path=Path(spill.name))


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for all; no certificate store, as none is checked."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # An archive keeps what the server sent, whatever its certificate says.
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class _StaleConnection(Exception):
    """The server closed a kept-alive connection before answering."""
