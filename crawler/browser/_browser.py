"""The agent's one browser: pages loaded one at a time, the browser restarted when it fails.

A browser that crashed, hangs on a page or holds more memory than its cap after a page is
killed with its whole process tree and started again before the next page; the page it failed
on is reported with the kind of failure (`crashed`, `hung`, `timeout`), and the crawl goes on.
"""

import asyncio
import contextlib
import logging

from archive.counts import Counts

from ._cdp import BrowserError
from ._chromium import Chromium
from ._page import PageLoad, PageSession, Serve

log = logging.getLogger(__name__)

DEFAULT_MEMORY_CAP = 300 * 1024 * 1024
DEFAULT_PAGE_BUDGET = 30.0
# Past its budget, a page has this long to be closed before its browser is thought hung.
CLOSE_GRACE = 10.0
# Failures after which the browser is started anew rather than asked for another tab.
FATAL = frozenset({"crashed", "hung", "timeout"})


class BrowserStats(Counts):
    """What the browser did, for the agent's status."""

    pages: int = 0
    failed: int = 0
    restarts: int = 0
    peak_memory: int = 0


class Browser:
    """Use as `async with Browser() as browser: await browser.load(url, serve)`."""

    def __init__(
        self,
        memory_cap: int = DEFAULT_MEMORY_CAP,
        page_budget: float = DEFAULT_PAGE_BUDGET,
        window: tuple[int, int] = (1280, 900),
    ) -> None:
        self.memory_cap = memory_cap
        self.page_budget = page_budget
        self.window = window
        self.stats = BrowserStats()
        self._chromium: Chromium | None = None
        self._one_page = asyncio.Lock()

    async def __aenter__(self) -> "Browser":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def load(self, url: str, serve: Serve, budget: float | None = None) -> PageLoad:
        """Load a page, every request it makes answered by `serve`, within `budget` seconds
        (the browser's page budget by default); BrowserError (its `kind` says why) when the page
        could not be loaded."""
        budget = self.page_budget if budget is None else budget
        async with self._one_page:
            chromium = await self._running()
            assert chromium.connection is not None
            page = PageSession(chromium.connection, serve)
            try:
                async with asyncio.timeout(budget + CLOSE_GRACE):
                    await page.open()
                    loaded = await page.visit(url, budget)
                    await page.close()
            except TimeoutError:
                self.stats.failed += 1
                await self._restart(f"it hung on {url}")
                raise BrowserError("hung", f"{url}: the browser hung on the page") from None
            except BrowserError as exc:
                self.stats.failed += 1
                if exc.kind in FATAL or not chromium.alive:
                    await self._restart(f"{exc.kind} on {url}")
                else:
                    await self._close_quietly(page)
                raise
            self.stats.pages += 1
            memory = chromium.memory()
            self.stats.peak_memory = max(self.stats.peak_memory, memory)
            if memory > self.memory_cap:
                await self._restart(f"it held {memory >> 20} MiB, over its cap")
            return loaded

    def memory(self) -> int:
        """The memory of the running browser's processes (0 while none runs)."""
        return self._chromium.memory() if self._chromium is not None else 0

    async def close(self) -> None:
        if self._chromium is not None:
            await self._chromium.stop()
            self._chromium = None

    async def _running(self) -> Chromium:
        if self._chromium is not None and not self._chromium.alive:
            await self._restart("it exited")
        if self._chromium is None:
            chromium = Chromium(self.window)
            await chromium.start()
            self._chromium = chromium
        return self._chromium

    async def _restart(self, why: str) -> None:
        """Kill the browser; the next page starts another."""
        log.warning("restarting the browser: %s", why)
        self.stats.restarts += 1
        await self.close()

    async def _close_quietly(self, page: PageSession) -> None:
        with contextlib.suppress(BrowserError):
            await page.close()
