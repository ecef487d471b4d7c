"""Opening an endless HTTP response: an Icecast or SHOUTcast stream, or progressive audio.

h11 reads the response, as in the site crawler's fetcher; SHOUTcast's `ICY 200 OK` status line
is read as HTTP/1.0 (a body that ends when the connection does). The header block is kept as the
server sent it, for the archive. Redirects are followed.
"""

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import h11

from ..fetch import USER_AGENT, FetchError, Resolver, tls_context

__all__ = ["StreamResponse", "open_stream"]

READ_SIZE = 64 * 1024
MAX_REDIRECTS = 5
MAX_HEADER_BYTES = 64 * 1024


@dataclass
class StreamResponse:
    url: str  # after redirects
    status: int
    reason: str
    header_block: bytes  # as received (an ICY status line stays as it was)
    headers: list[tuple[str, str]]
    _reader: asyncio.StreamReader
    _writer: asyncio.StreamWriter
    _parser: h11.Connection
    _timeout: float

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    @property
    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";")[0].strip().lower()

    async def read(self) -> bytes:
        """The next piece of the body; b"" once it ended. FetchError("stalled") when the server
        sent nothing for the timeout, ("dropped") when the connection broke."""
        while True:
            try:
                event = self._parser.next_event()
            except h11.RemoteProtocolError as exc:
                raise FetchError("dropped", f"{self.url}: {exc}") from None
            if event is h11.NEED_DATA:
                self._parser.receive_data(await self._read_socket())
                continue
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return b""
            raise FetchError("protocol", f"{self.url}: unexpected {type(event).__name__}")

    async def _read_socket(self) -> bytes:
        try:
            # asyncio.timeout, not wait_for: no task made for each read of each stream.
            async with asyncio.timeout(self._timeout):
                return await self._reader.read(READ_SIZE)
        except TimeoutError:
            raise FetchError(
                "stalled", f"{self.url}: nothing received for {self._timeout:g} s"
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise FetchError("dropped", f"{self.url}: connection lost: {exc}") from None

    def close(self) -> None:
        self._writer.close()


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
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                address,
                port,
                ssl=tls_context() if secure else None,
                server_hostname=parts.hostname if secure else None,
            ),
            timeout,
        )
    except TimeoutError:
        raise FetchError("timeout", f"{url}: no connection in {timeout:g} s") from None
    except (OSError, ssl.SSLError) as exc:
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
    writer.write(parser.send(h11.Request(method="GET", target=target, headers=headers)) or b"")
    writer.write(parser.send(h11.EndOfMessage()) or b"")
    try:
        block, rest = await _header_block(reader, url, timeout)
        # SHOUTcast 1 answers `ICY 200 OK`: h11 reads it as the HTTP/1.0 answer it is.
        parser.receive_data(b"HTTP/1.0" + block[3:] if block.startswith(b"ICY ") else block)
        if rest:
            parser.receive_data(rest)  # (nothing would mean the end of the connection to h11)
        event = parser.next_event()
    except h11.RemoteProtocolError as exc:
        writer.close()
        raise FetchError("protocol", f"{url}: not an HTTP response: {exc}") from None
    except FetchError:
        writer.close()
        raise
    if not isinstance(event, h11.Response):
        writer.close()
        raise FetchError("protocol", f"{url}: the response ended before its header block")
    return StreamResponse(
        url=url,
        status=event.status_code,
        reason=event.reason.decode("latin-1"),
        header_block=block,
        headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers],
        _reader=reader,
        _writer=writer,
        _parser=parser,
        _timeout=timeout,
    )


async def _header_block(
    reader: asyncio.StreamReader, url: str, timeout: float
) -> tuple[bytes, bytes]:
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
            piece = await asyncio.wait_for(reader.read(READ_SIZE), timeout)
        except TimeoutError:
            raise FetchError("timeout", f"{url}: no answer in {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise FetchError("dropped", f"{url}: connection lost: {exc}") from None
        if not piece:
            raise FetchError("protocol", f"{url}: the connection closed before a header block")
        data += piece
