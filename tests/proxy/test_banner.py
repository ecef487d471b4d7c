"""The banner: a client that turns it on sees a bar atop archived HTML pages, with the capture's
date, its neighbours and the page's temporal coherence, measured from what the proxy served for
the page; other clients, other types and pages that forbid inline scripts get the archived bytes.
"""

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import aiohttp
import lxml.html
import pytest
from multidict import CIMultiDictProxy

from archive.timestamps import parse_time
from deploy.testing.cluster import Cluster
from deploy.testing.waits import eventually
from harbors.banner import bar
from harbors.consent import Consent
from tests.accessibility import Browser

from .conftest import Client, Proxy, Version, archive, header_block, post_set, put_setting

PAGE_AT = "2021-06-15T12:00:00Z"
# Each resource of the page and when it was captured; the page's own captures before and after.
RESOURCES = {
    "/style.css": ("text/css", "2021-06-15T10:00:00Z", b"body { background: url(/bg.png); }"),
    "/bg.png": ("image/png", "2021-06-20T00:00:00Z", b"\x89PNG background"),
    "/app.js": ("application/javascript", "2021-06-14T18:00:00Z", None),
    "/logo.png": ("image/png", "2020-01-01T00:00:00Z", b"\x89PNG logo"),
    "/frame.html": ("text/html", "2021-06-15T12:30:00Z", None),
    "/frame.png": ("image/png", "2021-07-01T00:00:00Z", b"\x89PNG in the frame"),
}
PAGE_BODY = (
    b'<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
    b'<link rel="stylesheet" href="/style.css"><script src="/app.js"></script>'
    b"<title>coherent</title></head><body><h1>The page</h1>"
    b'<img src="/logo.png"><img src="/missing.png"><iframe src="/frame.html"></iframe>'
    b"</body></html>"
)
FRAME_BODY = b'<!DOCTYPE html><html><body><p>the frame</p><img src="/frame.png"></body></html>'
# Once everything has loaded, the page's own script notes whether its frame shows a bar.
APP_JS = b"""window.addEventListener("load", function () {
  var inner = document.querySelector("iframe").contentDocument;
  document.body.setAttribute("data-frame", inner.body.textContent);
  document.body.setAttribute("data-frame-bar", String(!!inner.getElementById("dlweb-banner")));
});"""
CLIENT, OTHER, THIRD = "127.0.0.1", "127.0.0.2", "127.0.0.3"
DAY = 86_400_000_000  # the default span, in microseconds


def site(base: str) -> list[Version]:
    """The page at three dates and its resources, each captured once."""
    versions = [
        Version(base + "/", date, 200, header_block(200, "OK", ("Content-Type", "text/html")), body)
        for date, body in (
            ("2019-03-01T00:00:00Z", b"<html><body>early</body></html>"),
            (PAGE_AT, PAGE_BODY),
            ("2023-01-01T00:00:00Z", b"<html><body>late</body></html>"),
        )
    ]
    bodies = {"/app.js": APP_JS, "/frame.html": FRAME_BODY}
    for path, (content_type, date, body) in RESOURCES.items():
        header = header_block(200, "OK", ("Content-Type", content_type))
        versions.append(Version(base + path, date, 200, header, body or bodies[path]))
    return versions


NAVIGATION = {
    "Sec-Fetch-Dest": "document",
    "Sec-Fetch-Mode": "navigate",
    "Upgrade-Insecure-Requests": "1",
    "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
}


async def get(
    session: aiohttp.ClientSession,
    proxy: Proxy,
    url: str,
    headers: dict[str, str] = NAVIGATION,
    ssl: bool = True,
) -> tuple[int, "CIMultiDictProxy[str]", bytes]:
    """A GET through the proxy, by default as a browser loads a page."""
    async with session.get(url, proxy=proxy.url, headers=headers, ssl=ssl) as answer:
        return answer.status, answer.headers, await answer.read()


