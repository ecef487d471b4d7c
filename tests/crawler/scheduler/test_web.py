"""The scheduler's test web is what its description says: routing, the site graph, languages and
keywords, HITS ranks, focused discovery, a site that changes at every round, one that never
does, a feed that moves when told to, the instrumentation, and a process that never outlives
its test."""

import json
import math
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import lxml.html
import pytest
from protego import Protego

from crawler.report import chunk_signatures, words_of
from deploy.testing.waits import wait_until
from tests.crawler.scheduler.web import (
    ACCEPT,
    ADDRESSES,
    ALICE,
    BOB,
    CHANGING,
    DEPTHS,
    EDGES,
    FEED_PATH,
    FEED_SITE,
    FRENCH,
    FRENCH_KEYWORDS,
    HOME,
    HOSTS,
    IRRELEVANT,
    KEYWORDS,
    LANGUAGES,
    MILL,
    NEVER_DISCOVERED,
    RELEVANT,
    SEEDS,
    SITES,
    SPECS,
    STABLE,
    TOP_AUTHORITIES,
    TOP_HUBS,
    TOPICS,
    Web,
    host_of,
    root_of,
    serve_web,
    site_of,
)
from tests.crawler.sites import ROOT

ANCHOR = re.compile(r"<a\s[^>]*?href=\"([^\"]*)\"")
STOP_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    with serve_web(tmp_path_factory.mktemp("web")) as running:
        yield running


@dataclass
class Crawled:
    pages: dict[str, bytes]  # URL -> body
    external: set[str]  # the other sites its pages link to


def crawl(web: Web, site: str) -> Crawled:
    """Every page of `site` its start page leads to, and the sites they link to."""
    start = web.site_url(site)
    pages: dict[str, bytes] = {}
    external: set[str] = set()
    queue, seen = deque([start]), {start}
    while queue:
        page = queue.popleft()
        answer = web.fetch(page)
        assert answer.status == 200, page
        pages[page] = answer.body
        for href in ANCHOR.findall(answer.body.decode()):
            target = urllib.parse.urljoin(page, href)
            owner = site_of(target)
            assert owner is not None, (page, href)
            if owner != site:
                external.add(owner)
            elif target not in seen:
                seen.add(target)
                queue.append(target)
    return Crawled(pages, external)


@pytest.fixture(scope="module")
def crawled(web: Web) -> dict[str, Crawled]:
    web.reset(everything=True)
    return {site: crawl(web, site) for site in SITES}


def text(body: bytes) -> str:
    return str(lxml.html.fromstring(body).text_content()).lower()


def test_the_description_holds_together() -> None:
    assert len(SITES) == 22 and len(HOSTS) == 21 and len(ADDRESSES) == 21
    assert HOSTS[HOME] == SITES[ALICE] == SITES[BOB] == "127.0.2.21"
    assert set(SITES) == RELEVANT | IRRELEVANT and not RELEVANT & IRRELEVANT
    assert set(SEEDS) | TOP_HUBS | TOP_AUTHORITIES | FRENCH <= RELEVANT
    assert {CHANGING, STABLE, FEED_SITE} <= RELEVANT and len({CHANGING, STABLE, FEED_SITE}) == 3
    assert NEVER_DISCOVERED <= IRRELEVANT
    assert {TOPICS[site] for site in IRRELEVANT} == {"cooking", "cars"}
    assert {TOPICS[site] for site in RELEVANT} == {"heritage"}
    assert {site for site, language in LANGUAGES.items() if language == "fr"} == FRENCH
    assert {source for source, _ in EDGES} | {target for _, target in EDGES} <= set(SITES)
    assert all(source != target for source, target in EDGES)
    assert ACCEPT[ALICE] == "//home.web.test/~alice/" and ACCEPT[SEEDS[0]] == "//site-01.web.test"
    assert site_of("http://home.web.test:80/~bob/recipes.html") == BOB
    assert site_of("http://home.web.test/") is None and site_of("http://else.test/") is None


def test_every_site_is_served_on_its_own_address(web: Web) -> None:
    assert web.process.poll() is None
    assert web.resolve_args() == [f"{host}:{address}" for host, address in HOSTS.items()]
    assert web.resolve_map() == {host: [address] for host, address in HOSTS.items()}
    for site in SITES:
        host = host_of(site)
        home = web.get(host, root_of(site))
        assert home.status == 200, site
        assert f"<title>{SPECS[site].name}</title>" in home.body.decode(), site
        assert home.headers["Content-Type"] == "text/html; charset=utf-8"
        if site != CHANGING:  # whose every `/` is a new round
            assert web.fetch(web.site_url(site)).body == home.body
        other = next(address for address in ADDRESSES if address != HOSTS[host])
        assert web.get(host, root_of(site), address=other).status == 421
        assert web.get(host, root_of(site) + "nothing-here.html").status == 404
    assert web.get("www.unknown.test", "/", address=ADDRESSES[0]).status == 421
    assert web.get(HOME, "/").status == 404  # the shared host itself is no site
    moved = web.get(HOME, "/~alice")
    assert (moved.status, moved.headers["Location"]) == (301, "/~alice/")


