"""Zero-copy file responses on uvloop, whose event loop has no `sendfile`.

aiohttp's FileResponse falls back to reading the file in chunks through Python when the loop
cannot sendfile. Here the headers go out through the transport as usual; once the transport's
buffer is empty, a worker thread hands the body to the kernel with os.sendfile on the socket,
waiting with poll when the socket is full. Nothing else writes to the connection meanwhile: its
handler is awaiting this response.
"""

import asyncio
import logging
import os
import select
from concurrent.futures import Executor
from pathlib import Path

from aiohttp import web

log = logging.getLogger(__name__)
SEND_TIMEOUT_MS = 60_000


def _send_all(sock_fd: int, file_fd: int, size: int) -> None:
    offset = 0
    poller = select.poll()
    poller.register(sock_fd, select.POLLOUT)
    while offset < size:
        try:
            sent = os.sendfile(sock_fd, file_fd, offset, size - offset)
        except BlockingIOError:
            if not poller.poll(SEND_TIMEOUT_MS):
                raise TimeoutError("client did not read for a minute") from None
            continue
        if sent == 0:
            raise ConnectionResetError("file shrank or connection closed while sending")
        offset += sent


async def send_file(
    request: web.Request, path: str | Path, headers: dict[str, str], executor: Executor
) -> web.StreamResponse:
    """Answer with a whole file; Range and conditional requests go to aiohttp's FileResponse."""
    if "Range" in request.headers or "If-None-Match" in request.headers:
        return web.FileResponse(path, headers=headers)
    file_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(file_fd).st_size
        response = web.StreamResponse(headers=headers)
        response.content_length = size
        await response.prepare(request)
        transport = request.transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        if request.method != "HEAD" and size:
            if transport is None or sock is None:
                raise ConnectionResetError("connection lost before the body was sent")
            while transport.get_write_buffer_size():
                await asyncio.sleep(0.001)
            loop = asyncio.get_running_loop()
            try:
                # The worker sends on its own duplicate of the socket, so a client that leaves
                # mid-send cannot make the transport close (and the OS reuse) the number it uses.
                sock_fd = os.dup(sock.fileno())
                try:
                    await loop.run_in_executor(executor, _send_all, sock_fd, file_fd, size)
                finally:
                    os.close(sock_fd)
            except (ConnectionError, TimeoutError) as exc:
                log.debug("client left during a file response: %s", exc)
                transport.abort()
                return response
            except OSError as exc:
                log.warning("file response of %s cut short: %s", path, exc)
                transport.abort()
                return response
        await response.write_eof()
        return response
    finally:
        os.close(file_fd)
