"""Pages loaded in headless Chromium, every request they make served by the crawler.

Chromium is driven over the DevTools protocol on aiohttp's WebSocket client rather than through
Playwright: the crawler needs one protocol domain above all (Fetch, to pause each request and
answer it from its own polite fetcher), aiohttp is already here, and the system's Chromium is
all there is to install, with no driver process between the agent and its browser.
"""

from ._browser import DEFAULT_MEMORY_CAP, DEFAULT_PAGE_BUDGET, Browser, BrowserStats
from ._cdp import BrowserError
from ._chromium import chromium_path
from ._page import BrowserRequest, BrowserResponse, PageLoad, Serve, ServeError

__all__ = [
    "DEFAULT_MEMORY_CAP",
    "DEFAULT_PAGE_BUDGET",
    "Browser",
    "BrowserError",
    "BrowserRequest",
    "BrowserResponse",
    "BrowserStats",
    "PageLoad",
    "Serve",
    "ServeError",
    "chromium_path",
]