def test_the_bars_links_to_its_neighbours_name_each_capture_to_the_microsecond() -> None:
    url = "http://coherent.example/a page?x=1"
    previous = parse_time("2019-03-01T00:00:00.250001Z")
    following = parse_time("2023-01-01T00:00:00Z")
    consent = Consent(b"the cluster secret")
    made = bar(url, parse_time(PAGE_AT), previous, following, 0, CLIENT, consent)
    page = lxml.html.fromstring(made)
    for rel, time in (("prev", previous), ("next", following)):
        [link] = page.xpath(f'//a[@rel="{rel}"]/@href')
        parts = urlsplit(link)
        assert (parts.netloc, parts.path) == ("date.dlweb", "/set")
        query = parse_qs(parts.query)
        assert parse_time(query["at"][0]) == time
        assert query["back"] == ["http://coherent.example/a%20page?x=1"]
        # Its token lets this client, and no other, set that date and open that page.
        [token] = query["token"]
        assert consent.allows_link(CLIENT, time, url, token)
        assert not consent.allows_link(OTHER, time, url, token)
        assert not consent.allows_link(CLIENT, time + 1, url, token)


# What the bar shows, read in its closed shadow root (`this`).
READ_BAR = """function () {
  return {
    time: Array.from(this.querySelectorAll("time"), (t) => t.getAttribute("datetime")),
    prev: Array.from(this.querySelectorAll('a[rel="prev"]'), (a) => a.getAttribute("href")),
    next: Array.from(this.querySelectorAll('a[rel="next"]'), (a) => a.getAttribute("href")),
    links: Array.from(this.querySelectorAll("a"), (a) => a.getAttribute("href")),
    figure: Array.from(this.querySelectorAll("iframe"), (f) => f.getAttribute("src")),
  };
}"""
# The figure as its frame draws it.
READ_FIGURE = """(() => {
  const figure = document.getElementById("dlweb-coherence");
  return {
    count: figure.dataset.count, earliest: figure.dataset.earliest, latest: figure.dataset.latest,
    beyond: figure.dataset.beyond, missing: figure.dataset.missing,
    marked: Array.from(document.querySelectorAll("li.beyond"), (li) => li.textContent),
  };
})()"""
# The page as its own scripts see it once loaded: the body's first element (the bar's host), what
# the page's own script saw of its frame, and whether any of the bar's links is in reach.
READ_PAGE = """(() => ({
  first: document.body.firstElementChild.id,
  frame: document.body.dataset.frame, frameBar: document.body.dataset.frameBar,
  links: document.documentElement.outerHTML.includes("captures.dlweb"),
}))()"""


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_the_bar_shows_the_date_neighbours_and_coherence_in_chromium(
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    sessions: Client,
    scheme: str,
) -> None:
    base = f"{scheme}://coherent.example"
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, site(base))
    proxy = proxy_factory(cluster)
    assert put_setting(proxy, CLIENT, date=PAGE_AT)[0] == 200
    ssl = scheme != "https"  # the proxy's CA is not trusted here
    # Not before the client turns it on.
    assert (await get(sessions(CLIENT), proxy, base + "/", ssl=ssl))[2] == PAGE_BODY
    assert put_setting(proxy, CLIENT, banner=True)[0] == 200

    async with Browser(proxy.url) as browser:
        assert browser.connection is not None
        await browser.connection.send("Security.setIgnoreCertificateErrors", {"ignore": True})
        tab = await browser.open(base + "/")
        bar = await tab.in_shadow_root("#dlweb-banner", READ_BAR)
        back = quote(base + "/", safe="")
        assert bar["time"] == [PAGE_AT]
        [previous], [following] = bar["prev"], bar["next"]
        assert previous.startswith(f"http://date.dlweb/set?at=20190301000000&back={back}&token=")
        assert following.startswith(f"http://date.dlweb/set?at=20230101000000&back={back}&token=")
        assert f"http://captures.dlweb/?url={back}" in bar["links"]
        assert bar["figure"] == [f"{scheme}://api.dlweb/coherence/figure?url={back}"]
        # Over HTTPS the browser says the frame is a frame: its document and image are the
        # page's. Over HTTP nothing tells it from a page, so they count for the frame's own load.
        served = ["/style.css", "/bg.png", "/app.js", "/logo.png"]
        if scheme == "https":
            served += ["/frame.html", "/frame.png"]
        dates = [PAGE_AT] + [RESOURCES[path][1] for path in served]
        beyond = [
            path
            for path in served
            if abs(parse_time(RESOURCES[path][1]) - parse_time(PAGE_AT)) > DAY
        ]
        figure_frame = await browser.frame(f"{scheme}://api.dlweb/coherence/figure")

        async def counted() -> bool:
            figure = await figure_frame.evaluate(READ_FIGURE)
            # The missing resource's request may come after the others: both are waited for.
            return bool(figure.get("count") == str(len(served)) and figure.get("missing") == "1")

        await eventually(counted, "the figure to count the page's resources and the missing one")
        figure = await figure_frame.evaluate(READ_FIGURE)
        assert (figure["earliest"], figure["latest"]) == (min(dates), max(dates))
        assert figure["beyond"] == str(len(beyond)) and figure["missing"] == "1", figure
        marked = sorted(item.rsplit(" ", 1)[1] for item in figure["marked"])
        assert marked == sorted(base + path for path in beyond)
        # The bar is the body's first element, its links out of the page's reach; the page's
        # frame shows no bar.
        page = await tab.evaluate(READ_PAGE)
        assert page == {
            "first": "dlweb-banner",
            "frame": "the frame",
            "frameBar": "false",
            "links": False,
        }

    # The API the bar read says the same, and the other client sees the page as archived.
    async with sessions(CLIENT).get(
        "http://api.dlweb/coherence", params={"url": base + "/"}, proxy=proxy.url
    ) as answer:
        report = json.loads(await answer.read())
    assert [r["url"] for r in report["resources"]] == [
        base + path for path in sorted(served, key=lambda path: RESOURCES[path][1])
    ]
    assert report["missing"] == [base + "/missing.png"] and report["span"] == "1 day"
    other = sessions(OTHER)
    assert put_setting(proxy, OTHER, date=PAGE_AT)[0] == 200
    assert (await get(other, proxy, base + "/", ssl=ssl))[2] == PAGE_BODY


