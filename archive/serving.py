"""Serving an aiohttp application until the process is told to stop (SIGINT or SIGTERM), and
the pieces every JSON service of the cluster shares: errors as JSON that name no path of the
server, work behind the cluster token, request bodies checked."""

import asyncio
import contextlib
import hmac
import json
import logging
import signal
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from .config import HttpTimeouts
from .connections import app_runner
from .errors import ClientFault, DlwebError, ServerFault

# Seconds a stopping server gives requests and HIP connections still open to end.
SHUTDOWN_TIMEOUT = 5.0


@contextlib.asynccontextmanager
async def serving(
    app: web.Application, host: str, port: int, timeouts: HttpTimeouts
) -> AsyncIterator[asyncio.Event]:
    """Serve `app` on host:port; yields the event that SIGINT or SIGTERM sets."""
    runner = app_runner(app, timeouts, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        try:
            await web.TCPSite(runner, host, port, reuse_address=True).start()
        except OSError as exc:
            raise DlwebError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        yield stop
    finally:
        await runner.cleanup()


log = logging.getLogger(__name__)
READS = frozenset(("GET", "HEAD"))
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WorkTest = Callable[[web.Request], bool]
# The handlers of reads that start work (`starts_work`), each with the test of its requests that do.
_WORK: "weakref.WeakKeyDictionary[Handler, WorkTest]" = weakref.WeakKeyDictionary()


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def status_of(exc: BaseException) -> int:
    """The HTTP status of a request that failed with `exc`, so every service answers an error
    alike: its class says whose fault it is, and a failure of no class is the server's (500)."""
    if isinstance(exc, web.HTTPException | ClientFault | ServerFault):
        return exc.status
    if isinstance(exc, web.RequestPayloadError):
        return 400
    return 500


def error_response(exc: Exception, request: web.Request, who: str) -> web.Response:
    """The JSON error answering a request that failed with `exc`. A client's fault is told what
    to change; a server's is logged, and named with the failing service (`who`), its reason
    kept when it was written for a user, a bug's left in the log. The log names the server's
    files at fault, the answer never does: a DlwebError answers with its `reason`, an OSError
    with its `strerror`, neither of which holds the path."""
    status = status_of(exc)
    if isinstance(exc, web.HTTPException):
        return json_error(status, exc.reason)
    if isinstance(exc, ClientFault):
        return json_error(status, exc.reason)
    where = f"{request.method} {request.path[:200]} on the {who}"
    if isinstance(exc, web.RequestPayloadError) or _client_left(request, exc):
        log.info("%s: the request's body did not arrive whole: %s", where, exc)
        return json_error(400, "the request's body did not arrive whole")
    if isinstance(exc, DlwebError):
        log.error("%s: %s", where, exc)
        return json_error(status, f"on the {who}: {exc.reason}")
    if isinstance(exc, OSError) and exc.strerror:
        log.error("%s: %s", where, exc)
        return json_error(status, f"on the {who}: {exc.strerror}")
    log.error("internal error on %s", where, exc_info=exc)
    return json_error(status, f"internal error on the {who}")


def _client_left(request: web.Request, exc: Exception) -> bool:
    """Whether `exc` is the client's connection lost mid-request (not one of the server's own,
    to a node, which is its fault)."""
    transport = request.transport
    return isinstance(exc, ConnectionResetError) and (transport is None or transport.is_closing())


def starts_work(when: WorkTest = lambda request: True) -> Callable[[Handler], Handler]:
    """Decorator: a GET handler whose requests (those `when` accepts) start or change work, and
    so need the cluster token as writes do (`token_guard`): a read only reports."""

    def mark(handler: Handler) -> Handler:
        _WORK[handler] = when
        return handler

    return mark


def _needs_token(request: web.Request) -> bool:
    """Whether `request` needs the cluster token: every write, and every read that starts work."""
    if request.method not in READS:
        return True
    when = _WORK.get(request.match_info.handler)
    return when is not None and when(request)


def _token_refusal(request: web.Request, token: str) -> web.Response | None:
    """The answer refusing `request` for want of the cluster token `token`, None if it has it.
    A header that is not ASCII (whose bytes aiohttp hands over as surrogates) holds no token."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given or not given.isascii():
        return json_error(
            401, "writes and admin work need the cluster token (Authorization: Bearer <token>)"
        )
    if not hmac.compare_digest(given.encode(), token.encode()):
        return json_error(403, "wrong cluster token")
    return None


def token_guard(token_of: Callable[[web.Request], str], who: str) -> Middleware:
    """Middleware: writes and work need the cluster token (`_needs_token`); every failure is a
    JSON error (`error_response`), never a traceback. `who` names the service in the message
    of a server's error."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if _needs_token(request):
            refused = _token_refusal(request, token_of(request))
            if refused is not None:
                return refused
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status >= 400:
                return error_response(exc, request, who)
            raise
        except Exception as exc:
            return error_response(exc, request, who)

    return guard


async def json_body(request: web.Request, max_body: int) -> dict[str, Any]:
    """A request's JSON object body ({} when empty); 400 or 413 with the reason otherwise."""
    if request.content_length is not None and request.content_length > max_body:
        raise web.HTTPRequestEntityTooLarge(max_size=max_body, actual_size=request.content_length)
    raw = await request.read()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise web.HTTPBadRequest(reason="request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(reason="request body must be a JSON object")
    return data
