"""The loopback web server of the tests: an aiohttp application on sockets bound before it serves.

`WebServer(app)` binds 127.0.0.1 on a free port at once (or takes the listening sockets it is
given), so its address is known before it serves and a client early in line waits in the
backlog. It serves in one of two ways:

- from a thread of its own, with its own event loop (`start`/`close`, or `with`), for tests that
  drive it with blocking clients (a browser, a crawler, pywb, urllib), which cannot share their
  thread with its loop;
- in the event loop of the caller (`await start_here()`/`await stop_here()`), for coroutines
  whose handlers share that loop's objects (events, futures) with the test.

`answering(handler)` is the application of a site whose every path goes to one handler.
"""

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from deploy.testing.spawn import Started

READY_TIMEOUT = 10.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def answering(handler: Handler, method: str = "*") -> web.Application:
    """An application that hands every path to `handler`, for requests of `method` (`*` for
    any; others are answered 405)."""
    app = web.Application()
    app.router.add_route(method, "/{path:.*}", handler)
    return app


class WebServer(Started):
    """`app` served on loopback: on 127.0.0.1 and a free port, or on `sockets` (listening
    already, all on one port). `runner_options` go to its `web.AppRunner` (`access_log` is None
    unless given)."""

    def __init__(
        self,
        app: web.Application,
        *,
        sockets: Sequence[socket.socket] | None = None,
        **runner_options: Any,
    ) -> None:
        self.app = app
        self._sockets = list(sockets) if sockets else [socket.create_server(("127.0.0.1", 0))]
        address = self._sockets[0].getsockname()
        self.host: str = address[0]
        self.port: int = address[1]
        self._runner_options = {"access_log": None, **runner_options}
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._serving = threading.Event()
        self._failure: BaseException | None = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def _setup_runner(self) -> None:
        runner = web.AppRunner(self.app, **self._runner_options)
        await runner.setup()
        self._runner = runner
        for sock in self._sockets:
            await web.SockSite(runner, sock).start()

    async def _cleanup_runner(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # served in the caller's event loop

    async def start_here(self) -> None:
        """Serve in the running event loop; return once it serves."""
        await self._setup_runner()

    async def stop_here(self) -> None:
        """Stop serving: from then on nothing listens on its port."""
        await self._cleanup_runner()
        self._close_sockets()

    # served from a thread of its own

    def start(self) -> None:
        """Serve from a thread of its own; return once it serves."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run_thread, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        if not self._serving.wait(READY_TIMEOUT):
            raise RuntimeError(f"{type(self).__name__} at {self.base} did not serve")
        if self._failure is not None:
            what = type(self).__name__
            raise RuntimeError(f"{what} at {self.base} did not serve") from self._failure

    def close(self) -> None:
        """Stop serving: from then on nothing listens on its port."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            if thread.is_alive():
                asyncio.run_coroutine_threadsafe(self._cleanup_runner(), loop).result()
                loop.call_soon_threadsafe(loop.stop)
                thread.join()
            loop.close()
            self._loop = self._thread = None
        self._close_sockets()

    def _run_thread(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._setup_runner())
        except BaseException as exc:
            self._failure = exc
            self._serving.set()
            return
        self._serving.set()
        self._loop.run_forever()

    def _close_sockets(self) -> None:
        for sock in self._sockets:
            sock.close()
