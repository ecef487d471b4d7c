"""Pages loaded in a real headless Chromium, every request they make served by the test as the
crawler's fetcher would serve it; pages that hang, loop or crash the browser are bounded and the
next page loads."""

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web

from crawler.browser import (
    Browser,
    BrowserError,
    BrowserRequest,
    BrowserResponse,
    Serve,
    ServeError,
)
from deploy.testing.web_server import WebServer, answering
from tests.scripted_site import ITEMS, QUERY, READY_TITLE, ScriptedSite, post_body

# Header fields that describe the body as sent on the wire, not as the browser gets it.
WIRE_FIELDS = {"content-encoding", "content-length", "transfer-encoding"}

NAVIGATES = b"""<!doctype html><title>leaving</title>
<script>setTimeout(() => { window.location = "/elsewhere"; }, 50);</script>"""
DRAWS_LINKS = b"""<!doctype html><title>links</title><body><script>
for (const name of ["one", "two"]) {
  const a = document.createElement("a");
  a.href = "/" + name;
  a.textContent = name;
  document.body.append(a);
}
window.open("/popup");
</script>"""
LOOPS = b"<!doctype html><title>loops</title><script>for (;;) {}</script>"
WAITS = b'<!doctype html><title>waits</title><img src="/never.png">'
GROWS = b"""<!doctype html><title>grows</title><script>
const kept = [];
for (;;) kept.push(new Array(1 << 20).fill(kept.length));
</script>"""


async def _bad(request: web.Request) -> web.StreamResponse:
    pages = {
        "/navigates": NAVIGATES,
        "/links": DRAWS_LINKS,
        "/loops": LOOPS,
        "/waits": WAITS,
        "/grows": GROWS,
    }
    if request.path in pages:
        return web.Response(body=pages[request.path], content_type="text/html")
    if request.path == "/file.bin":
        disposition = {"Content-Disposition": 'attachment; filename="file.bin"'}
        return web.Response(body=bytes(4096), headers=disposition)
    return web.Response(text=f"page {request.path}\n", content_type="text/html")


@pytest.fixture
def scripted() -> Iterator[ScriptedSite]:
    with ScriptedSite() as site:
        yield site


@pytest.fixture
def bad_pages() -> Iterator[WebServer]:
    with WebServer(answering(_bad)) as site:
        yield site


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def fetcher(http: aiohttp.ClientSession, never: str = "/never.png") -> Serve:
    """A serve function downloading what the page asks for; `never` is never answered."""

    async def serve(request: BrowserRequest) -> BrowserResponse:
        if urlsplit(request.url).path == never:
            await asyncio.Event().wait()
        headers = {k: v for k, v in request.headers if k.lower() != "host"}
        try:
            async with http.request(
                request.method, request.url, data=request.body, headers=headers
            ) as answer:
                body = await answer.read()
                fields = [(k, v) for k, v in answer.headers.items() if k.lower() not in WIRE_FIELDS]
                return BrowserResponse(answer.status, answer.reason or "", fields, body)
        except aiohttp.ClientError:
            raise ServeError("unreachable") from None

    return serve


async def test_every_request_of_a_page_built_by_scripts_is_served_by_the_crawler(
    scripted: ScriptedSite, http: aiohttp.ClientSession
) -> None:
    async with Browser() as browser:
        loaded = await browser.load(scripted.base + "/", fetcher(http))
    assert loaded.title == READY_TITLE
    asked = [(r.method, urlsplit(r.url).path) for r in loaded.requests]
    for wanted in [("GET", "/"), ("GET", "/app.js"), ("GET", "/config.json")]:
        assert wanted in asked, asked
    assert {("GET", item.path) for item in ITEMS[str(QUERY["query"])]} <= set(asked)
    (post,) = [r for r in loaded.requests if r.method == "POST"]
    assert urlsplit(post.url).path == "/api/items" and post.body == post_body(QUERY)
    assert post.resource_type in ("XHR", "Fetch")
    # Nothing reached the site but what was served.
    received = sorted((r.method, r.path) for r in scripted.received)
    assert received == sorted(asked)


async def test_links_come_from_the_rendered_page_and_its_own_navigations(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser() as browser:
        drawn = await browser.load(bad_pages.base + "/links", fetcher(http))
        leaving = await browser.load(bad_pages.base + "/navigates", fetcher(http))
    assert drawn.links == [bad_pages.base + "/one", bad_pages.base + "/two"]
    # The popup the script opened was never loaded.
    assert [urlsplit(r.url).path for r in drawn.requests if r.resource_type == "Document"] == [
        "/links"
    ]
    assert bad_pages.base + "/elsewhere" in leaving.links
    assert all(urlsplit(r.url).path != "/elsewhere" for r in leaving.requests)


async def test_a_page_that_never_finishes_is_cut_at_its_budget_and_the_next_loads(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser(page_budget=3.0) as browser:
        with pytest.raises(BrowserError) as failed:
            await browser.load(bad_pages.base + "/waits", fetcher(http))
        assert failed.value.kind in ("timeout", "hung")
        after = await browser.load(bad_pages.base + "/links", fetcher(http))
    assert after.title == "links"


async def test_a_script_that_never_yields_gets_its_browser_killed_and_restarted(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser(page_budget=3.0) as browser:
        with pytest.raises(BrowserError) as failed:
            await browser.load(bad_pages.base + "/loops", fetcher(http))
        assert failed.value.kind in ("timeout", "hung")
        assert browser.stats.restarts == 1
        after = await browser.load(bad_pages.base + "/links", fetcher(http))
    assert after.title == "links" and browser.stats.failed == 1


async def test_a_crashed_browser_is_started_again_for_the_next_page(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser() as browser:
        await browser.load(bad_pages.base + "/links", fetcher(http))
        chromium = browser._chromium
        assert chromium is not None and chromium.process is not None
        os.killpg(chromium.process.pid, signal.SIGKILL)
        await chromium.process.wait()
        again = await browser.load(bad_pages.base + "/links", fetcher(http))
    assert again.title == "links" and browser.stats.restarts == 1


async def test_a_browser_over_its_memory_cap_is_restarted_after_the_page(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser(memory_cap=1) as browser:
        loaded = await browser.load(bad_pages.base + "/links", fetcher(http))
        assert browser.stats.restarts == 1 and browser.stats.peak_memory > 1
        assert browser._chromium is None
    assert loaded.title == "links"


async def test_a_script_that_allocates_without_end_crashes_its_page_not_the_crawl(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser(page_budget=20.0) as browser:
        with pytest.raises(BrowserError) as failed:
            await browser.load(bad_pages.base + "/grows", fetcher(http))
        assert failed.value.kind == "page-crashed", failed.value
        after = await browser.load(bad_pages.base + "/links", fetcher(http))
    assert after.title == "links"


async def test_a_page_that_starts_a_download_is_refused_and_the_next_loads(
    bad_pages: WebServer, http: aiohttp.ClientSession
) -> None:
    async with Browser() as browser:
        with pytest.raises(BrowserError) as failed:
            await browser.load(bad_pages.base + "/file.bin", fetcher(http))
        assert failed.value.kind == "navigation", failed.value
        after = await browser.load(bad_pages.base + "/links", fetcher(http))
    assert after.title == "links" and browser.stats.restarts == 0
