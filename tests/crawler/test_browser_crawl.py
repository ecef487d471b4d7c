"""`dlweb crawl --browser` on a site whose pages scripts build: every request the browser made is
a capture (the POST answer under its body's key, the images it named, lazy images, each page of an
infinite scroll), politely fetched, and once the site is gone the pages replay in Chromium through
the proxy to the pixel. `--browser auto` takes the browser for those pages and not for a static
one."""

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from archive.cluster import ClusterClient
from archive.requestkey import lookup_url
from deploy.testing.cluster import Cluster
from deploy.testing.web_server import WebServer, answering
from tests.browser import png_pixels, screenshot
from tests.scripted_site import (
    FEED_PATH,
    ITEMS,
    QUERY,
    STATIC_IMAGE,
    Handled,
    ScriptedSite,
    feed_load_paths,
    gaps_between,
    post_body,
)

from ..proxy.conftest import Proxy
from .conftest import run_crawler

WINDOW = (800, 600)
DELAY = 0.2  # the politeness delay the crawls keep per server
BURST = 0.5  # owed delay paid as one pause once it adds up to this
CRAWL_TIMEOUT = 300


@dataclass(frozen=True)
class Crawled:
    site: str
    report: dict[str, Any]
    urls: set[str]  # the URLs (lookup keys) of the captures the crawl stored


def crawl(cluster: Cluster, work: Path, start: str, *args: str) -> Crawled:
    """`dlweb crawl` of one site; its report and the URLs its signature file lists."""
    politeness = ("--delay", str(DELAY), "--burst", str(BURST))
    done = run_crawler(cluster, work / "report.json", work, *politeness, *args, start)
    site_report = done.report
    lines = Path(site_report["signature_file"]).read_text().splitlines()
    urls = {json.loads(line)["url"] for line in lines if line.strip()}
    return Crawled(start, site_report, urls)


def paths(urls: set[str]) -> set[str]:
    return {urlsplit(url).path for url in urls}


@dataclass(frozen=True)
class Archived:
    """The scripted site crawled in browser mode and stopped, with what the live pages looked
    like and what the site saw."""

    base: str
    cluster: Cluster
    page: Crawled
    feed: Crawled
    live_page: bytes
    live_feed: bytes
    crawls: tuple[list[Handled], ...]  # the requests each crawl made, as the site handled them


@pytest.fixture(scope="module")
def archived(
    tmp_path_factory: pytest.TempPathFactory,
    module_cluster_factory: Callable[..., Cluster],
) -> Iterator[Archived]:
    """Screenshots of the live pages, then a crawl of each in browser mode; then the site
    stops."""
    work = tmp_path_factory.mktemp("browser-crawl")
    cluster = module_cluster_factory(nodes=1, replicas=1)
    with ScriptedSite() as site:
        live_page = screenshot("direct://", work / "live-page", site.base + "/", work / "page.png")
        live_feed = screenshot(
            "direct://", work / "live-feed", site.base + FEED_PATH, work / "feed.png"
        )
        before = len(site.handled)
        page = crawl(cluster, work / "page", site.base + "/", "--browser", "always")
        middle = len(site.handled)
        feed = crawl(cluster, work / "feed", site.base + FEED_PATH, "--browser", "always")
        crawls = (site.handled[before:middle], site.handled[middle:])
    # The site is gone: whatever replays comes from the archive.
    yield Archived(site.base, cluster, page, feed, live_page, live_feed, crawls)


def test_every_request_of_a_page_built_by_scripts_is_a_capture(archived: Archived) -> None:
    page = archived.page
    assert page.report["browser_pages"] == 1, page.report
    found = paths(page.urls)
    assert {"/", "/app.js", "/config.json"} <= found, found
    assert {item.path for item in ITEMS[str(QUERY["query"])]} <= found
    # The POST's answer is stored under the key of its method and body.
    key = lookup_url("POST", archived.base + "/api/items", "application/json", post_body(QUERY))
    assert key in page.urls, sorted(page.urls)