HTML = "text/html; charset=utf-8"
STRICT = ("Content-Security-Policy", "script-src 'self'")
LOOSE = ("Content-Security-Policy", "script-src 'self' 'unsafe-inline'; img-src *")
# Each URL that gets no bar, even asked for as a page by the client that turned it on.
SAME: dict[str, tuple[tuple[tuple[str, str], ...], bytes]] = {
    "/logo.png": ((("Content-Type", "image/png"),), b"\x89PNG not really"),
    "/data.json": ((("Content-Type", "application/json"),), b'{"html": "<body>"}'),
    "/page.xhtml": (
        (("Content-Type", "application/xhtml+xml"),),
        b"<html xmlns='http://www.w3.org/1999/xhtml'><body/></html>",
    ),
    "/strict.html": ((("Content-Type", HTML), STRICT), b"<html><body>no inline</body></html>"),
    "/meta.html": (
        (("Content-Type", HTML),),
        b"<html><head><meta http-equiv='Content-Security-Policy' content=\"style-src 'self'\">"
        b"</head><body>meta</body></html>",
    ),
    "/frames.html": (
        (("Content-Type", HTML),),
        b"<html><head></head><frameset><frame src='/a'></frameset></html>",
    ),
}
PLAIN = b"<!DOCTYPE html><html><head><title>plain</title></head><body class='x'>plain</body></html>"
SHOWN: dict[str, tuple[tuple[tuple[str, str], ...], bytes]] = {
    "/plain.html": ((("Content-Type", HTML),), PLAIN),
    "/packed.html": ((("Content-Type", HTML), ("Content-Encoding", "gzip")), gzip.compress(PLAIN)),
    "/loose.html": ((("Content-Type", HTML), LOOSE), b"<html><body>inline allowed</body></html>"),
}


