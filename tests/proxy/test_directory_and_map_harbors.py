"""The directory and map harbors: the sites the crawl scheduler knows, by topic and by domain,
and a site's page graph at a date drawn as SVG on the server, each page a link that opens it at
that date; and the scheduler's `GET /api/sites/{id}/graph` they read.

The layout, the drawing, the parameters and the scheduler's route are tested in this process;
one test runs it all as real processes: a cluster, the scheduler's test web, a scheduler and an
agent that crawl three of its sites, and a proxy given the scheduler's URL, whose pages headless
Chromium loads, axe-core checks, and whose map leads to an archived page at its date."""

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import aiohttp
import lxml.etree
import lxml.html
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

import harbors
from archive.hip import RemoteError
from archive.scheduler_answers import CrawlGraph, Sites
from archive.timestamps import format_iso, parse_time
from crawler.scheduler import crawl_graph as crawl_graph_module
from crawler.scheduler.service import Scheduler, SchedulerOptions
from crawler.scheduler.store import SqliteStore
from crawler.site_graph import SiteGraph
from deploy.testing.cluster import Cluster
from deploy.testing.scheduler_api import scheduler_api
from deploy.testing.waits import wait_until
from harbors import svg_graph
from harbors.directory import parse_threshold
from harbors.scheduler_api import SchedulerFailure, ask
from harbors.site_map import MAX_NODES, BadMapQuery, parse_query
from tests.accessibility import LAPTOP, OVERFLOW, PHONE, STYLESHEET_READ, Browser, Tab
from tests.crawler.campaign import Campaign
from tests.crawler.scheduler.web import ARCHIVE, COOKING, MUSEUM, serve_web, site_of

from .conftest import Proxy, setting_of, start_proxy, through

# -- the layout and the drawing --------------------------------------------------------------

# A start page linking to three pages, one of which links on; page 5 is linked from nowhere.
EDGES = [(0, 1), (0, 2), (0, 3), (1, 4), (4, 0), (2, 1)]


def test_each_page_is_on_the_level_of_its_fewest_links_from_the_start_page() -> None:
    assert svg_graph.levels(6, EDGES) == [0, 1, 1, 1, 2, None]
    assert svg_graph.levels(0, []) == []


def test_the_layout_puts_a_level_a_column_and_pages_no_link_reaches_last() -> None:
    drawn = svg_graph.layout(6, EDGES, limit=100)
    columns: dict[int, list[int]] = {}
    for node in drawn.placed:
        columns.setdefault(node.x, []).append(node.page)
    assert list(columns.values()) == [[0], [1, 2, 3], [4], [5]]
    assert [level for level, _ in drawn.by_level()] == [0, 1, 2, None]
    assert drawn.left_out == 0 and len(drawn.edges) == len(EDGES)
    assert all(n.x + svg_graph.BOX_WIDTH <= drawn.width for n in drawn.placed)
    assert all(n.y + svg_graph.BOX_HEIGHT <= drawn.height for n in drawn.placed)
    assert svg_graph.layout(6, list(reversed(EDGES)), limit=100) == drawn


def test_a_level_of_more_pages_than_a_column_holds_spills_into_more_columns() -> None:
    count = svg_graph.ROWS * 2 + 2
    drawn = svg_graph.layout(count, [(0, p) for p in range(1, count)], limit=count)
    assert len({n.x for n in drawn.placed}) == 4  # the start page, then 2 + 1 columns of level 1
    assert max(n.y for n in drawn.placed) == drawn.placed[svg_graph.ROWS].y


def test_at_most_limit_pages_are_placed_those_of_the_lowest_levels_first() -> None:
    drawn = svg_graph.layout(6, EDGES, limit=3)
    assert [n.page for n in drawn.placed] == [0, 1, 2] and drawn.left_out == 3
    assert {(drawn.placed[a].page, drawn.placed[b].page) for a, b in drawn.edges} == {
        (0, 1),
        (0, 2),
        (2, 1),
    }


