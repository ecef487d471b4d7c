"""Opening an endless HTTP response: an Icecast or SHOUTcast stream, or progressive audio.

h11 reads the response's head, as in the site crawler's fetcher, and a body framed by chunks or
a length; SHOUTcast's `ICY 200 OK` status line is read as HTTP/1.0. A body that runs until the
connection closes (Icecast, SHOUTcast, most radios) is taken straight from the connection. The
header block is kept as the server sent it, for the archive. Redirects are followed.

A live body is read in few large pieces (`read_live`, link.py): between two reads its bytes
gather in the connection's buffer, so that what a read costs is paid once for many frames, and a
silent server is noticed by the clock between reads rather than by a timeout around each.
"""

import asyncio
import math
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import h11

from ..fetch import USER_AGENT, FetchError, Resolver
from .link import Link, connect

__all__ = ["LIVE_INTERVAL", "StreamResponse", "open_stream"]

MAX_REDIRECTS = 5
MAX_HEADER_BYTES = 64 * 1024
LIVE_INTERVAL = 2.0  # seconds between two reads of a live body, at most (sooner when much came)


@dataclass
class StreamResponse:
    url: str  # after redirects
    status: int
    reason: str
    header_block: bytes  # as received (an ICY status line stays as it was)
    headers: list[tuple[str, str]]
    _link: Link
    _parser: h11.Connection | None  # None: a body that runs until the connection closes
    _timeout: float
    _early: bytes = b""  # body bytes that came with the header block, when read without h11
    _ended: bool = False
    # Live reads fall due on a grid of event loop times from the body's first piece (`_start`),
    # as far apart as the reader asks: what a recorder does every few seconds falls due on a
    # read, not just before one.
    _start: float = 0.0
    _due: float = 0.0  # the next live read; 0: one interval after the start
    _heard: float = field(default_factory=lambda: asyncio.get_running_loop().time())

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";")[0].strip().lower()

    @property
    def arrived(self) -> int:
        """When the last bytes read arrived, in microseconds since the epoch."""
        return self._link.arrived

    async def read(self) -> bytes:
        """The next piece of the body, as soon as it comes; b"" once it ended.
        FetchError("stalled") when the server sent nothing for the timeout, ("dropped") when the
        connection broke."""
        data = await self._next()
        if data and not self._start:
            now = asyncio.get_running_loop().time()
            self._start = self._heard = now
        return data

    async def _next(self) -> bytes:
        if self._early:
            early, self._early = self._early, b""
            return early
        while not self._ended:
            if self._parser is None:
                received = await self._receive()
                self._ended = not received
                return received
            data = self._decoded()
            if data is not None:
                return data
            self._parser.receive_data(await self._receive())
        return b""

    async def read_live(self, interval: float) -> bytes:
        """The body's bytes that came since the last read, read every `interval` seconds (up to
        LIVE_INTERVAL), or sooner when the connection ended or much came; b"" once it ended.
        FetchError as `read`."""
        if self._early:
            return await self.read()
        loop = asyncio.get_running_loop()
        while not self._ended:
            if not self._due:
                self._due = self._start + interval
            if self._due > loop.time():
                await self._link.wait(self._due)
            now = loop.time()
            taken = self._take()
            if taken is None:
                if now - self._heard >= self._timeout:
                    raise self._stalled()
                self._due = min(self._next_read(now, interval), self._heard + self._timeout)
                continue
            self._due = now if self._link.ended else self._next_read(now, interval)
            self._heard = now
            data = self._body(taken)
            if data is not None:
                return data
        return b""

    def read_waiting(self) -> bytes:
        """The body's bytes that came and were not read yet, without waiting (what a recording
        stopped now still keeps); b"" when there are none or the connection broke."""
        early, self._early = self._early, b""
        try:
            taken = self._take()
            data = self._body(taken) if taken else None
        except FetchError:
            data = None
        return early + (data or b"")

    def _next_read(self, now: float, interval: float) -> float:
        """The time on the grid of live reads that follows the one nearest `now`."""
        return self._start + (math.floor((now - self._start) / interval + 0.5) + 1) * interval

    def _body(self, taken: bytes) -> bytes | None:
        """The body bytes in what came from the connection (b"" at its end); None when they were
        only framing."""
        if self._parser is None:
            self._ended = not taken
            return taken
        self._parser.receive_data(taken)
        return self._decoded()

    def _decoded(self) -> bytes | None:
        """The body bytes h11 has; b"" once the body ended, None when it needs more."""
        assert self._parser is not None
        pieces = []
        while not self._ended:
            try:
                event = self._parser.next_event()
            except h11.RemoteProtocolError as exc:
                raise FetchError("dropped", f"{self.url}: {exc}") from None
            if event is h11.NEED_DATA:
                break
            if isinstance(event, h11.Data):
                pieces.append(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                self._ended = True
            else:
                raise FetchError("protocol", f"{self.url}: unexpected {type(event).__name__}")
        if pieces:
            return b"".join(pieces)
        return b"" if self._ended else None

    async def _receive(self) -> bytes:
        try:
            # asyncio.timeout, not wait_for: no task made for each read.
            async with asyncio.timeout(self._timeout):
                return await self._link.receive()
        except TimeoutError:
            raise self._stalled() from None
        except OSError as exc:
            raise FetchError("dropped", f"{self.url}: connection lost: {exc}") from None

    def _stalled(self) -> FetchError:
        return FetchError("stalled", f"{self.url}: nothing received for {self._timeout:g} s")

    def _take(self) -> bytes | None:
        try:
            return self._link.take()
        except OSError as exc:
            raise FetchError("dropped", f"{self.url}: connection lost: {exc}") from None

    def close(self) -> None:
        self._link.close()


async def open_stream(
    url: str, resolver: Resolver, timeout: float, extra: list[tuple[str, str]] | None = None
) -> StreamResponse:
    """The response to a GET of `url` asking for ICY metadata, once its header block came."""
    for _ in range(MAX_REDIRECTS + 1):
        response = await _request(url, resolver, timeout, extra or [])
        location = response.header("location")
        if response.status in (301, 302, 303, 307, 308) and location:
            response.close()
            url = urljoin(url, location)
            continue
        return response
    raise FetchError("redirects", f"{url}: more than {MAX_REDIRECTS} redirects")


async def _request(
    url: str, resolver: Resolver, timeout: float, extra: list[tuple[str, str]]
) -> StreamResponse:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError("url", f"{url}: not an http:// or https:// URL")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    address = await resolver.next_address(parts.hostname, port)
    try:
        link = await asyncio.wait_for(connect(address, port, parts.hostname, secure), timeout)
    except TimeoutError:
        raise FetchError("timeout", f"{url}: no connection in {timeout:g} s") from None
    except OSError as exc:
        raise FetchError("connect", f"{url}: cannot connect: {exc}") from None
    parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [
        ("Host", parts.netloc),
        ("User-Agent", USER_AGENT),
        ("Accept", "*/*"),
        ("Icy-MetaData", "1"),
        ("Connection", "close"),
        *extra,
    ]
    request = parser.send(h11.Request(method="GET", target=target, headers=headers)) or b""
    try:
        await link.send(request + (parser.send(h11.EndOfMessage()) or b""))
        block, rest = await _header_block(link, url, timeout)
        # SHOUTcast 1 answers `ICY 200 OK`: h11 reads it as the HTTP/1.0 answer it is.
        parser.receive_data(b"HTTP/1.0" + block[3:] if block.startswith(b"ICY ") else block)
        event = parser.next_event()
    except h11.RemoteProtocolError as exc:
        link.close()
        raise FetchError("protocol", f"{url}: not an HTTP response: {exc}") from None
    except OSError as exc:
        link.close()
        raise FetchError("dropped", f"{url}: connection lost: {exc}") from None
    except FetchError:
        link.close()
        raise
    if not isinstance(event, h11.Response):
        link.close()
        raise FetchError("protocol", f"{url}: the response ended before its header block")
    raw = _until_close(event)
    if rest and not raw:
        parser.receive_data(rest)  # (nothing would mean the end of the connection to h11)
    return StreamResponse(
        url=url,
        status=event.status_code,
        reason=event.reason.decode("latin-1"),
        header_block=block,
        headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers],
        _link=link,
        _parser=None if raw else parser,
        _timeout=timeout,
        _early=rest if raw else b"",
    )


def _until_close(response: h11.Response) -> bool:
    """Whether the body runs until the connection closes, neither chunked nor of a length (as
    h11 frames it): then it is read without h11."""
    if response.status_code in (204, 304):
        return False
    names = {name for name, _ in response.headers}  # h11 gives them in lower case
    return b"transfer-encoding" not in names and b"content-length" not in names


async def _header_block(link: Link, url: str, timeout: float) -> tuple[bytes, bytes]:
    """The response's header block as sent (through its blank line), and the bytes after it."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        size = 4
        if end < 0:
            end, size = data.find(b"\n\n"), 2
        if end >= 0:
            return data[: end + size], data[end + size :]
        if len(data) > MAX_HEADER_BYTES:
            raise FetchError("protocol", f"{url}: header block over {MAX_HEADER_BYTES} bytes")
        try:
            async with asyncio.timeout(timeout):
                piece = await link.receive()
        except TimeoutError:
            raise FetchError("timeout", f"{url}: no answer in {timeout:g} s") from None
        if not piece:
            raise FetchError("protocol", f"{url}: the connection closed before a header block")
        data += piece
