"""The Chrome DevTools protocol over one WebSocket, with sessions multiplexed on it.

Commands carry an id and are answered by a message with the same id; events carry a method and,
for a page attached in flat mode, the id of its session. A command waits for its answer for a
bounded time: a browser that stops answering is a browser to kill, not to wait on.
"""

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from archive import jsonwire
from archive.errors import DlwebError
from archive.network import NETWORK_ERRORS

log = logging.getLogger(__name__)

# A command the browser leaves unanswered this long means the browser hangs.
COMMAND_TIMEOUT = 30.0
# Pages send large answers (screenshots, bodies of requests): no frame limit below this.
MAX_MESSAGE = 256 * 1024 * 1024

EventHandler = Callable[[dict[str, Any]], Awaitable[None] | None]


class BrowserError(DlwebError):
    """The browser failed, hung or answered a command with an error; `kind` names which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Connection:
    """A connection to the browser's DevTools endpoint (`ws://.../devtools/browser/...`)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, session: aiohttp.ClientSession) -> None:
        self._ws = ws
        self._session = session
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[tuple[str, str], EventHandler] = {}
        self._running: set[asyncio.Future[None]] = set()
        self._reader = asyncio.create_task(self._read(), name="devtools reader")
        self.closed = asyncio.Event()

    @classmethod
    async def open(cls, url: str) -> "Connection":
        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(
                url, max_msg_size=MAX_MESSAGE, timeout=aiohttp.ClientWSTimeout(ws_close=5.0)
            )
        except NETWORK_ERRORS as exc:
            await session.close()
            raise BrowserError("crashed", f"cannot reach the browser at {url}: {exc}") from None
        return cls(ws, session)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = COMMAND_TIMEOUT,
    ) -> dict[str, Any]:
        """Run a command and return its result; BrowserError when it fails or is not answered."""
        if self.closed.is_set():
            raise BrowserError("crashed", f"{method}: the browser connection is closed")
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        answer = self._waiting[number] = asyncio.get_running_loop().create_future()
        try:
            await self._ws.send_str(jsonwire.dumps(message))
            async with asyncio.timeout(timeout):
                result = await answer
        except TimeoutError:
            raise BrowserError(
                "hung", f"{method}: no answer from the browser in {timeout:g} s"
            ) from None
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise BrowserError("crashed", f"{method}: {exc}") from None
        finally:
            self._waiting.pop(number, None)
        if "error" in result:
            error = result["error"]
            text = error.get("message", error) if isinstance(error, dict) else error
            raise BrowserError("command", f"{method}: {text}")
        found = result.get("result")
        return found if isinstance(found, dict) else {}

    def on(self, method: str, handler: EventHandler, session: str = "") -> None:
        """Call `handler` with the params of each `method` event of a session ("": the
        browser's own)."""
        self._handlers[(session, method)] = handler

    def forget(self, session: str) -> None:
        """Drop the handlers of a session that ended."""
        for key in [key for key in self._handlers if key[0] == session]:
            del self._handlers[key]

    async def close(self) -> None:
        for task in list(self._running):
            task.cancel()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._ws.close()
        await self._session.close()
        self._fail_waiting("the browser connection was closed")

    async def _read(self) -> None:
        try:
            async for frame in self._ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    continue
                try:
                    message = jsonwire.loads(frame.data)
                except ValueError:
                    log.warning("the browser sent a frame that is not JSON")
                    continue
                if not isinstance(message, dict):
                    continue
                self._dispatch(message)
        finally:
            self.closed.set()
            self._fail_waiting("the browser closed its connection")

    def _dispatch(self, message: dict[str, Any]) -> None:
        number = message.get("id")
        if isinstance(number, int):
            answer = self._waiting.get(number)
            if answer is not None and not answer.done():
                answer.set_result(message)
            return
        handler = self._handlers.get((message.get("sessionId", ""), message.get("method", "")))
        if handler is None:
            return
        params = message.get("params")
        outcome = handler(params if isinstance(params, dict) else {})
        if outcome is not None:
            task = asyncio.ensure_future(outcome)
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            task.add_done_callback(_log_failure)

    def _fail_waiting(self, why: str) -> None:
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(BrowserError("crashed", why))
        self._waiting.clear()


def _log_failure(task: "asyncio.Future[None]") -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("a browser event handler failed: %s", exc)