def test_the_drawing_makes_each_page_a_named_link_and_hides_the_lines_from_readers() -> None:
    pages = [f"http://site.test/{p}" for p in ("", "a", "b", "c", "d", "e")]
    drawing = svg_graph.svg(
        svg_graph.layout(6, EDGES, limit=100),
        pages,
        lambda url: f"http://date.dlweb/set?back={quote(url, safe='')}&x=<1>",
        lambda url: f"{url} at 2025",
        lambda url: svg_graph.label_of(url, pages[0]),
        'The pages of "site"',
    )
    root = lxml.etree.fromstring(drawing.encode())
    ns = {"s": "http://www.w3.org/2000/svg"}
    links = root.findall(".//s:a", ns)
    assert [a.get("aria-label") for a in links] == [f"{url} at 2025" for url in pages]
    assert links[1].get("href") == f"http://date.dlweb/set?back={quote(pages[1], safe='')}&x=<1>"
    assert [a.find("s:text", ns).text for a in links][:2] == ["/", "/a"]
    assert root.get("aria-labelledby") == "map-title" and root.get("role") == "group"
    (lines,) = root.findall("s:g[@class='links']", ns)
    assert lines.get("aria-hidden") == "true" and len(lines) == len(EDGES)


def test_a_label_is_the_path_on_the_start_pages_host_and_is_cut_short() -> None:
    start = "http://site.test/"
    assert svg_graph.label_of("http://site.test/a/b?x=1", start) == "/a/b?x=1"
    assert svg_graph.label_of("http://other.test/", start) == "other.test/"
    long = svg_graph.label_of("http://site.test/" + "x" * 100, start)
    assert len(long) == svg_graph.LABEL and long.endswith("…")


# -- the parameters and the answer ---------------------------------------------------------


def test_the_map_reads_its_site_date_and_number_of_pages() -> None:
    assert parse_query({}) == (None, None, 80)
    site, at, nodes = parse_query({"site": "3", "at": "20250101120000", "nodes": "5"})
    assert (site, at, nodes) == (3, parse_time("20250101120000"), 5)


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"site": "x"}, "site='x' is not a site number"),
        ({"site": "0"}, "site='0' is not a site number"),
        ({"site": "١"}, "is not a site number"),
        pytest.param({"site": "9" * 5000}, "is not a site number", id="site-of-5000-digits"),
        ({"site": "1", "at": "2025-13"}, "at: time '2025-13'"),
        ({"site": "1", "at": "20251340"}, "at: time '20251340' is not a valid YYYYMMDDhhmmss"),
        ({"site": "1", "nodes": "0"}, f"from 1 to {MAX_NODES}"),
        ({"site": "1", "nodes": str(MAX_NODES + 1)}, f"from 1 to {MAX_NODES}"),
    ],
)
def test_a_bad_map_parameter_is_named_in_the_refusal(query: dict[str, str], said: str) -> None:
    with pytest.raises(BadMapQuery, match=said.replace("(", r"\(").replace("?", r"\?")):
        parse_query(query)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(("site", "at", "nodes")), st.text(min_size=1, max_size=30)),
    st.text(max_size=30),
)
def test_any_query_is_read_or_refused_with_a_reason(query: dict[str, str], threshold: str) -> None:
    try:
        site, at, nodes = parse_query(query)
        assert site is None or site >= 1
        assert 1 <= nodes <= MAX_NODES
    except BadMapQuery as exc:
        assert str(exc).split("=")[0].split(":")[0] in query
    found = parse_threshold(threshold)
    assert found is None or 0 < found <= 1


def test_the_directory_takes_a_likeness_above_0_and_at_most_1() -> None:
    assert parse_threshold("0.3") == 0.3 and parse_threshold("1") == 1.0
    assert [parse_threshold(t) for t in ("0", "1.5", "nan", "inf", "much", "1" * 30)] == [None] * 6


def _graph(**changed: Any) -> dict[str, Any]:
    graph = CrawlGraph(1, "http://a.test/", 2, 10.0, 20.0, ("http://a.test/", "http://a.test/b"),
                       ((0, 1),), 2, 1, False)  # fmt: skip
    return {**graph.to_json(), **changed}


@pytest.mark.parametrize("edges", [[[0, 2]], [[0]], [[-1, 0]], [[0, 1, 1]], [[0, "1"]]])
def test_a_graph_answer_whose_edges_are_not_two_of_its_pages_is_refused(edges: Any) -> None:
    with pytest.raises(RemoteError, match=r"graph: edges\[0\]"):
        CrawlGraph.from_json(_graph(edges=edges), "graph")


def test_a_graph_answer_goes_through_json_unchanged() -> None:
    graph = CrawlGraph.from_json(json.loads(json.dumps(_graph())), "graph")
    assert graph.edges == ((0, 1),) and graph.to_json()["pages"] == list(graph.pages)


@dataclass
class NoSchedulerContext:
    """What the harbors use of a proxy started without a scheduler."""

    settings: Any = None
    reader: Any = None
    live_allowed: bool = False
    ca_folder: Path = Path()
    search_index: Path = Path()
    scheduler: str = ""
    client: Any = field(default=None)


