"""The connections of the cluster's HTTP servers, bounded in time and size.

A request's head (its request line and header fields) must all arrive within `HttpTimeouts.head`
of its first byte, and within size limits; a kept-alive connection with no request under way is
closed after `HttpTimeouts.idle`. aiohttp bounds the sizes and the idle wait, not the time a head
takes: a client sending a head a byte at a time would hold its connection for ever (slowloris),
so each connection times the heads itself. Bodies and WebSocket connections are not timed here:
a content upload, a long download, a streamed replay or a HIP connection lasts as long as it
works. A bad head is answered with a one-line JSON reason and logged in one bounded line, never
a traceback.
"""

import asyncio
import json
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from .config import HttpTimeouts

log = logging.getLogger(__name__)

# Limits of a request's head. MAX_URL and MAX_FIELD differ so that the parser's error, which
# names only the limit passed, tells a long URL (414) from a long header field (431).
MAX_URL = 8192  # bytes of a request's target
MAX_FIELD = 8190  # bytes of one header field, name and value
MAX_HEADERS = 100  # header fields of a request
MAX_REASON = 200  # characters of a bad head's reason, in the answer and the log
# After a 408 the connection reads and drops what the client still sends for this long before it
# closes: closing a socket with unread bytes resets it, and a reset can drop the 408 unread.
LINGER = 1.0


def bad_head(exc: HttpProcessingError) -> tuple[int, str]:
    """The status and one-line reason answering a request head the parser refused."""
    if isinstance(exc, LineTooLong):
        if exc.args[1] == MAX_URL:
            return 414, f"the URL is longer than {MAX_URL} bytes"
        return 431, f"a header field is longer than {MAX_FIELD} bytes"
    first = (exc.message or "").partition("\n")[0].rstrip(" :")
    if first.startswith("Too many headers"):
        return 431, f"more than {MAX_HEADERS} header fields"
    shown = "".join(ch if ch.isprintable() else "?" for ch in first[:MAX_REASON])
    return 400, f"malformed request head: {shown or 'unreadable'}"


def _timeout_answer(seconds: float) -> bytes:
    body = json.dumps({"error": f"the request head did not arrive within {seconds:g} s"})
    return (
        "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
    ).encode()


class _Connection(RequestHandler):
    """One client connection, whose request heads are timed from their first byte."""

    def __init__(self, manager: "_Server", **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._head_timeout = manager.head_timeout
        self._head_timer: asyncio.TimerHandle | None = None
        self._last_body: StreamReader | None = None  # the body of the last request parsed
        self._lingering = False  # answered 408: what arrives is dropped until the close

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        if data and self._head_timer is None and self._awaits_head():
            self._head_timer = self._loop.call_later(self._head_timeout, self._head_overdue)
        parsed = self._request_count
        super().data_received(data)
        if self._request_count != parsed and self._messages:  # a whole head arrived
            self._last_body = self._messages[-1][1]
            self._stop_head_timer()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A bad head gets its reason in one line; other failures as aiohttp answers them."""
        if not isinstance(exc, HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        status, reason = bad_head(exc)
        log.info("refused a request from %s: %d %s", request.remote, status, reason)
        response = web.json_response({"error": reason}, status=status)
        response.force_close()
        return response

    def _awaits_head(self) -> bool:
        """Whether bytes arriving now begin a request's head, not a body's or a WebSocket's."""
        if self._upgraded or self._payload_parser is not None or self._close or self._force_close:
            return False
        return self._last_body is None or self._last_body.is_eof()

    def _head_overdue(self) -> None:
        self._head_timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            # A request before this one is still being answered (pipelining): the head waits
            # its turn, and is timed again from now.
            self._head_timer = self._loop.call_later(self._head_timeout, self._head_overdue)
            return
        log.info(
            "closed a connection from %s: no whole request head %g s after its first byte",
            self.peername,
            self._head_timeout,
        )
        if self.transport is None:
            self.force_close()
            return
        self.transport.write(_timeout_answer(self._head_timeout))
        self.transport.write_eof()
        self._lingering = True
        self._loop.call_later(LINGER, self.force_close)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None


class _Server(web.Server):
    """An application's server whose connections are `_Connection`s."""

    def __init__(self, made: web.Server, head_timeout: float, **handler_args: Any) -> None:
        super().__init__(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            **handler_args,
        )
        self.head_timeout = head_timeout

    def __call__(self) -> RequestHandler:
        return _Connection(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    def __init__(self, app: web.Application, timeouts: HttpTimeouts, **kwargs: Any) -> None:
        super().__init__(
            app,
            keepalive_timeout=timeouts.idle,
            max_line_size=MAX_URL,
            max_field_size=MAX_FIELD,
            max_headers=MAX_HEADERS,
            **kwargs,
        )
        self._head_timeout = timeouts.head

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()
        return _Server(made, self._head_timeout, **self._kwargs)


def app_runner(app: web.Application, timeouts: HttpTimeouts, **kwargs: Any) -> web.AppRunner:
    """The runner of every server of ours: `app` served on bounded connections, without an
    access log; `kwargs` go to aiohttp's AppRunner."""
    return _Runner(app, timeouts, access_log=None, **kwargs)
