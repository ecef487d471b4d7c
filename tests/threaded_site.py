"""An aiohttp site on loopback, served from a thread of its own.

Tests that drive a site with blocking clients (a browser, a crawler, pywb, urllib) cannot share
their thread with its event loop, so the site runs its loop in another thread, on a socket bound
before it starts: its port is known at once and a client early in line waits in the backlog.
"""

import asyncio
import socket
import threading
import urllib.request
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self

from aiohttp import web

READY_TIMEOUT = 10.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ThreadedSite:
    """`handler` answering every path on 127.0.0.1 and a free port, for requests of `method`
    (`*` for any; others are answered 405). A path of its own, never passed to the handler, tells
    when the site serves."""

    def __init__(self, handler: Handler, method: str = "*") -> None:
        self._handler = handler
        self._method = method
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._ready_path = f"/.ready-{id(self)}"
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve, and return once a request is answered."""
        self._thread.start()
        # The socket listens already, so this request waits in its backlog until the loop serves.
        ready = self.base + self._ready_path
        try:
            with urllib.request.urlopen(ready, timeout=READY_TIMEOUT) as answer:
                answer.read()
        except OSError as exc:
            what = type(self).__name__
            raise RuntimeError(f"{what} at {self.base} did not answer: {exc}") from exc

    def stop(self) -> None:
        """Stop serving: from then on nothing listens on its port."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
            self._runner = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()
        self._socket.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def _ready(self, request: web.Request) -> web.Response:
        return web.Response(text="ready\n")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        # Added first, so that it comes before the handler's route, which takes every path.
        app.router.add_get(self._ready_path, self._ready)
        app.router.add_route(self._method, "/{path:.*}", self._handler)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.SockSite(runner, self._socket).start())
        self._runner = runner
        self._loop.run_forever()
