"""The master end of HIP: a WebSocket route on an aiohttp application that slaves connect to."""

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType

from aiohttp import WSCloseCode, web

from archive.hip._errors import HipError
from archive.hip._frames import is_ws_url
from archive.hip._handshake import HandshakeFailed, accept
from archive.hip._peer import Handler, Peer, PeerHook, run_hook, serve
from archive.hip._socket import close_reason

log = logging.getLogger("archive.hip")

CLOSE_REPLACED = 4003


@dataclass(eq=False, repr=False)
class HipMaster:
    """Accepts slaves on a WebSocket route, authenticates them and serves their requests."""

    secret: bytes
    name: str
    handlers: Mapping[str, Handler]
    _: KW_ONLY
    on_connect: PeerHook | None = None
    on_disconnect: PeerHook | None = None
    redirect: Callable[[str, str], str | None] | None = None
    heartbeat: float = 5.0
    max_frame: int = 16 * 1024 * 1024
    _slaves: dict[str, Peer] = field(init=False, default_factory=dict)
    _sockets: set[web.WebSocketResponse] = field(init=False, default_factory=set)
    _closing: bool = field(init=False, default=False)

    @property
    def slaves(self) -> Mapping[str, Peer]:
        """The connected slaves by name; a new connection under a taken name replaces the old."""
        return MappingProxyType(self._slaves)

    def add_routes(self, app: web.Application, path: str = "/hip") -> None:
        """Serve HIP at path on app, and close every HIP connection when app shuts down."""
        app.router.add_get(path, self._handle)
        app.on_shutdown.append(self._on_shutdown)

    async def redirect_slave(self, name: str, url: str) -> None:
        """Tell a connected slave to leave and connect to the agent at url instead."""
        if not is_ws_url(url):
            raise HipError(f"cannot redirect {name} to {url!r}: not a ws:// or wss:// URL")
        peer = self._slaves.get(name)
        if peer is None:
            raise HipError(f"no slave named {name!r} is connected")
        await peer.redirect(url)

    async def close(self) -> None:
        """Close every HIP connection, authenticated or not, and refuse new ones."""
        self._closing = True
        await asyncio.gather(
            *(
                ws.close(code=WSCloseCode.GOING_AWAY, message=b"master shutting down")
                for ws in list(self._sockets)
            )
        )

    def _target(self, name: str, role: str) -> str | None:
        """Where the redirect callback sends this slave; a failing callback keeps it here."""
        if self.redirect is None:
            return None
        try:
            return self.redirect(name, role)
        except Exception:
            log.warning("redirect callback failed for %s (%s)", name, role, exc_info=True)
            return None

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self._closing:
            raise web.HTTPServiceUnavailable(text="HIP master is shutting down")
        ws = web.WebSocketResponse(heartbeat=self.heartbeat, max_msg_size=self.max_frame)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await self._serve(ws, request.remote or "unknown address")
        finally:
            self._sockets.discard(ws)
            await ws.close()
        return ws

    async def _serve(self, ws: web.WebSocketResponse, remote: str) -> None:
        try:
            accepted = await accept(ws, self.secret, self.name, self._target)
        except (HandshakeFailed, TimeoutError) as exc:
            reason = str(exc) or "handshake timed out"
            code = (
                exc.close_code if isinstance(exc, HandshakeFailed) else WSCloseCode.POLICY_VIOLATION
            )
            log.warning("refused HIP connection from %s: %s", remote, reason)
            await ws.close(code=code, message=close_reason(reason))
            return
        if accepted.redirected_to is not None:
            log.info(
                "redirected %s (%s) to %s", accepted.name, accepted.role, accepted.redirected_to
            )
            return
        peer = Peer(
            ws,
            accepted.codec,
            self.handlers,
            name=accepted.name,
            role=accepted.role,
            max_frame=self.max_frame,
        )
        log.info("slave %s (%s, %s) connected from %s", peer.name, peer.role, peer.format, remote)
        replaced = self._slaves.get(peer.name)
        self._slaves[peer.name] = peer
        if replaced is not None:
            await replaced.close(CLOSE_REPLACED, "replaced by a new connection with the same name")
        try:
            await serve(peer, self.on_connect)
        finally:
            if self._slaves.get(peer.name) is peer:
                del self._slaves[peer.name]
            log.info("slave %s disconnected", peer.name)
            await run_hook(self.on_disconnect, peer)
