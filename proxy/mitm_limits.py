"""The proxy's limits (limits.py) put in mitmproxy, whose HTTP/1 reader buffers a request head of
any size (its source says so: "protect against header size DoS") for as long as a byte arrives
every ten minutes, keeps an idle kept-alive connection as long, and holds a request body whole in
memory whatever its size. `install` wraps the two places where it does so, once, before the proxy
starts:

- the HTTP/1 server connection's event handler (`Http1Server._handle_event`): a request head
  (request line and header fields) larger than `max_head`, a request line longer than
  `max_line` or more than `max_fields` header lines is answered 431 or 414 and the connection
  closed; a head not whole `head_timeout` seconds after its first byte is answered 408; a
  kept-alive connection that starts no request for `idle_timeout` seconds is closed. The timers
  are mitmproxy's own wake-up commands, which it routes back to the connection that asked;
- the request stream's body reader (`HttpStream.state_consume_request_body`): a body past
  `max_body` is answered 413, and what came of it is dropped.

Every limit is exercised by tests/security/test_proxy_limits.py, so a mitmproxy release that
changes these internals fails the tests instead of silently lifting a limit (pyproject pins the
major version).
"""

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from h11._receivebuffer import ReceiveBuffer
from mitmproxy import flow as mflow
from mitmproxy.proxy import commands, events
from mitmproxy.proxy import server as mserver
from mitmproxy.proxy.layers.http import HttpStream, SendHttp
from mitmproxy.proxy.layers.http._events import RequestData, ResponseProtocolError
from mitmproxy.proxy.layers.http._hooks import HttpErrorHook
from mitmproxy.proxy.layers.http._http1 import Http1Server, make_error_response
from mitmproxy.proxy.utils import ReceiveBuffer as BodyBuffer

from .limits import Limits

Commands = Generator[Any, Any, None]


@dataclass
class _Spell:
    """When the head being read, or the idle wait for one, began (one of them at a time)."""

    head: float | None = None
    idle: float | None = None


class _Deadline(commands.RequestWakeup):
    """A wake-up asked for by a limit: which one, and for which head or idle spell."""

    def __init__(self, delay: float, kind: str, since: float) -> None:
        super().__init__(delay)
        self.kind = kind
        self.since = since


_spells: "WeakKeyDictionary[Http1Server, _Spell]" = WeakKeyDictionary()


def install(limits: Limits) -> None:
    """Put the limits in mitmproxy's HTTP/1 server and request streams (once per process)."""
    mserver.TCP_TIMEOUT = int(limits.silence_timeout)
    handle = _ORIGINALS.setdefault("handle", Http1Server._handle_event)
    consume = _ORIGINALS.setdefault("consume", HttpStream.state_consume_request_body)

    def _handle_event(self: Http1Server, event: events.Event) -> Commands:
        if isinstance(event, events.Wakeup) and isinstance(event.command, _Deadline):
            yield from _deadline(self, event.command)
            return
        yield from handle(self, event)
        spell = _spells.setdefault(self, _Spell())
        if self.state != self.read_headers:
            spell.head = spell.idle = None
        elif self.buf:
            refusal = _head_refusal(bytes(self.buf)[: limits.max_head + 1], len(self.buf), limits)
            if refusal is not None:
                yield from _refuse(self, *refusal)
            elif spell.head is None:
                spell.head, spell.idle = time.monotonic(), None
                yield _Deadline(limits.head_timeout, "head", spell.head)
        elif spell.idle is None:
            spell.head, spell.idle = None, time.monotonic()
            yield _Deadline(limits.idle_timeout, "idle", spell.idle)

    def state_consume_request_body(self: HttpStream, event: events.Event) -> Commands:
        if isinstance(event, RequestData) and (
            len(self.request_body_buf) + len(event.data) > limits.max_body
        ):
            self.request_body_buf = BodyBuffer()  # type: ignore[no-untyped-call]
            message = f"dlweb: a request body may hold at most {limits.max_body} bytes"
            self.flow.error = mflow.Error(message)
            yield HttpErrorHook(self.flow)
            yield SendHttp(ResponseProtocolError(self.stream_id, message, 413), self.context.client)
            self.client_state = self.state_errored
            self.flow.live = False
            return
        yield from consume(self, event)

    setattr(Http1Server, "_handle_event", _handle_event)  # noqa: B010  (a method replaced)
    setattr(HttpStream, "state_consume_request_body", state_consume_request_body)  # noqa: B010


# mitmproxy's own methods, kept once however often `install` is called.
_ORIGINALS: dict[str, Any] = {}


def _head_refusal(start: bytes, size: int, limits: Limits) -> tuple[int, str] | None:
    """The status and reason refusing a request head not yet whole, or None while it may grow."""
    line_end = start.find(b"\n")
    if (line_end if line_end >= 0 else len(start)) > limits.max_line:
        return 414, f"the request line is longer than {limits.max_line} bytes"
    if size > limits.max_head:
        return 431, f"the request head is larger than {limits.max_head} bytes"
    if start.count(b"\n") > limits.max_fields + 1:
        return 431, f"the request has more than {limits.max_fields} header fields"
    return None


def _deadline(self: Http1Server, deadline: _Deadline) -> Commands:
    """A limit's timer went off: act if the spell it was set for still lasts."""
    spell = _spells.get(self)
    if spell is None or self.state != self.read_headers:
        return
    if deadline.kind == "head" and spell.head == deadline.since:
        yield from _refuse(self, 408, "the request head did not arrive in time")
    elif deadline.kind == "idle" and spell.idle == deadline.since:
        yield commands.CloseConnection(self.conn)
        self.state = self.done


def _refuse(self: Http1Server, status: int, reason: str) -> Commands:
    yield commands.Log(f"{self.conn.peername}: {reason}")
    yield commands.SendData(self.conn, make_error_response(status, f"dlweb: {reason}"))
    yield commands.CloseConnection(self.conn)
    self.buf = ReceiveBuffer()  # what it sent is not kept
    self.state = self.done
