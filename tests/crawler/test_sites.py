"""The crawler's test web behaves: routing by host and address, conditions, instrumentation."""

import email.utils
import http.client
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.crawler.sites import (
    ALPHA,
    BETA,
    CHANGES,
    EXPECTED_ALPHA,
    GAMMA,
    HOSTS,
    IDENTICAL,
    INVALID_LINK,
    LEVELS,
    SITES,
    TRAPS,
    Sites,
    serve_sites,
)

A = HOSTS[ALPHA]


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sites]:
    with serve_sites(tmp_path_factory.mktemp("web")) as running:
        yield running


def test_it_starts_on_one_port_of_every_address(sites: Sites) -> None:
    assert sites.process.poll() is None
    assert sites.resolve_args() == [f"{host}:{address}" for host, address in HOSTS.items()]
    assert set(sites.stats()) == set(HOSTS.values())
    assert sites.versions() == dict.fromkeys(HOSTS, 1)
    home = sites.get(ALPHA, "/")
    assert home.status == 200
    assert sites.url(BETA, "/logo.png").encode() in home.body
    assert b"Gamma" in sites.get(GAMMA, "/").body
    assert sites.get(BETA, "/logo.png").headers["Content-Type"] == "image/png"


def test_a_host_is_served_on_its_own_address_only(sites: Sites) -> None:
    sites.reset()
    assert sites.get(ALPHA, "/", address=HOSTS[GAMMA]).status == 421
    assert sites.get(GAMMA, "/", address=A).status == 421
    assert sites.get("www.unknown.test", "/", address=A).status == 421
    assert sites.get(ALPHA, "/nothing-here.html").status == 404
    log = sites.log()
    assert [(e["address"], e["host"].split(":")[0], e["status"]) for e in log] == [
        (HOSTS[GAMMA], ALPHA, 421),
        (A, GAMMA, 421),
        (A, "www.unknown.test", 421),
        (A, ALPHA, 404),
    ]


def test_redirects(sites: Sites) -> None:
    first = sites.get(ALPHA, "/redirect/1")
    assert (first.status, first.headers["Location"]) == (301, sites.url(ALPHA, "/redirect/2"))
    second = sites.get(ALPHA, "/redirect/2")
    assert (second.status, second.headers["Location"]) == (302, "/redirected.html")
    assert sites.get(ALPHA, "/redirected.html").status == 200
    broken = sites.get(ALPHA, "/broken-redirect")
    assert broken.status == 302 and "Location" not in broken.headers
    loop = sites.get(ALPHA, "/redirect-loop")
    assert (loop.status, loop.headers["Location"]) == (301, "/redirect-loop")


@pytest.mark.parametrize("path", ["/img/home.png", "/level1/a.html", "/css/main.css"])
def test_conditional_requests(sites: Sites, path: str) -> None:
    full = sites.get(ALPHA, path)
    tag, modified = full.headers["ETag"], full.headers["Last-Modified"]
    assert tag.startswith('"') and not tag.startswith('W/"')
    for condition in ({"If-None-Match": tag}, {"If-Modified-Since": modified}):
        unchanged = sites.get(ALPHA, path, condition)
        assert (unchanged.status, unchanged.body) == (304, b"")
        assert unchanged.headers["ETag"] == tag
    earlier = email.utils.format_datetime(
        email.utils.parsedate_to_datetime(modified).replace(year=2000), usegmt=True
    )
    for condition in ({"If-None-Match": '"other"'}, {"If-Modified-Since": earlier}):
        again = sites.get(ALPHA, path, condition)
        assert (again.status, again.body) == (200, full.body)


def test_robots(sites: Sites) -> None:
    robots = sites.get(ALPHA, "/robots.txt").body.decode()
    assert robots.splitlines()[:2] == ["User-agent: *", "Disallow: /private/"]
    assert f"Sitemap: {sites.url(ALPHA, '/sitemap.xml')}" in robots
    assert sites.get(BETA, "/robots.txt").body == b"User-agent: *\nDisallow:\n"
    assert (
        sites.url(ALPHA, "/only-in-sitemap.html").encode() in sites.get(ALPHA, "/sitemap.xml").body
    )


def test_overlapping_requests_are_caught(sites: Sites) -> None:
    sites.reset()
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def ask() -> None:
        barrier.wait()
        statuses.append(sites.get(ALPHA, "/slow.html?delay=0.3").status)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200, 200]
    stats = sites.stats()
    assert (stats[A]["max_in_flight"], stats[A]["connections"], stats[A]["requests"]) == (2, 2, 2)
    assert stats[HOSTS[BETA]]["requests"] == 0


def test_sequential_requests_are_one_at_a_time(sites: Sites) -> None:
    sites.reset()
    for path in ("/", "/level1/a.html", "/img/home.png"):
        sites.get(ALPHA, path)
    stats = sites.stats()[A]
    assert (stats["max_in_flight"], stats["connections"], stats["requests"]) == (1, 3, 3)
    sites.reset()
    connection = http.client.HTTPConnection(A, sites.port, timeout=10)
    for path in ("/", "/level1/a.html", "/img/home.png"):
        connection.request("GET", path, headers={"Host": f"{ALPHA}:{sites.port}"})
        assert connection.getresponse().read()
    connection.close()
    stats = sites.stats()[A]
    assert (stats["max_in_flight"], stats["connections"], stats["requests"]) == (1, 1, 3)


def test_a_request_given_up_is_over(sites: Sites) -> None:
    sites.reset()
    connection = http.client.HTTPConnection(A, sites.port, timeout=10)
    connection.request("GET", "/endless.bin", headers={"Host": f"{ALPHA}:{sites.port}"})
    response = connection.getresponse()
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert len(response.read(1 << 20)) == 1 << 20
    connection.close()
    deadline = time.monotonic() + 10
    while sites.stats()[A]["in_flight"]:
        assert time.monotonic() < deadline, "the endless answer goes on without its client"
        time.sleep(0.02)
    assert sites.log()[0]["status"] == 200