@pytest.mark.parametrize("address", ["directory.dlweb", "map.dlweb"])
async def test_without_a_scheduler_the_harbors_say_the_proxy_has_none(address: str) -> None:
    request = harbors.HarborRequest("127.0.0.1", "GET", address, "/", (("site", "1"),))
    answer = await harbors.answer(NoSchedulerContext(), request)
    assert answer.status == 503
    assert "This proxy has no crawl scheduler" in answer.body.decode()
    assert "--scheduler URL" in answer.body.decode()


@dataclass
class _Client:
    http: aiohttp.ClientSession


async def test_a_scheduler_unreachable_or_answering_what_cannot_be_read_is_said_so() -> None:
    answers = {
        "/api/sites": web.Response(text="<html>not JSON</html>"),
        "/api/clusters": web.json_response({"threshold": 0.2}),
        "/api/status": web.json_response({"error": "scheduler on fire"}, status=500),
    }

    async def handler(request: web.Request) -> web.Response:
        return answers[request.path]

    app = web.Application()
    for path in answers:
        app.router.add_get(path, handler)
    server = TestServer(app)
    await server.start_server()
    async with aiohttp.ClientSession() as session:
        context = NoSchedulerContext(scheduler=str(server.make_url("")), client=_Client(session))
        said = {}
        for path in answers:
            with pytest.raises(SchedulerFailure) as failed:
                await ask(context, Sites, path, {})
            said[path] = (failed.value.status, str(failed.value))
        await server.close()
        with pytest.raises(SchedulerFailure, match="cannot reach the scheduler at http://") as gone:
            await ask(context, Sites, "/api/sites", {})
    assert said == {
        "/api/sites": (502, "the scheduler's answer to /api/sites is not JSON"),
        "/api/clusters": (502, "the scheduler's answer cannot be read: /api/clusters: the"
                          " answer has no 'sites'"),
        "/api/status": (502, "scheduler on fire"),
    }  # fmt: skip
    assert gone.value.status == 502


# -- the scheduler's route -------------------------------------------------------------------

DAY = 86_400.0
FIRST = parse_time("20250101000000") / 1e6  # when the site's first crawl began


def _write_graph(path: Path, pages: int) -> str:
    graph = SiteGraph()
    for p in range(1, pages):
        graph.link("http://a.test/", f"http://a.test/{p}")
    graph.write(path)
    return str(path)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[TestClient[Any, Any]]:
    """The scheduler's API on a store with a site crawled twice, a day apart (3 pages, then
    5), and a site crawled once whose report names no graph."""
    store = SqliteStore(tmp_path / "scheduler.db")
    scheduler = Scheduler(store, b"s" * 32, SchedulerOptions(work=tmp_path))
    site = store.add_site("http://a.test/", "")
    for n, pages in enumerate((3, 5)):
        started = FIRST + n * DAY
        report = {
            "started": started,
            "finished": started + 60,
            "graph": {"file": _write_graph(tmp_path / f"crawl-{n}.graph", pages)},
        }
        store.finish(site.id, report, "", "", started + 60)
    bare = store.add_site("http://b.test/", "")
    store.finish(bare.id, {"started": FIRST, "finished": FIRST + 1}, "", "", FIRST + 1)
    async with scheduler_api(scheduler, "token") as client:
        yield client


async def _graph_of(api: TestClient[Any, Any], query: str, site: int = 1) -> CrawlGraph:
    response = await api.get(f"/api/sites/{site}/graph{query}")
    assert response.status == 200, await response.text()
    return CrawlGraph.from_json(await response.json(), "graph")


async def test_the_graph_at_a_date_is_that_of_the_crawl_begun_last_before_it(
    api: TestClient[Any, Any],
) -> None:
    latest = await _graph_of(api, "")
    assert latest.total_pages == 5 and len(latest.pages) == 5 and latest.edges[0] == (0, 1)
    assert latest.start_url == "http://a.test/" and latest.started == FIRST + DAY
    first = await _graph_of(api, "?at=20250101120000")
    assert first.total_pages == 3 and first.crawl < latest.crawl
    assert (await _graph_of(api, f"?at={format_iso(int((FIRST + DAY) * 1e6))}")) == latest
    cut = await _graph_of(api, "?pages=2")
    assert cut.pages == latest.pages[:2] and cut.edges == ((0, 1),) and cut.total_pages == 5