async def test_only_archived_html_pages_of_the_client_that_asked_get_the_bar(
    cluster_factory: Callable[..., Cluster], proxy_factory: Callable[..., Proxy], sessions: Client
) -> None:
    base = "http://types.example"
    versions = [
        Version(base + path, PAGE_AT, 200, header_block(200, "OK", *headers), body)
        for path, (headers, body) in {**SAME, **SHOWN}.items()
    ]
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, versions)
    proxy = proxy_factory(cluster)
    asking, bystander = sessions(OTHER), sessions(THIRD)
    status, answer = put_setting(proxy, OTHER, banner=True)
    assert status == 200 and answer["banner"] is True

    for path, (_, body) in SAME.items():  # as archived, byte for byte, even asked as a page
        status, headers, got = await get(asking, proxy, base + path)
        assert (status, got, headers["Content-Length"]) == (200, body, str(len(body))), path
    frame = {**NAVIGATION, "Sec-Fetch-Dest": "iframe"}
    assert (await get(asking, proxy, base + "/plain.html", frame))[2] == PLAIN
    fetched = {"Sec-Fetch-Dest": "empty", "Accept": "*/*"}
    assert (await get(asking, proxy, base + "/plain.html", fetched))[2] == PLAIN
    assert (await get(bystander, proxy, base + "/plain.html"))[2] == PLAIN

    status, headers, got = await get(asking, proxy, base + "/plain.html")
    head, _, rest = PLAIN.partition(b"<body class='x'>")
    assert got.startswith(head + b"<body class='x'><div id=\"dlweb-banner\"><template")
    assert got.endswith(b"</script>" + rest) and headers["Content-Length"] == str(len(got))
    status, headers, unpacked = await get(asking, proxy, base + "/packed.html")
    assert "Content-Encoding" not in headers and headers["Content-Length"] == str(len(unpacked))
    assert headers["Cache-Control"] == "no-store"
    assert unpacked.replace(b"packed.html", b"plain.html") == got
    assert b'id="dlweb-banner"' in (await get(asking, proxy, base + "/loose.html"))[2]

    # The bystander turns it on at the date harbor; then it sees the bar too.
    assert post_set(proxy, THIRD, banner="on")[0] == 303
    assert b'id="dlweb-banner"' in (await get(bystander, proxy, base + "/plain.html"))[2]


async def test_coherence_questions_that_cannot_be_answered_say_why(
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    sessions: Client,
    tmp_path: Path,
) -> None:
    base = "http://types.example"
    cluster = cluster_factory(nodes=1, replicas=1)
    plain = Version(
        base + "/", PAGE_AT, 200, header_block(200, "OK", ("Content-Type", HTML)), PLAIN
    )
    await archive(cluster, [plain])
    proxy = proxy_factory(cluster, "--coherence-span", "12h")
    client = sessions(OTHER)

    async def coherence(**query: str) -> tuple[int, dict[str, object]]:
        async with client.get(
            "http://api.dlweb/coherence", params=query, proxy=proxy.url
        ) as answer:
            return answer.status, json.loads(await answer.read())

    status, answer = await coherence(url=base + "/")
    assert status == 404 and "only while the banner is on" in str(answer["error"])
    assert put_setting(proxy, OTHER, banner=True)[0] == 200
    await get(client, proxy, base + "/")
    status, answer = await coherence(url=base + "/")
    assert status == 200 and answer["span"] == "12 hours" and answer["date"] == PAGE_AT
    assert (await coherence(url=base + "/", span="2d"))[1]["span_seconds"] == 172800
    for query, said in (
        ({}, "give the page's URL"),
        ({"url": base + "/", "span": "soon"}, "give a duration"),
        ({"url": base + "/", "at": "last week"}, "neither 4-14 digits"),
    ):
        status, answer = await coherence(**query)
        assert status == 400 and said in str(answer["error"]), answer
    async with client.post("http://api.dlweb/coherence", proxy=proxy.url) as r:
        assert r.status == 405

    done = subprocess.run(
        [sys.executable, "-m", "proxy", "--coherence-span", "soon", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "give a duration such as 1d" in done.stderr
    assert "Traceback" not in done.stderr
