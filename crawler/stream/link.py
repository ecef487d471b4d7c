"""A stream's connection, read in few large pieces.

Between two reads of a live stream its bytes gather in the connection's buffer: the event loop
wakes the reader when a read falls due, when many bytes gathered, or when the connection ended
or broke, not for every packet the server sends. Each read still tells when its last bytes
arrived (on Linux, the time the kernel stamped on them), not only when they were read.
"""

import abc
import asyncio
import contextlib
import socket
import struct
import sys

from ..fetch import tls_context
from .report import now_micros

__all__ = ["GATHERED", "Link", "connect"]

READ_SIZE = 64 * 1024
MOST_TAKEN = 16 * READ_SIZE  # bytes one `take` reads at most
GATHERED = 64 * 1024  # bytes that wake a waiting reader before its time
# Linux's SO_TIMESTAMPNS (which Python does not name): the kernel's time of the last packet read
# comes with the bytes, as a timespec.
SO_TIMESTAMPNS = 35
TIMESPEC = struct.Struct("@ll")


class Link(abc.ABC):
    """A connection's incoming bytes: waited for, or taken as they lie."""

    # When the last bytes received or taken arrived, in microseconds since the epoch.
    arrived: int = 0

    @abc.abstractmethod
    async def receive(self) -> bytes:
        """The next bytes to come; b"" once the server closed the connection."""

    @abc.abstractmethod
    async def wait(self, until: float) -> None:
        """Return at event loop time `until`, or sooner once GATHERED bytes came or the
        connection ended or broke."""

    @abc.abstractmethod
    def take(self) -> bytes | None:
        """The bytes that came and were not read yet, without waiting; None when none did, b""
        once the server closed the connection. OSError when it broke."""

    @property
    @abc.abstractmethod
    def ended(self) -> bool:
        """Whether the connection ended or broke: all that is left to take is its end."""

    @abc.abstractmethod
    async def send(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...


async def connect(address: str, port: int, host: str, secure: bool) -> Link:
    """A connection to `address`, TLS for `host` when `secure`."""
    loop = asyncio.get_running_loop()
    if secure:
        inbox = _Inbox()
        await loop.create_connection(
            lambda: inbox, address, port, ssl=tls_context(), server_hostname=host
        )
        return _TlsLink(inbox)
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, (address, port))
    except BaseException:
        sock.close()
        raise
    return _SocketLink(sock)


class _SocketLink(Link):
    """A plain connection whose socket is read directly. While a reader waits, the event loop
    watches the socket with a low-water mark (SO_RCVLOWAT) of GATHERED bytes: the socket is
    ready when that many came, or when the connection ended or broke."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self._stamped = False  # the kernel tells when the bytes arrived
        if sys.platform == "linux":
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                self._stamped = True
        self._closed = False
        self._error: OSError | None = None  # met after bytes that were taken first
        self._watched = False
        self._ready = True  # the socket was ready since the last take: read it to its end
        self._waiter: asyncio.Future[None] | None = None

    async def receive(self) -> bytes:
        if self._watched:
            self._unwatch()
            with contextlib.suppress(OSError):
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)
        data = await self._loop.sock_recv(self._sock, READ_SIZE)
        self._closed, self.arrived = not data, now_micros()
        return data

    async def wait(self, until: float) -> None:
        if not self._watched:
            with contextlib.suppress(OSError):  # (without it, any byte is enough)
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, GATHERED)
            self._loop.add_reader(self._sock.fileno(), self._on_ready)
            self._watched = True
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_at(until, self._wake)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _on_ready(self) -> None:
        self._ready = True
        if self._waiter is None:
            self._unwatch()  # ready while no reader waits: watched again by the next wait
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._watched:
            self._loop.remove_reader(self._sock.fileno())
            self._watched = False

    def take(self) -> bytes | None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        # After the socket said it was ready, read until nothing is left, so that an end or a
        # failure right after the bytes is known now (an event loop may not tell of it twice).
        drain, self._ready = self._ready, False
        pieces: list[bytes] = []
        size = 0
        while not self._closed and size < MOST_TAKEN:
            try:
                piece = self._recv()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                if not pieces:
                    raise
                self._error = exc
                break
            self._closed = not piece
            pieces.append(piece)
            size += len(piece)
            if len(piece) < READ_SIZE and not drain:
                break
        if not size:
            return b"" if self._closed else None
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _recv(self) -> bytes:
        if not self._stamped:
            piece = self._sock.recv(READ_SIZE)
            self.arrived = now_micros()
            return piece
        piece, ancillary, _, _ = self._sock.recvmsg(READ_SIZE, socket.CMSG_SPACE(TIMESPEC.size))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
                seconds, nanoseconds = TIMESPEC.unpack_from(data)
                self.arrived = seconds * 1_000_000 + nanoseconds // 1000
        return piece

    @property
    def ended(self) -> bool:
        return self._closed or self._error is not None

    async def send(self, data: bytes) -> None:
        await self._loop.sock_sendall(self._sock, data)

    def close(self) -> None:
        self._unwatch()
        self._sock.close()


class _Inbox(asyncio.Protocol):
    """What a TLS connection received, kept until it is read."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.error: Exception | None = None
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.wanted = 1  # bytes that wake the waiter
        self.arrived = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.arrived = now_micros()
        if len(self.data) >= self.wanted:
            self.wake()

    def eof_received(self) -> bool:
        self.closed = True
        self.wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.error = True, exc
        self.wake()

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class _TlsLink(Link):
    """A TLS connection through asyncio's transport, its bytes kept by the protocol as they
    come."""

    def __init__(self, inbox: _Inbox) -> None:
        assert inbox.transport is not None
        self._inbox, self._transport = inbox, inbox.transport

    async def receive(self) -> bytes:
        while (data := self.take()) is None:
            await self._wait(1, None)
        return data

    async def wait(self, until: float) -> None:
        await self._wait(GATHERED, until)

    async def _wait(self, wanted: int, until: float | None) -> None:
        inbox = self._inbox
        if inbox.closed or len(inbox.data) >= wanted:
            return
        loop = asyncio.get_running_loop()
        inbox.wanted, inbox.waiter = wanted, loop.create_future()
        timer = None if until is None else loop.call_at(until, inbox.wake)
        try:
            await inbox.waiter
        finally:
            if timer is not None:
                timer.cancel()
            inbox.waiter = None

    def take(self) -> bytes | None:
        inbox = self._inbox
        if inbox.data:
            data = bytes(inbox.data)
            inbox.data.clear()
            self.arrived = inbox.arrived
            return data
        if inbox.error is not None:
            raise ConnectionError(str(inbox.error))
        return b"" if inbox.closed else None

    @property
    def ended(self) -> bool:
        return self._inbox.closed

    async def send(self, data: bytes) -> None:
        self._transport.write(data)

    def close(self) -> None:
        self._transport.close()