def test_robots_allow_everything(web: Web) -> None:
    for host in HOSTS:
        answer = web.get(host, "/robots.txt")
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain")
        rules = Protego.parse(answer.body.decode())
        assert rules.can_fetch(web.url(host, "/any/page.html"), "dlweb")


def test_the_served_links_are_the_edges(web: Web, crawled: dict[str, Crawled]) -> None:
    served = {(site, target) for site, found in crawled.items() for target in found.external}
    assert served == EDGES
    for site, found in crawled.items():
        assert 3 <= len(found.pages) <= 6, site
        assert len(found.pages) == len(SPECS[site].pages) + (site == FEED_SITE), site


def test_languages_and_keywords(crawled: dict[str, Crawled]) -> None:
    for site, found in crawled.items():
        for body in found.pages.values():
            assert f'<html lang="{LANGUAGES[site]}">' in body.decode(), site
        words = " ".join(text(body) for body in found.pages.values())
        english = {keyword for keyword in KEYWORDS if keyword in words}
        french = {keyword for keyword in FRENCH_KEYWORDS if keyword in words}
        if site in IRRELEVANT:
            assert (english, french) == (set(), set()), site
        elif site in FRENCH:
            assert (english, french) == ({"archive"}, set(FRENCH_KEYWORDS)), site
            assert words.count("archive") == words.count("archives")
        else:  # English: "archives" may be an English word too
            assert (english, french - {"archives"}) == (set(KEYWORDS), set()), site


def hits(nodes: set[str], edges: set[tuple[str, str]]) -> tuple[dict[str, float], ...]:
    """Hub and authority scores by power iteration, each vector of norm 1."""

    def normalised(scores: dict[str, float]) -> dict[str, float]:
        norm = math.sqrt(sum(score * score for score in scores.values()))
        return {node: score / norm for node, score in scores.items()}

    hub = dict.fromkeys(nodes, 1.0)
    authority = dict.fromkeys(nodes, 1.0)
    for _ in range(200):
        authority = normalised({n: sum(hub[s] for s, t in edges if t == n) for n in nodes})
        hub = normalised({n: sum(authority[t] for s, t in edges if s == n) for n in nodes})
    return hub, authority


def test_hits_ranks_the_documented_hubs_and_authorities_first() -> None:
    edges = {(s, t) for s, t in EDGES if s in RELEVANT and t in RELEVANT}
    hub, authority = hits(set(RELEVANT), edges)
    for scores, top in ((hub, TOP_HUBS), (authority, TOP_AUTHORITIES)):
        ranked = sorted(scores, key=scores.__getitem__, reverse=True)
        assert set(ranked[:2]) == top
        # far ahead: the second scores at least twice the third
        assert scores[ranked[1]] > 2 * scores[ranked[2]]


def test_a_focused_campaign_never_discovers_never_discovered() -> None:
    depths = dict.fromkeys(SEEDS, 0)
    queue = deque(SEEDS)
    while queue:
        site = queue.popleft()
        if site not in RELEVANT:
            continue  # blacklisted: its links are not followed
        for source, target in sorted(EDGES):
            if source == site and target not in depths:
                depths[target] = depths[site] + 1
                queue.append(target)
    assert depths == DEPTHS
    assert set(SITES) - set(depths) == NEVER_DISCOVERED
    # Only the blacklist hides them: following every link reaches them all.
    everywhere, queue = set(SEEDS), deque(SEEDS)
    while queue:
        site = queue.popleft()
        for source, target in EDGES:
            if source == site and target not in everywhere:
                everywhere.add(target)
                queue.append(target)
    assert everywhere == set(SITES)
    assert all(s in IRRELEVANT for s, t in EDGES if t in NEVER_DISCOVERED)
    # Relevant sites met deep, and only through relevant sites.
    deep = {site for site in RELEVANT if DEPTHS[site] >= 2}
    assert MILL in deep and DEPTHS[MILL] == 3 and deep >= FRENCH
    assert all(s in RELEVANT for s, t in EDGES if t in FRENCH | {MILL})


def chunks(body: bytes) -> set[int]:
    return set(chunk_signatures(words_of(text(body))))


