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

from .errors import DlwebError

# Seconds a stopping server gives requests and HIP connections still open to end.
SHUTDOWN_TIMEOUT = 5.0


@contextlib.asynccontextmanager
async def serving(app: web.Application, host: str, port: int) -> AsyncIterator[asyncio.Event]:
    """Serve `app` on host:port; yields the event that SIGINT or SIGTERM sets."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
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


def token_guard(token_of: Callable[[web.Request], str], who: str) -> Middleware:
    """Middleware: writes need the cluster token; every failure is a JSON error, never a
    traceback. `who` names the service in the message of an internal error."""

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
                return json_error(exc.status, exc.reason)
            raise
        except Exception:
            log.exception("internal error on %s %s", request.method, request.path)
            return json_error(500, f"internal error on the {who}")

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
