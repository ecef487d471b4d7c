"""The slave end of HIP: one persistent connection to the master, re-established with backoff."""

import asyncio
import contextlib
import enum
import logging
import random
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from archive.hip._errors import HipError
from archive.hip._frames import CODECS, Redirect
from archive.hip._handshake import TIMEOUT, AuthRefused, connect
from archive.hip._peer import Handler, Peer, PeerHook, run_hook, serve
from archive.hip._proxy import HttpProxy
from archive.hip._tunnel import TUNNEL_TIMEOUT, TunnelConnector
from archive.network import NETWORK_ERRORS

log = logging.getLogger("archive.hip")

MAX_REDIRECTS_IN_A_ROW = 8


class _Ended(enum.Enum):
    """How one connection attempt ended when it did not fail."""

    DISCONNECTED = enum.auto()
    REDIRECTED = enum.auto()


class HipSlave:
    """Keeps one authenticated connection to a master, reconnecting until stopped; through an
    HTTP proxy's CONNECT tunnel when given one (archive/hip/_tunnel.py)."""

    def __init__(
        self,
        url: str,
        secret: bytes,
        name: str,
        handlers: Mapping[str, Handler],
        *,
        role: str = "client",
        formats: Sequence[str] = ("json", "yaml"),
        on_connect: PeerHook | None = None,
        on_disconnect: PeerHook | None = None,
        heartbeat: float = 5.0,
        backoff: tuple[float, float] = (0.05, 5.0),
        max_frame: int = 16 * 1024 * 1024,
        proxy: HttpProxy | None = None,
    ) -> None:
        unknown = [fmt for fmt in formats if fmt not in CODECS]
        if unknown or not formats:
            raise HipError(f"formats must be taken from {sorted(CODECS)}, got {list(formats)}")
        self.url = url
        self.name = name
        self.peer: Peer | None = None
        self._home = url
        self._secret = secret
        self._handlers = handlers
        self._role = role
        self._formats = tuple(formats)
        self._on_connect = on_connect
        self._on_disconnect = on_disconnect
        self._heartbeat = heartbeat
        self._backoff = backoff
        self._max_frame = max_frame
        self._proxy = proxy
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._changed = asyncio.Event()
        self._refused: str | None = None
        self._last_error: str | None = None
        self._redirected = False

    async def start(self) -> None:
        """Start connecting in the background; returns at once."""
        if self._task is not None:
            raise HipError(f"slave {self.name} was already started")
        connector = None if self._proxy is None else TunnelConnector(self._proxy)
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None), connector=connector
        )
        self._task = asyncio.create_task(self._run(self._session), name=f"hip slave {self.name}")

    async def stop(self) -> None:
        """Close the connection and stop reconnecting; pending calls fail with HipError."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        if self._session is not None:
            await self._session.close()
        self._notify_change()

    async def wait_connected(self, timeout: float | None) -> Peer:
        """The connected peer, once there is one; HipError on timeout or refused authentication."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if self.peer is not None and not self.peer.closed:
                        return self.peer
                    if self._refused is not None:
                        raise HipError(self._refused)
                    if self._task is None:
                        raise HipError(f"slave {self.name} is not running")
                    changed = self._changed
                    await changed.wait()
        except TimeoutError:
            last = f" (last error: {self._last_error})" if self._last_error else ""
            raise HipError(f"not connected to {self.url} after {timeout} s{last}") from None

    async def call(self, method: str, params: Any = None, *, timeout: float | None = 30.0) -> Any:
        """Call the master, waiting up to timeout in all for a connection and the answer."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        peer = await self.wait_connected(timeout)
        left = None if timeout is None else max(0.0, timeout - (loop.time() - started))
        return await peer.call(method, params, timeout=left)

    async def notify(
        self, method: str, params: Any = None, *, timeout: float | None = 30.0
    ) -> None:
        """Notify the master, waiting up to timeout for a connection."""
        peer = await self.wait_connected(timeout)
        await peer.notify(method, params)

    def _notify_change(self) -> None:
        """Wake every wait_connected, which then looks at the new state."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _delay(self, failures: int) -> float:
        """Exponential backoff, capped, with jitter so slaves of a restarted master spread out."""
        base, cap = self._backoff
        ceiling = min(cap, base * 2**failures)
        return random.uniform(ceiling / 2, ceiling)

    async def _run(self, session: aiohttp.ClientSession) -> None:
        failures = 0
        redirects = 0
        while True:
            try:
                ended = await self._attempt(session)
            except AuthRefused as exc:
                self._refused = self._last_error = str(exc)
                log.error("slave %s: %s; will retry", self.name, exc)
                self._notify_change()
                self._go_home()
            except (HipError, *NETWORK_ERRORS) as exc:
                self._last_error = str(exc) or type(exc).__name__
                level = logging.WARNING if failures == 0 else logging.DEBUG
                log.log(level, "slave %s cannot connect to %s: %s", self.name, self.url, exc)
                self._go_home()
            else:
                if ended is _Ended.DISCONNECTED:
                    failures = redirects = 0
                else:
                    redirects += 1
                    if redirects <= MAX_REDIRECTS_IN_A_ROW:
                        continue
                    log.error(
                        "slave %s: too many redirects in a row, ended at %s", self.name, self.url
                    )
                    self._last_error = f"too many redirects in a row, last to {self.url}"
                    self._go_home()
            redirects = 0
            await asyncio.sleep(self._delay(failures))
            failures += 1

    async def _attempt(self, session: aiohttp.ClientSession) -> _Ended:
        """Connect once, serve the connection until it ends, and say how it ended."""
        ws: aiohttp.ClientWebSocketResponse | None = None
        try:
            async with asyncio.timeout(TIMEOUT + (TUNNEL_TIMEOUT if self._proxy else 0.0)):
                ws = await session.ws_connect(
                    self.url, heartbeat=self._heartbeat, max_msg_size=self._max_frame
                )
                result = await connect(
                    ws, self._secret, self.name, self._role, self._formats, self.url
                )
            if isinstance(result, Redirect):
                log.info("slave %s redirected from %s to %s", self.name, self.url, result.url)
                self.url = result.url
                return _Ended.REDIRECTED
            self._refused = self._last_error = None
            self._redirected = False
            peer = Peer(
                ws,
                result.codec,
                self._handlers,
                name=result.master_name,
                role="master",
                max_frame=self._max_frame,
                on_redirect=self._follow,
            )
            await self._serve(peer)
            return _Ended.REDIRECTED if self._redirected else _Ended.DISCONNECTED
        finally:
            if ws is not None:
                with contextlib.suppress(ConnectionError):
                    await ws.close()

    async def _serve(self, peer: Peer) -> None:
        via = f"{self.url} through proxy {self._proxy}" if self._proxy else self.url
        log.info("slave %s connected to %s at %s (%s)", self.name, peer.name, via, peer.format)
        self.peer = peer
        self._notify_change()
        try:
            await serve(peer, self._on_connect)
        finally:
            self.peer = None
            self._notify_change()
            log.info("slave %s disconnected from %s", self.name, peer.name)
            await run_hook(self._on_disconnect, peer)

    def _go_home(self) -> None:
        """After a failure, ask the master first given again, which may redirect us anew."""
        if self.url != self._home:
            log.info("slave %s goes back to %s", self.name, self._home)
            self.url = self._home

    def _follow(self, url: str) -> None:
        """Switch to the agent a connected master redirects us to."""
        self.url = url
        self._redirected = True
