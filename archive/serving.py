"""Serving an aiohttp application until the process is told to stop (SIGINT or SIGTERM), and
the pieces every JSON service of the cluster shares: errors as JSON, writes behind the cluster
token, request bodies checked."""

import asyncio
import contextlib
import hmac
import json
import logging
import signal
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
WRITES = frozenset(("POST", "PUT", "DELETE"))
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def status_of(exc: BaseException) -> int:
    """The HTTP status of a request that failed with `exc`, so every service answers an error
    alike: its class says whose fault it is, and a failure of no class is the server's (500)."""
    if isinstance(exc, web.HTTPException | ClientFault | ServerFault):
        return exc.status
    return 500


def error_response(exc: Exception, request: web.Request, who: str) -> web.Response:
    """The JSON error answering a request that failed with `exc`. A client's fault is told what
    to change; a server's is logged, and named with the failing service (`who`), its message
    kept when it was written for a user, a bug's left in the log."""
    status = status_of(exc)
    if isinstance(exc, web.HTTPException):
        return json_error(status, exc.reason)
    if isinstance(exc, ClientFault):
        return json_error(status, str(exc))
    where = f"{request.method} {request.path} on the {who}"
    if isinstance(exc, ServerFault):
        log.error("%s: %s", where, exc)
    else:
        log.error("internal error on %s", where, exc_info=exc)
    if isinstance(exc, DlwebError):
        return json_error(status, f"on the {who}: {exc}")
    return json_error(status, f"internal error on the {who}")


def token_guard(token_of: Callable[[web.Request], str], who: str) -> Middleware:
    """Middleware: writes need the cluster token; every failure is a JSON error (`error_response`),
    never a traceback. `who` names the service in the message of a server's error."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in WRITES:
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token:
                return json_error(401, "writes need the cluster token (Authorization: Bearer)")
            if not hmac.compare_digest(token.encode(), token_of(request).encode()):
                return json_error(403, "wrong cluster token")
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