def test_changing_changes_at_every_round(web: Web) -> None:
    inner = root_of(CHANGING) + "latest.html"
    first, first_inner = web.get(CHANGING), web.get(CHANGING, inner)
    assert web.get(CHANGING, inner).body == first_inner.body  # no new round without `/`
    round_ = web.stats()["round"]
    second = web.get(CHANGING, headers={"If-None-Match": first.headers["ETag"]})
    second_inner = web.get(CHANGING, inner, {"If-Modified-Since": first.headers["Last-Modified"]})
    assert web.stats()["round"] == round_ + 1
    assert second.status == second_inner.status == 200
    for before, after in ((first, second), (first_inner, second_inner)):
        assert after.body != before.body
        assert after.headers["ETag"] != before.headers["ETag"]
        assert chunks(after.body) - chunks(before.body)  # new text, not only new bytes
    assert f"Round {round_ + 1}." in second.body.decode()


def test_stable_never_changes(web: Web) -> None:
    for path in SPECS[STABLE].pages:
        first, second = web.get(STABLE, "/" + path), web.get(STABLE, "/" + path)
        assert first.status == 200 and first.body == second.body
        assert first.headers["ETag"] == second.headers["ETag"]
        for condition in (
            {"If-None-Match": first.headers["ETag"]},
            {"If-Modified-Since": first.headers["Last-Modified"]},
        ):
            assert (web.get(STABLE, "/" + path, condition).status, path) == (304, path)


def feed_items(body: bytes) -> list[str]:
    return [item.findtext("link", "") for item in ElementTree.fromstring(body).iter("item")]


def test_a_feed_bump_changes_the_feed(web: Web) -> None:
    web.reset(everything=True)
    home = web.get(FEED_SITE)
    assert f'type="application/rss+xml" title="Acquisitions" href="{FEED_PATH}"' in (
        home.body.decode()
    )
    feed = web.get(FEED_SITE, FEED_PATH)
    assert feed.headers["Content-Type"] == "application/rss+xml"
    assert feed_items(feed.body) == [web.site_url(FEED_SITE, "news/1.html")]
    assert web.get(FEED_SITE, "/news/2.html").status == 404
    assert web.feed_bump(FEED_SITE) == 2
    bumped = web.get(FEED_SITE, FEED_PATH, {"If-None-Match": feed.headers["ETag"]})
    assert bumped.status == 200
    assert feed_items(bumped.body) == [
        web.site_url(FEED_SITE, "news/2.html"),
        web.site_url(FEED_SITE, "news/1.html"),
    ]
    assert web.get(FEED_SITE, "/news/2.html").status == 200
    assert 'href="/news/2.html"' in web.get(FEED_SITE).body.decode()
    assert web.stats()["feed"] == 2
    with pytest.raises(urllib.error.HTTPError) as refused:
        web.feed_bump(STABLE)
    assert refused.value.code == 404
    web.reset(everything=True)
    assert web.get(FEED_SITE, FEED_PATH).body == feed.body


def test_stats_and_log(web: Web) -> None:
    web.reset()
    web.get(STABLE)
    web.get(STABLE, "/about.html?x=1")
    web.get(HOME, "/~bob/", {"User-Agent": "tester"})
    web.get(STABLE, address=HOSTS[HOME])
    stats = web.stats()
    assert stats["requests"] == 4
    assert stats["hosts"] == {STABLE: 3, HOME: 1}
    assert stats["paths"] == {STABLE: {"/": 2, "/about.html?x=1": 1}, HOME: {"/~bob/": 1}}
    assert stats["sites"] == {STABLE: 2, BOB: 1}
    log = web.log()
    assert [(e["address"], e["site"], e["path"], e["status"]) for e in log] == [
        (HOSTS[STABLE], STABLE, "/", 200),
        (HOSTS[STABLE], STABLE, "/about.html?x=1", 200),
        (HOSTS[HOME], BOB, "/~bob/", 200),
        (HOSTS[HOME], None, "/", 421),
    ]
    assert log[2]["user_agent"] == "tester" and log[2]["method"] == "GET"
    web.reset()
    assert web.log() == [] and web.stats()["requests"] == 0


def answers(control: str) -> bool:
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            control + "/stats", timeout=2
        ):
            return True
    except OSError:
        return False


def wait_silent(control: str) -> None:
    wait_until(lambda: not answers(control), f"{control} to stop answering", STOP_TIMEOUT)


def test_it_stops_with_its_block(tmp_path: Path) -> None:
    with serve_web(tmp_path) as running:
        control = running.control
        assert answers(control)
    assert running.process.poll() is not None
    assert not answers(control)


PARENT = """
import json, sys
from pathlib import Path
from tests.crawler.scheduler.web import serve_web
with serve_web(Path(sys.argv[1])) as running:
    print(json.dumps({"control": running.control}), flush=True)
    sys.stdin.read()
"""


def test_it_stops_when_its_parent_dies(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert parent.stdout is not None
        control = json.loads(parent.stdout.readline())["control"]
        assert answers(control)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_silent(control)
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait()
        for stream in (parent.stdin, parent.stdout):
            if stream is not None:
                stream.close()
