"""One authenticated HIP connection: calls matched by request id, each request in its own task."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TypeAlias

from aiohttp import WSCloseCode, WSMsgType

from archive.errors import DlwebError
from archive.hip import _frames as frames
from archive.hip._errors import HipError, RemoteError
from archive.hip._socket import Socket, close_reason

log = logging.getLogger("archive.hip")

MAX_BAD_FRAMES_IN_A_ROW = 20


@dataclass(eq=False, repr=False)
class Peer:
    """One authenticated connection; both ends may call, answer and notify at any time.

    name is the agent at the other end; role is the role a slave declared, or "master" for the
    peer a slave holds; format is the negotiated serialisation, "json" or "yaml".
    """

    socket: Socket
    codec: frames.Codec
    handlers: Mapping[str, Handler]
    _: KW_ONLY
    name: str
    role: str
    max_frame: int
    on_redirect: Callable[[str], None] | None = None
    format: str = field(init=False)
    _ids: Iterator[int] = field(init=False, default_factory=lambda: itertools.count(1))
    _pending: dict[int, asyncio.Future[Any]] = field(init=False, default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(init=False, default_factory=set)
    _send_lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    _ended: bool = field(init=False, default=False)
    _bad_in_a_row: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.format = self.codec.name

    def __repr__(self) -> str:
        return f"<Peer {self.name!r} role={self.role!r} format={self.format!r}>"

    @property
    def closed(self) -> bool:
        return self._ended or self.socket.closed

    async def call(self, method: str, params: Any = None, *, timeout: float | None = 30.0) -> Any:
        """Send a request and wait for its answer; RemoteError if the other end failed it."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            async with asyncio.timeout(timeout):
                await self._write(self._encode(frames.request(request_id, method, params), method))
                return await future
        except TimeoutError:
            raise HipError(f"call {method} to {self.name} timed out after {timeout} s") from None
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification, which gets no answer."""
        await self._write(self._encode(frames.note(method, params), method))

    async def redirect(self, url: str) -> None:
        """Tell the slave at the other end to connect to url instead (master side only)."""
        await self._write(self._encode(frames.redirect(url), "redirect"))

    async def close(self, code: int = WSCloseCode.OK, message: str = "") -> None:
        await self.socket.close(code=code, message=close_reason(message))

    async def run(self) -> None:
        """Read frames until the connection ends, then fail every pending call."""
        try:
            while True:
                msg = await self.socket.receive()
                if msg.type == WSMsgType.TEXT:
                    await self._on_text(msg.data)
                elif msg.type == WSMsgType.BINARY:
                    await self._on_bad(frames.BadFrame("binary frame where text was expected"))
                else:
                    if msg.type == WSMsgType.ERROR:
                        log.warning("connection to %s failed: %s", self.name, msg.data)
                    break
        finally:
            self._ended = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(HipError(f"connection to {self.name} lost"))
            for task in self._tasks:
                task.cancel()

    def _encode(self, frame: dict[str, Any], method: str) -> str:
        try:
            text = self.codec.encode(frame)
        except HipError as exc:
            raise HipError(f"{frame['t']} {method}: {exc}") from None
        size = len(text.encode("utf-8"))
        if size > self.max_frame:
            raise HipError(
                f"{frame['t']} {method} is {size} bytes, over the {self.max_frame} byte frame limit"
            )
        return text

    async def _write(self, text: str) -> None:
        if self.closed:
            raise HipError(f"not connected to {self.name}")
        try:
            async with self._send_lock:
                await self.socket.send_str(text)
        except ConnectionError as exc:
            raise HipError(f"connection to {self.name} lost: {exc}") from None

    async def _on_text(self, text: str) -> None:
        try:
            frame = frames.parse(text, self.codec)
        except frames.BadFrame as exc:
            await self._on_bad(exc)
            return
        self._bad_in_a_row = 0
        if isinstance(frame, frames.Request):
            self._spawn(self._serve(frame))
        elif isinstance(frame, frames.Note):
            self._spawn(self._notice(frame))
        elif isinstance(frame, frames.Redirect):
            await self._follow(frame.url)
        else:
            self._settle(frame)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _settle(self, frame: frames.Response | frames.Failure) -> None:
        """Hand an answer to the call waiting for it; answers to no pending call are dropped."""
        future = self._pending.get(frame.id)
        if future is None or future.done():
            log.info(
                "dropped answer from %s to request %d, which is not pending", self.name, frame.id
            )
        elif isinstance(frame, frames.Response):
            future.set_result(frame.result)
        else:
            future.set_exception(RemoteError(frame.code, frame.message))

    async def _follow(self, url: str) -> None:
        if self.on_redirect is None:
            await self._on_bad(frames.BadFrame("redirect frame sent by a slave"))
            return
        log.info("master %s redirects us to %s", self.name, url)
        self.on_redirect(url)
        await self.close(message="redirected")

    async def _on_bad(self, exc: frames.BadFrame) -> None:
        self._bad_in_a_row += 1
        log.warning("bad frame from %s: %s", self.name, exc)
        if exc.request_id is not None:
            reply = frames.failure(exc.request_id, "bad_frame", str(exc))
            try:
                await self._write(self._encode(reply, "bad_frame"))
            except HipError as send_exc:
                log.info("could not answer a bad frame from %s: %s", self.name, send_exc)
        if self._bad_in_a_row >= MAX_BAD_FRAMES_IN_A_ROW:
            log.warning("closing connection to %s: too many malformed frames", self.name)
            await self.close(WSCloseCode.POLICY_VIOLATION, "too many malformed frames")

    async def _serve(self, request: frames.Request) -> None:
        """Run the handler of one request and send its result or error back."""
        reply = await self._answer(request)
        try:
            text = self._encode(reply, request.method)
        except HipError as exc:
            text = self._encode(frames.failure(request.id, "error", str(exc)), request.method)
        try:
            await self._write(text)
        except HipError as exc:
            log.info("could not answer %s from %s: %s", request.method, self.name, exc)

    async def _answer(self, request: frames.Request) -> dict[str, Any]:
        handler = self.handlers.get(request.method)
        if handler is None:
            message = f"no method {request.method!r}"
            return frames.failure(request.id, "unknown_method", message)
        try:
            return frames.response(request.id, await handler(self, request.params))
        except RemoteError as exc:
            return frames.failure(request.id, exc.code, exc.message)
        except Exception as exc:
            log.warning(
                "handler %s failed for %s: %s",
                request.method,
                self.name,
                exc,
                exc_info=not isinstance(exc, DlwebError),
            )
            return frames.failure(request.id, "error", str(exc) or type(exc).__name__)

    async def _notice(self, note: frames.Note) -> None:
        handler = self.handlers.get(note.method)
        if handler is None:
            log.warning("no handler for notification %r from %s", note.method, self.name)
            return
        try:
            await handler(self, note.params)
        except Exception:
            log.warning(
                "notification handler %s failed for %s", note.method, self.name, exc_info=True
            )


Handler: TypeAlias = Callable[[Peer, Any], Awaitable[Any]]
PeerHook: TypeAlias = Callable[[Peer], Awaitable[None]]


async def serve(peer: Peer, on_connect: PeerHook | None) -> None:
    """Read the peer's messages until its connection ends, running `on_connect` meanwhile (the
    hook's calls wait on answers the reader takes)."""
    reader = asyncio.create_task(peer.run())
    try:
        await run_hook(on_connect, peer)
        await asyncio.wait([reader])
    finally:
        reader.cancel()
        await asyncio.wait([reader])


async def run_hook(hook: PeerHook | None, peer: Peer) -> None:
    """Run an on_connect or on_disconnect hook; its failure is logged, not fatal."""
    if hook is None:
        return
    try:
        await hook(peer)
    except Exception:
        log.warning("connection hook failed for %s", peer.name, exc_info=True)