async def test_a_map_cut_short_says_so_and_opens_its_pages_at_the_date_asked(
    api: TestClient[Any, Any], tmp_path: Path
) -> None:
    async with aiohttp.ClientSession() as session:
        context = NoSchedulerContext(
            settings=harbors.ClientSettings(tmp_path / "settings.json", b"s" * 32),
            scheduler=str(api.make_url("")),
            client=_Client(session),
        )
        asked = (("site", "1"), ("at", "20250102120000"), ("nodes", "2"))
        request = harbors.HarborRequest("127.0.0.1", "GET", "map.dlweb", "/", asked)
        answer = await harbors.answer(context, request)
    assert answer.status == 200, answer.body
    shown = lxml.html.fromstring(answer.body)
    assert "Only 2 of the 5 pages are drawn and listed" in shown.xpath("string(//p[@class='note'])")
    more = shown.xpath("//p[@class='note']/a/@href")[0]
    assert parse_qs(urlsplit(more).query)["nodes"] == [str(MAX_NODES)]
    names = [a.get("aria-label") for a in shown.xpath("//*[local-name()='a'][@aria-label]")]
    assert names == [
        "http://a.test/ at 2025-01-02T12:00:00Z",
        "http://a.test/1 at 2025-01-02T12:00:00Z",
    ]
    link = parse_qs(urlsplit(shown.xpath("//ul/li/a/@href")[1]).query)
    assert (link["at"], link["back"]) == (["20250102120000"], ["http://a.test/1"])


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        ("/api/sites/9/graph", 404, "no site '9'"),
        ("/api/sites/x/graph", 404, "no site 'x'"),
        ("/api/sites/1/graph?at=yesterday", 400, "at: time 'yesterday' is neither"),
        ("/api/sites/1/graph?at=20251301", 400, "is not a valid YYYYMMDDhhmmss date"),
        ("/api/sites/1/graph?pages=0", 400, "pages must be a whole number from 1 to 20,000"),
        pytest.param(
            "/api/sites/1/graph?pages=" + "9" * 5000,
            400,
            "pages must be a whole number",
            id="pages-of-5000-digits",
        ),
        ("/api/sites/1/graph?at=2024", 404, "site 1 has no crawl begun at or before 2024-01-01"),
        ("/api/sites/2/graph", 404, "crawl 3 of site 2 has no site graph"),
    ],
)
async def test_a_bad_graph_query_is_refused_clearly(
    api: TestClient[Any, Any], path: str, status: int, said: str
) -> None:
    response = await api.get(path)
    assert response.status == status
    assert said in (await response.json())["error"]


