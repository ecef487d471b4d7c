"""A content trap: a catalogue script that answers every id with the same page, each linking to
nine new ids, which the URL rules let through (a dynamic URL of one script, up to its variant
limit). The crawl stops the script's branch once 30 pages of it came nearly the same, and says
where, with an example."""

import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from crawler.traps import NearLimits
from deploy.testing.cluster import Cluster
from deploy.testing.web_server import WebServer, answering

from .conftest import run_crawler

BOILERPLATE = " ".join(
    f"Our catalogue lists every product we sell, shelf {n}, with its price and a photo."
    for n in range(15)
)


class Catalogue:
    """`/` links to three items; `/item?id=N` is the same page with N in it, linking to nine
    new ids; `/about.html` is another page of the site."""

    def __init__(self) -> None:
        self.items = 0
        self._lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/item":
            with self._lock:
                self.items += 1
            number = int(request.query.get("id", "0"))
            more = "".join(f'<a href="/item?id={10 * number + n}">more</a> ' for n in range(1, 10))
            page = f"<html><body><p>{BOILERPLATE} Item {number}.</p>{more}</body></html>"
            return web.Response(text=page, content_type="text/html")
        if request.path == "/":
            links = "".join(f'<a href="/item?id={n}">item</a> ' for n in range(1, 4))
            page = f'<html><body>{links}<a href="/about.html">about</a></body></html>'
            return web.Response(text=page, content_type="text/html")
        if request.path == "/about.html":
            return web.Response(text="<p>About the shop.</p>", content_type="text/html")
        return web.Response(status=404, text="none")


def test_a_script_answering_every_id_with_one_page_is_stopped_and_reported(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    site = Catalogue()
    with WebServer(answering(site.handle)) as server:
        base = f"http://{server.host}:{server.port}"
        done = run_crawler(
            cluster_factory(nodes=1, replicas=1),
            tmp_path / "report.json",
            tmp_path / "work",
            "--delay", "0", "--dynamic-depth", "5",
            base + "/",
        )  # fmt: skip
    limit = NearLimits().max_near
    # Without the content trap the crawl would fetch hundreds of items (9 more each, 5 levels);
    # it stops one page past the limit: the pages queued before are not fetched.
    assert limit < site.items <= limit + 1, site.items
    report = done.report
    (trap,) = [t for t in report["content_traps"] if t["why"].startswith("more than")]
    assert trap["why"] == f"more than {limit} nearly identical pages under {base}/item"
    assert trap["example"].startswith(f"{base}/item?id=")
    skipped = [t for t in report["content_traps"] if t["why"].startswith("in a content trap")]
    assert skipped and skipped[0]["pages"] > 10  # queued before the verdict, never fetched
    assert report["pages"] >= 2  # the start page and the about page were crawled as usual