def test_the_log_keeps_the_request_headers(sites: Sites) -> None:
    sites.reset()
    tag = sites.get(ALPHA, "/img/shared.png").headers["ETag"]
    sites.get(ALPHA, "/img/shared.png?x=1", {"If-None-Match": tag, "User-Agent": "probe/1"})
    sites.get(ALPHA, "/", {"If-Modified-Since": "Wed, 01 Jan 2025 12:00:00 GMT"})
    first, second, third = sites.log()
    assert (second["path"], second["if_none_match"], second["user_agent"]) == (
        "/img/shared.png?x=1",
        tag,
        "probe/1",
    )
    assert (second["method"], second["status"], second["address"]) == ("GET", 304, A)
    assert (third["if_modified_since"], third["status"]) == ("Wed, 01 Jan 2025 12:00:00 GMT", 304)
    assert first["time"] <= first["end"] <= second["time"]


class _Links(HTMLParser):
    """The URLs an HTML page refers to, as written, by parsing only."""

    ATTRIBUTES = {("a", "href"), ("link", "href"), ("img", "src"), ("script", "src")}
    ATTRIBUTES |= {("frame", "src"), ("iframe", "src")}

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.found += [v for (n, v) in attrs if v and (tag, n) in self.ATTRIBUTES]
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            self.found.append((values.get("content") or "").split("url=", 1)[1])


CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)""")
XML_LINK = re.compile(r"<(?:loc|link)>([^<]+)</(?:loc|link)>")


def _join(base: str, link: str) -> str:
    try:
        return urllib.parse.urljoin(base, link)
    except ValueError:
        return link  # no URL: reported as it is written


def test_expected_alpha_is_what_its_links_lead_to(sites: Sites) -> None:
    """A crawl by parsing, robots.txt obeyed, traps entered once, bad URLs not asked for."""
    met: set[tuple[str, str]] = set()
    external: set[tuple[str, str]] = set()
    excluded: set[tuple[str, str]] = set()
    invalid: set[str] = set()
    queue = [sites.url(ALPHA, "/"), sites.url(ALPHA, "/robots.txt")]
    while queue:
        address = queue.pop()
        try:
            parts = urllib.parse.urlsplit(address)
            host = parts.hostname
        except ValueError:
            invalid.add(address)
            continue
        place = (host or "", parts.path + (f"?{parts.query}" if parts.query else ""))
        if host == GAMMA:
            external.add(place)
            continue
        if place[1].startswith("/private/"):
            excluded.add(place)
            continue
        if place in met:
            continue
        met.add(place)
        if place in EXPECTED_ALPHA["bad"]:
            continue
        answer = sites.get(*place)
        if answer.status in (301, 302):
            queue.append(_join(address, answer.headers["Location"]))
            continue
        assert answer.status == 200, place
        if host != ALPHA or place[1].startswith(TRAPS):
            continue
        kind, text = answer.headers["Content-Type"], answer.body.decode(errors="replace")
        found: list[str] = []
        if kind.startswith("text/html"):
            parser = _Links()
            parser.feed(text)
            found = parser.found
        elif kind.startswith("text/css"):
            found = CSS_URL.findall(text)
        elif kind.startswith("text/plain"):
            found = [
                line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Sitemap:")
            ]
        elif "xml" in kind:
            found = XML_LINK.findall(text)
        queue += [_join(address, link) for link in found]
    assert met == EXPECTED_ALPHA["fetched"] - EXPECTED_ALPHA["scripted"]
    assert external == EXPECTED_ALPHA["external"]
    assert excluded == EXPECTED_ALPHA["never"]
    assert invalid == {INVALID_LINK}
    assert {(ALPHA, path) for path in LEVELS} <= EXPECTED_ALPHA["pages"]
    for host, path in EXPECTED_ALPHA["scripted"]:
        assert sites.get(host, path).headers["Content-Type"] == "image/png"
        assert path.encode() in sites.get(ALPHA, "/js/app.js").body
    for same in IDENTICAL:
        assert len({sites.get(host, path).body for host, path in same}) == 1
    assert not [e for e in sites.log() if e["path"].startswith("/private/")]


def test_trap_urls_never_end(sites: Sites) -> None:
    month = sites.get(ALPHA, "/calendar?month=2026-12").body
    assert b'href="/calendar?month=2027-01"' in month and b"date=2026-12-31" in month
    assert sites.get(ALPHA, "/calendar/day?date=2026-12-31").status == 200
    deep = "/loop/" + "again/" * 40
    assert b'href="again/"' in sites.get(ALPHA, deep).body


def test_change_publishes_a_new_version(tmp_path: Path) -> None:
    with serve_sites(tmp_path) as sites:
        before = {(h, p): sites.get(h, p) for h in SITES for p in SITES[h](sites.port, 1)}
        for host in SITES:
            assert sites.change(host) == 2
        assert sites.versions() == dict.fromkeys(SITES, 2)
        after = {place: sites.get(*place) for place in before}
        changed = {place for place in before if before[place].body != after[place].body}
        assert changed == {(host, path) for host, paths in CHANGES.items() for path in paths}
        assert any(path.endswith(".png") for _, path in changed)
        for place, old in before.items():
            if "ETag" not in old.headers:
                continue
            condition = {"If-None-Match": old.headers["ETag"]}
            assert sites.get(*place, condition).status == (200 if place in changed else 304)
            condition = {"If-Modified-Since": old.headers["Last-Modified"]}
            assert sites.get(*place, condition).status == (200 if place in changed else 304)
