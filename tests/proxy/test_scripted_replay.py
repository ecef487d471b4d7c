"""A page that builds itself with scripts, recorded by pywb's recording proxy from a live site and
replayed by dlweb's proxy once the site is gone.

At every load the page asks for URLs of its own: a script with a cache buster
(`/app.js?_=<Date.now()>`), JSON with a timestamp (`/config.json?ts=<seconds>`), and a POST to
`/api/items` whose JSON body chooses the images drawn. Replaying it therefore needs lookups that
tolerate the cache buster and the timestamp (fuzzy matching, answered with `X-Dlweb-Match: fuzzy`)
and POST requests looked up by their body (the method and the body folded into the key, as pywb
does: `__wb_method=post&query=museum&page=1`).
"""

import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from deploy.testing.cluster import Cluster
from deploy.testing.pywb import recording_pywb
from tests.browser import browse, net_log_exchanges, png_pixels, screenshot
from tests.exchange.conftest import dlweb
from tests.scripted_site import (
    APP,
    CONFIG_BODY,
    IMAGE_SIZE,
    ITEMS,
    QUERY,
    READY_TITLE,
    Received,
    ScriptedSite,
    items_answer,
    post_body,
)

from .conftest import Proxy

WINDOW = (800, 600)
GARDEN = {"query": "garden", "page": 1}  # a second body POSTed while recording
# Where the page draws its images: below the 60-pixel heading, 16 pixels of padding, 16 between.
IMAGES_TOP = 60 + 16


@dataclass(frozen=True)
class Recorded:
    """What recording the live site left: its address (nothing listens there any more), what it
    received, pywb's WARC files, and Chromium's screenshot of the live page."""

    site: str
    received: list[Received]
    warcs: list[Path]
    records: list[tuple[str, str, bytes]]
    reference: bytes

    def asked(self, path: str, method: str = "GET") -> list[Received]:
        """The requests the site received for `path` (its query aside) with that method."""
        return [r for r in self.received if r.path == path and r.method == method]


def post(opener: urllib.request.OpenerDirector, url: str, body: bytes) -> tuple[int, bytes]:
    """POST a JSON body; the status and the body answered, faults included."""
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as fault:
        return fault.code, fault.read()


def match_kind(value: str | None) -> str | None:
    """How the capture served was found, from the value of `X-Dlweb-Match` (`fuzzy`, which may
    be followed by `;` and parameters naming the capture's URL and the rule); None without it."""
    return None if value is None else value.partition(";")[0].strip()


def through(proxy: str) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Chromium loads the live page twice through pywb's recording proxy (once for its DOM, once
    for the reference screenshot), and a second body is POSTed to /api/items; then the site
    stops."""
    work = tmp_path_factory.mktemp("recording")
    with ScriptedSite() as site, recording_pywb(work) as pywb:
        page = site.base + "/"
        dom = browse(pywb.proxy, work / "profile-dom", page, "--dump-dom", window=WINDOW)
        assert f"<title>{READY_TITLE}</title>" in dom, dom[:300]
        reference = screenshot(
            pywb.proxy, work / "profile-shot", page, work / "live.png", window=WINDOW
        )
        status, _ = post(through(pywb.proxy), site.base + "/api/items", post_body(GARDEN))
        assert status == 200
        served = len(site.received)
        records = pywb.wait_recorded(
            lambda records: sum(kind == "response" for kind, _, _ in records) >= served
        )
        received = list(site.received)
        warcs = pywb.warcs()
    return Recorded(site.base, received, warcs, records, reference)


@pytest.fixture
def proxy(
    recorded: Recorded,
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
) -> Proxy:
    """A cluster holding pywb's WARC files, imported with `dlweb import`, and a proxy on it."""
    cluster = cluster_factory(nodes=1, replicas=1)
    done = dlweb("import", "-c", str(cluster.config_path), *map(str, recorded.warcs))
    assert done.returncode == 0, done.stderr
    return proxy_factory(cluster, "--log-requests")