async def test_a_graph_file_gone_or_too_large_is_refused_without_its_path(
    api: TestClient[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crawl_graph_module, "MAX_GRAPH_FILE", 100)
    response = await api.get("/api/sites/1/graph")
    error = (await response.json())["error"]
    assert response.status == 422 and "more than the 100 the scheduler reads" in error
    (tmp_path / "crawl-1.graph").unlink()
    response = await api.get("/api/sites/1/graph")
    error = (await response.json())["error"]
    assert response.status == 404 and "is not on the scheduler's disk" in error
    assert str(tmp_path) not in error


# -- the harbors with real processes ---------------------------------------------------------

CRAWLED = (MUSEUM, ARCHIVE, COOKING)
# Each page of the map's drawing: its link's name and where it leads.
NODES = """Array.from(document.querySelectorAll("svg.site-map a"), (a) => ({
  name: a.getAttribute("aria-label"), href: a.getAttribute("href"),
  focused: (a.focus(), document.activeElement === a)}))"""
LISTED = """Array.from(document.querySelectorAll(".site-map-page ul a"), (a) => a.textContent)"""
DIRECTORY_LINKS = """Array.from(document.querySelectorAll("ul.sites a"),
  (a) => [a.closest("ul").previousElementSibling.textContent, a.href, a.textContent])"""


@dataclass
class Crawled:
    campaign: Campaign  # its scheduler crawled three sites of its test web into a cluster
    proxy: Proxy  # on that cluster, given that scheduler


@pytest.fixture
def crawled(cluster_factory: Callable[..., Cluster], tmp_path: Path) -> Iterator[Crawled]:
    """The proxy starts while the agent crawls."""
    cluster = cluster_factory(nodes=1, replicas=1)
    with serve_web(tmp_path) as web:
        campaign = Campaign(cluster, tmp_path, web.resolve_args())
        proxy: Proxy | None = None
        try:
            campaign.start_scheduler("--no-expand")
            campaign.start_agent("a1")
            for site in CRAWLED:
                campaign.api("/api/sites", {"start_url": web.site_url(site), "seed": True})
            proxy = start_proxy(
                cluster, tmp_path / "proxy", tmp_path / "proxy.log", "--scheduler", campaign.url
            )

            def done() -> bool:
                sites = campaign.api("/api/sites")["sites"]
                return all(s["crawls"] == 1 and s["state"] == "idle" for s in sites)

            wait_until(done, "the three sites to be crawled", timeout=60)
            yield Crawled(campaign, proxy)
        finally:
            if proxy is not None:
                proxy.stop()
            campaign.stop()


async def _problems(tab: Tab, size: tuple[int, int]) -> list[str]:
    found = [f"{size}: {violation}" for violation in await tab.violations()]
    if not await tab.evaluate(STYLESHEET_READ):
        found.append(f"{size}: /dlweb.css was not loaded")
    if (wider := await tab.evaluate(OVERFLOW)) > 0:
        found.append(f"{size}: the page is {wider} px wider than the window")
    return found


async def test_the_directory_and_the_map_of_crawled_sites_in_a_browser(
    crawled: Crawled,
) -> None:
    campaign, proxy = crawled.campaign, crawled.proxy
    sites = {site_of(s["start_url"]) or "": s for s in campaign.api("/api/sites")["sites"]}
    museum = sites[MUSEUM]
    graph = CrawlGraph.from_json(campaign.api(f"/api/sites/{museum['id']}/graph"), "graph")
    async with Browser(proxy.url) as browser:
        found: list[str] = []
        for size in (LAPTOP, PHONE):
            for address in ("http://directory.dlweb/", f"http://map.dlweb/?site={museum['id']}"):
                found += [
                    f"{address} {p}"
                    for p in await _problems(await browser.open(address, size), size)
                ]
        assert not found, "\n".join(found)

        # The directory: each site under its topic and its domain, opening its captures.
        tab = await browser.open("http://directory.dlweb/")
        links = await tab.evaluate(DIRECTORY_LINKS)
        captures = {
            f"http://captures.dlweb/?url={quote(s['start_url'], safe='')}": name
            for name, s in sites.items()
        }
        groups: dict[str, list[str]] = {}
        for group, href, text in links:
            if text != "Map":
                groups.setdefault(group, []).append(captures[href])
        topic = next(group for group, names in groups.items() if MUSEUM in names)
        assert groups == {
            topic: [MUSEUM, ARCHIVE],
            "On topics of their own (1)": [COOKING],
            "web.test (3)": list(CRAWLED),
        }
        assert topic.startswith("museum, archive") and topic.endswith(" (2)")
        maps = sorted(href for _, href, text in links if text == "Map")
        assert maps == sorted(
            f"http://map.dlweb/?site={s['id']}" for s in sites.values() for _ in "ab"
        )

        # The map: a named, focusable link a page, listed again below the drawing.
        tab = await browser.open(f"http://map.dlweb/?site={museum['id']}")
        nodes = await tab.evaluate(NODES)
        when = format_iso(int(graph.finished) * 1_000_000)
        assert [n["name"] for n in nodes] == [f"{url} at {when}" for url in graph.pages]
        assert all(n["focused"] for n in nodes) and len(graph.pages) == 4
        assert sorted(await tab.evaluate(LISTED)) == sorted(graph.pages)

        # A page of the map opens that page as archived, at that date.
        target = graph.pages[1]
        back = parse_qs(urlsplit(nodes[1]["href"]).query)["back"][0]
        assert back == target
        await tab.follow(
            'document.querySelectorAll("svg.site-map a")[1]'
            '.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}))'
        )
        assert await tab.evaluate("location.href") == target
        title = await tab.evaluate("document.title")
        assert title in {"Collections", "Visit", "About the museum"}
    assert setting_of(proxy)["date"] == when

    # What cannot be shown is said, with the status that says why.
    for address, status, said in (
        (f"http://map.dlweb/?site={museum['id']}&at=2001", 404, "has no crawl begun at or"),
        ("http://map.dlweb/?site=999", 404, "no site &#x27;999&#x27;"),
        ("http://map.dlweb/?site=one", 400, "site=&#x27;one&#x27; is not a site number"),
        ("http://directory.dlweb/?threshold=2", 400, "is not a likeness above 0"),
    ):
        got, _, body = through(proxy, "GET", address)
        assert (got, said in body.decode()) == (status, True), (address, body[:2000])
