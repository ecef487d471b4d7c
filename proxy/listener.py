"""The proxy's listening socket, from which every connection waiting is accepted at once.

libuv, under uvloop, accepts one connection per turn of the event loop (since libuv 1.45: "don't
accept() connections in a loop"). When the loop is busy, a turn lasts as long as the work of
every ready connection, up to a second on a loaded machine: a crowd of a few hundred browsers
that connect at once then waits in the kernel's queue, and their first requests starved for the
whole of a 20 s run while the connections already accepted were served again and again. Here
the socket is watched as a plain file descriptor and drained each time it is readable, up to
ACCEPTS_PER_TURN connections, each handed to mitmproxy as asyncio streams.
"""

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable

from archive.errors import DlwebError

log = logging.getLogger(__name__)

BACKLOG = 4096  # connections the kernel holds until they are accepted
ACCEPTS_PER_TURN = 1024

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Listener:
    def __init__(self, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self.sock = socket.create_server((host, port), family=family, backlog=BACKLOG)
        except OSError as exc:
            raise DlwebError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.sock.setblocking(False)
        self.host = host
        self._handle: Handler | None = None
        self._serving: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def start(self, handle: Handler) -> None:
        """Hand each connection accepted from now on to `handle`."""
        self._handle = handle
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._accept)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, ValueError):
            asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self.sock.close()

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            try:
                connection, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors: the rest wait in the queue
                log.warning("cannot accept a connection: %s", exc.strerror or exc)
                return
            connection.setblocking(False)
            task = asyncio.get_running_loop().create_task(self._serve(connection))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)

    async def _serve(self, connection: socket.socket) -> None:
        assert self._handle is not None
        try:
            reader, writer = await asyncio.open_connection(sock=connection)
        except OSError:  # gone before it was set up
            connection.close()
            return
        await self._handle(reader, writer)