def test_lazy_images_and_every_page_of_an_infinite_scroll_are_captures(
    archived: Archived,
) -> None:
    feed = archived.feed
    assert feed.report["browser_pages"] == 1, feed.report
    stored = {
        urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else "")
        for url in feed.urls
    }
    missing = [path for path in feed_load_paths() if path not in stored]
    assert not missing, (missing, sorted(stored))


def test_the_browser_s_requests_reach_the_site_one_at_a_time_with_the_temporisation(
    archived: Archived,
) -> None:
    for handled in archived.crawls:
        requests = sorted(handled, key=lambda request: request.started)
        owed, pauses = 0.0, 0
        for (before, request), gap in zip(pairwise(requests), gaps_between(requests), strict=True):
            # No request began while another was being answered.
            assert gap >= 0, (request, gap)
            # The delay owed for each request is paid as one pause, before the request that
            # finds it at the burst or that needs a new connection (the site sees another port).
            owed += DELAY
            if owed >= BURST or (request.peer != before.peer and owed > 0):
                assert gap >= owed * 0.9, (request, gap, owed)
                owed, pauses = 0.0, pauses + 1
        # Each crawl made requests enough to owe the burst at least once.
        assert pauses >= 1, requests


def test_pages_built_by_scripts_replay_to_the_pixel_once_the_site_is_gone(
    archived: Archived, proxy_factory: Callable[..., Proxy], tmp_path: Path
) -> None:
    proxy = proxy_factory(archived.cluster)
    for name, path, live in (
        ("page", "/", archived.live_page),
        ("feed", FEED_PATH, archived.live_feed),
    ):
        replayed = png_pixels(
            screenshot(proxy.url, tmp_path / name, archived.base + path, tmp_path / f"{name}.png")
        )
        differences = replayed.differences(png_pixels(live))
        assert not differences, f"{name}: {len(differences)} pixels differ, first {differences[0]}"


def test_auto_takes_the_browser_for_a_page_scripts_build_and_not_for_a_static_one(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with ScriptedSite() as site:
        scripted = crawl(cluster, tmp_path / "scripted", site.base + "/", "--browser", "auto")
        static = crawl(
            cluster, tmp_path / "static", site.base + "/static.html", "--browser", "auto"
        )
    assert scripted.report["browser_pages"] == 1, scripted.report
    assert "/api/items" in paths(scripted.urls)
    assert static.report["browser_pages"] == 0, static.report
    assert static.report["pages"] == 2
    assert {"/static.html", "/static2.html", STATIC_IMAGE.path} <= paths(static.urls)


async def test_dlweb_record_archives_one_page_scrolled_to_its_end(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with ScriptedSite() as site:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "dlweb",
                "record",
                "-c",
                str(cluster.config_path),
                "--work",
                str(tmp_path / "work"),
                site.base + FEED_PATH,
            ],
            capture_output=True,
            text=True,
            timeout=CRAWL_TIMEOUT,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{site.base}{FEED_PATH}: recorded" in done.stdout
    async with ClusterClient(cluster.config) as client:
        for path in feed_load_paths():
            assert await client.captures(site.base + path), f"{path} was not recorded"


BAD_SITE = {
    "/": b'<!doctype html><title>home</title><a href="/loops">loops</a> <a href="/ok">ok</a>',
    "/loops": b"<!doctype html><title>loops</title><script>for (;;) {}</script>",
    "/ok": b"<!doctype html><title>ok</title><p>fine</p>",
}


async def _bad_site(request: web.Request) -> web.StreamResponse:
    page = BAD_SITE.get(request.path)
    if page is None:
        return web.Response(status=404, text="not found\n")
    return web.Response(body=page, content_type="text/html")


def test_a_page_whose_script_never_yields_is_reported_and_the_crawl_goes_on(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with WebServer(answering(_bad_site)) as site:
        crawled = crawl(
            cluster, tmp_path, site.base + "/", "--browser", "always", "--browser-budget", "3"
        )
    report = crawled.report
    assert report["browser_pages"] == 2, report
    hung = {kind: n for kind, n in report["errors"].items() if kind.startswith("browser-")}
    assert sum(hung.values()) == 1 and set(hung) <= {"browser-hung", "browser-timeout"}, hung
    # The page the browser could not load was crawled from its parse.
    assert {"/", "/loops", "/ok"} <= paths(crawled.urls)