def test_the_live_page_asks_for_a_cache_buster_a_timestamp_and_a_post(recorded: Recorded) -> None:
    # Two loads of the page, each with a cache buster and a timestamp of its own.
    busters = [r.query for r in recorded.asked("/app.js")]
    assert len(busters) == 2 and len(set(busters)) == 2, busters
    assert all(re.fullmatch(r"_=\d{13}", query) for query in busters), busters
    stamps = [r.query for r in recorded.asked("/config.json")]
    assert len(stamps) == 2 and all(re.fullmatch(r"ts=\d{10}", query) for query in stamps), stamps
    posted = [r.body for r in recorded.asked("/api/items", "POST")]
    assert posted.count(post_body(QUERY)) == 2 and posted.count(post_body(GARDEN)) == 1
    for item in ITEMS["museum"]:
        assert len(recorded.asked(item.path)) == 2, item.path
    # The live page drew its background, its three images in a row, and the done box.
    live = png_pixels(recorded.reference)
    assert live.rgb(WINDOW[0] - 10, WINDOW[1] - 10) == (236, 228, 206)
    for number, item in enumerate(ITEMS["museum"]):
        x = 16 + number * (IMAGE_SIZE[0] + 16) + IMAGE_SIZE[0] // 2
        assert live.rgb(x, IMAGES_TOP + IMAGE_SIZE[1] // 2) == item.rgb, item
    assert live.rgb(36, IMAGES_TOP + 150 + 16 + 16 + 20) == (20, 20, 20)


def test_pywb_records_each_post_body_in_a_request_record(recorded: Recorded) -> None:
    items = recorded.site + "/api/items"
    requests = [body for kind, uri, body in recorded.records if kind == "request" and uri == items]
    assert sorted(requests) == sorted([post_body(QUERY), post_body(QUERY), post_body(GARDEN)])
    responses = [
        body for kind, uri, body in recorded.records if kind == "response" and uri == items
    ]
    assert sorted(responses) == sorted(
        [items_answer("museum"), items_answer("museum"), items_answer("garden")]
    )


def test_chromium_replays_the_scripted_page_pixel_for_pixel_once_the_site_is_gone(
    recorded: Recorded, proxy: Proxy, tmp_path: Path
) -> None:
    page = recorded.site + "/"
    net_log = tmp_path / "net-log.json"
    dom = browse(
        proxy.url,
        tmp_path / "profile-dom",
        page,
        "--dump-dom",
        f"--log-net-log={net_log}",
        window=WINDOW,
    )
    assert f"<title>{READY_TITLE}</title>" in dom, re.findall(r"<title>.*?</title>", dom)
    replayed = png_pixels(
        screenshot(proxy.url, tmp_path / "profile-shot", page, tmp_path / "replay.png", WINDOW)
    )
    live = png_pixels(recorded.reference)
    differences = replayed.differences(live)
    assert not differences, (
        f"{len(differences)} pixels differ from the live page's, the first at {differences[0]}"
    )
    # What the page asked of the proxy: everything came back, the script and the JSON through
    # fuzzy matching, for a cache buster and a timestamp of this moment, never recorded.
    exchanges = [
        e
        for e in net_log_exchanges(net_log)
        if e.url.startswith(recorded.site) and not e.url.endswith("/favicon.ico")
    ]
    assert all(e.status == 200 for e in exchanges), [(e.url, e.status) for e in exchanges]
    for path in ("/app.js", "/config.json"):
        asked = [e for e in exchanges if urlsplit(e.url).path == path]
        assert asked, path
        recorded_queries = {r.query for r in recorded.asked(path)}
        for exchange in asked:
            assert urlsplit(exchange.url).query not in recorded_queries, exchange.url
            assert match_kind(exchange.response.get("x-dlweb-match")) == "fuzzy", exchange
    posts = [e for e in exchanges if e.method == "POST"]
    assert [urlsplit(e.url).path for e in posts] == ["/api/items"], posts


def test_cache_busters_and_timestamps_are_matched_fuzzily(recorded: Recorded, proxy: Proxy) -> None:
    opener = through(proxy.url)
    now = time.time()
    for url, body in (
        (f"{recorded.site}/app.js?_={int(now * 1000) + 12345}", APP),
        (f"{recorded.site}/config.json?ts={int(now) + 67}", CONFIG_BODY),
    ):
        with opener.open(url, timeout=30) as answer:
            assert answer.status == 200, url
            assert match_kind(answer.headers["X-Dlweb-Match"]) == "fuzzy", url
            assert answer.read() == body, url
    # The URL as recorded is an exact match, not a fuzzy one.
    buster = recorded.asked("/app.js")[0].query
    with opener.open(f"{recorded.site}/app.js?{buster}", timeout=30) as answer:
        assert answer.status == 200
        assert match_kind(answer.headers["X-Dlweb-Match"]) != "fuzzy"
        assert answer.read() == APP


def test_a_post_is_answered_with_the_capture_of_its_own_body(
    recorded: Recorded, proxy: Proxy
) -> None:
    opener = through(proxy.url)
    items = recorded.site + "/api/items"
    assert post(opener, items, post_body(QUERY)) == (200, items_answer("museum"))
    assert post(opener, items, post_body(GARDEN)) == (200, items_answer("garden"))
    # A body never recorded does not get the page's recorded answer: a 404 fault, or another
    # capture.
    status, body = post(opener, items, post_body({"query": "zoo", "page": 1}))
    assert body != items_answer("museum"), status
