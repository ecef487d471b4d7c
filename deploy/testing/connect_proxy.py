"""A forward HTTP proxy of the tests that knows CONNECT alone, served in the caller's event loop.

It opens tunnels to the addresses its `resolve` map gives a host name (so a name only the proxy
knows is reached through it and no other way), records each CONNECT it is sent with the
credentials that came with it, requires credentials when given some, and answers the first
requests with canned `answers` instead of a tunnel (None: no answer at all, the connection held
open), as a refusing or broken proxy would.
"""

import asyncio
import base64
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from archive.lifetime import Opened

MAX_HEAD = 8 * 1024


@dataclass(frozen=True)
class ConnectRequest:
    """One CONNECT the proxy was sent: its host:port, its Proxy-Authorization, if any."""

    target: str
    authorization: str | None


class ConnectProxy(Opened):
    """The proxy on 127.0.0.1 and a free port while inside `async with`; `url` is its address."""

    def __init__(
        self,
        *,
        credentials: str | None = None,
        resolve: Mapping[str, str] | None = None,
        answers: Iterable[bytes | None] = (),
    ) -> None:
        self.requests: list[ConnectRequest] = []
        self.tunnels: list[str] = []
        self.url = ""
        self._expected: str | None = None
        if credentials is not None:
            self._expected = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._resolve = dict(resolve or {})
        self._answers = list(answers)
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._answer(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:  # the proxy stops: ending quietly, as asyncio expects
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = head[0].split(" ", 2)
        fields = dict(line.split(":", 1) for line in head[1:] if ":" in line)
        authorization = next(
            (v.strip() for k, v in fields.items() if k.lower() == "proxy-authorization"), None
        )
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        self.requests.append(ConnectRequest(target, authorization))
        if self._answers:
            answer = self._answers.pop(0)
            if answer is None:
                await reader.read()
            else:
                writer.write(answer)
                await writer.drain()
            return
        if self._expected is not None and authorization != self._expected:
            writer.write(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="tests"\r\nContent-Length: 0\r\n\r\n'
            )
            return
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        try:
            upstream_reader, upstream = await asyncio.open_connection(
                self._resolve.get(host, host), int(port)
            )
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.tunnels.append(target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
        finally:
            upstream.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction of a tunnel until its end closes, then close the other's sending side."""
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    with contextlib.suppress(OSError):
        writer.write_eof()
