"""Connectivity agents and feed aggregators as HIP slaves of the scheduler: the pure parts (the
guesses an agent answers, the spread of feeds, a crawl's links applied once, in one transaction)
and a campaign whose connectivity agent and feed aggregator are killed with SIGKILL and started
again without a crawl's links or a feed's change being lost."""

import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.connectivity_calls import NO_SITE, GuessedSite
from crawler.scheduler.expansion import Expansion, external_links, resolve_links
from crawler.scheduler.feeds import holder
from crawler.scheduler.guess import guess_site
from crawler.scheduler.store import SqliteStore
from deploy.testing.waits import wait_until
from tests.crawler.scheduler.test_campaign import WebCampaign
from tests.crawler.scheduler.web import (
    ALICE,
    ARCHIVE,
    BOB,
    EDGES,
    FEED_SITE,
    MILL,
    MUSEUM,
    TRUST,
    site_of,
    site_url,
)

TIMEOUT = 120


# -- the pure parts ---------------------------------------------------------------------------


def test_an_agent_answers_the_site_each_link_belongs_to_and_no_site_for_a_bad_link() -> None:
    links = ["http://www.uni.edu/~ann/cv.html", "http://news.example.com/x", "ftp://x/"]
    assert resolve_links(links) == (
        GuessedSite("http://www.uni.edu/~ann/", "//www.uni.edu/~ann/", ""),
        GuessedSite(*guess_site("http://news.example.com/x")),
        NO_SITE,
    )
    assert resolve_links(links)[1].accept == "//example.com OR .example.com"


def test_a_reports_external_links_are_kept_canonical_in_order_without_bad_ones() -> None:
    report = {"external_links": [{"url": "HTTP://B.example"}, {"url": "mailto:x"}, "x", {}]}
    assert external_links(report) == ["http://b.example/"]
    assert external_links({"external_links": "no"}) == []


def test_feeds_spread_over_the_aggregators_and_one_leaving_moves_only_its_own() -> None:
    urls = [f"http://s{n}.example/feed.xml" for n in range(300)]
    three = {url: holder(url, ["f1", "f2", "f3"]) for url in urls}
    assert all(count > 60 for count in Counter(three.values()).values())
    two = {url: holder(url, ["f1", "f3"]) for url in urls}
    assert {url for url in urls if three[url] != two[url]} == {
        url for url in urls if three[url] == "f2"
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "campaign.sqlite") as opened:
        yield opened


def _finished(store: SqliteStore, start_url: str, links: list[str]) -> int:
    """A site crawled, its links waiting: its id."""
    site = store.add_site(start_url, "")
    store.finish(site.id, {"pages": 1}, "", "", 10.0, links=links)
    return site.id


def test_a_crawls_links_wait_in_the_store_and_are_applied_once(
    store: SqliteStore, tmp_path: Path
) -> None:
    known = store.add_site("http://known.example/", "")
    src = _finished(
        store,
        "http://src.example/",
        [
            "http://known.example/a",
            "http://new.example/a",
            "http://www.new.example/b",  # the site registered for the link before it
            "http://home.example/~ann",  # its directory without the slash, registered next
            "http://home.example/~ann/cv.html",
            "http://src.example/self",
        ],
    )
    store.close()
    reopened = SqliteStore(tmp_path / "campaign.sqlite")  # a scheduler killed before applying
    (waiting,) = reopened.link_reports(10)
    expansion = Expansion(reopened, True, lambda: None)
    assert reopened.link_reports(10, leave_out={waiting.crawl}) == []
    assert expansion.apply(waiting, resolve_links(waiting.links))
    assert not expansion.apply(waiting, resolve_links(waiting.links))
    sites = {site.start_url: site.id for site in reopened.sites()}
    assert set(sites) == {
        "http://known.example/",
        "http://src.example/",
        "http://new.example/",
        "http://home.example/~ann/",
    }
    assert sorted(reopened.edges()) == sorted(
        [
            (src, known.id, 1),
            (src, sites["http://new.example/"], 2),
            (src, sites["http://home.example/~ann/"], 2),
        ]
    )
    assert reopened.links_waiting() == 0
    assert {s.id for s in reopened.next_sites(time.time(), 10)} >= {
        sites["http://new.example/"],
        sites["http://home.example/~ann/"],
    }
    reopened.close()


def test_a_campaign_that_does_not_expand_applies_edges_to_registered_sites_only(
    store: SqliteStore,
) -> None:
    known = store.add_site("http://known.example/", "")
    src = _finished(store, "http://src.example/", ["http://known.example/", "http://new.example/"])
    (waiting,) = store.link_reports(10)
    assert Expansion(store, False, lambda: None).apply(waiting, (NO_SITE, NO_SITE))
    assert list(store.edges()) == [(src, known.id, 1)]
    assert len(store.sites()) == 2


# -- a campaign -------------------------------------------------------------------------------


def _start(campaign: WebCampaign, name: str) -> None:
    module = "crawler.connectivity_agent" if name.startswith("c") else "crawler.feed_aggregator"
    campaign.agents[name] = campaign._spawn(
        name, module, "--scheduler", campaign.url, "--name", name
    )


def _policy_agents(campaign: WebCampaign) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for a in campaign.api("/api/status").get("policy_agents", [])}


def _connected(campaign: WebCampaign, *names: str) -> bool:
    agents = _policy_agents(campaign)
    return all(name in agents and agents[name]["connected"] for name in names)


def _kill(campaign: WebCampaign, name: str) -> None:
    process = campaign.agents[name]
    process.send_signal(signal.SIGKILL)
    process.wait()


def _edges(campaign: WebCampaign) -> set[tuple[str | None, str | None]]:
    """The campaign's graph, by the names of the sites in the test web."""
    edges = set()
    for site in campaign.api("/api/sites?limit=1000")["sites"]:
        detail = campaign.api(f"/api/sites/{site['id']}")
        for referrer in detail["referrers"]:
            edges.add((site_of(referrer["start_url"]), site_of(site["start_url"])))
    return edges


def test_killed_connectivity_agents_and_feed_aggregators_lose_no_links_and_no_feed_change(
    campaign: WebCampaign,
) -> None:
    campaign.start_scheduler(
        "--keywords", "archive,heritage,museum", "--feed-interval", "0.3", "--no-inline-policies"
    )
    for name in ("c1", "f1", "f2"):
        _start(campaign, name)
    for name in ("a1", "a2"):
        campaign.start_agent(name)
    wait_until(
        lambda: (
            _connected(campaign, "c1", "f1", "f2")
            and len(campaign.api("/api/status")["agents"]) == 2
        ),
        "the agents",
    )
    # The only connectivity agent stops answering: it is killed holding a crawl's links (or,
    # were its connection dropped first, with crawls waiting for an agent).
    campaign.agents["c1"].send_signal(signal.SIGSTOP)
    for seed in (TRUST, FEED_SITE):
        campaign.add(seed, seed=True)
    alice = site_url(ALICE, campaign.web.port)  # a directory of a shared host
    campaign.api("/api/sites", {"start_url": alice, "accept": alice, "seed": True})
    wait_until(lambda: _holds_or_waits(campaign), "links given to c1, or waiting")
    _start(campaign, "c2")
    _kill(campaign, "c1")
    _start(campaign, "c1")

    wait_until(lambda: campaign.sites()[FEED_SITE]["crawls"] == 1, "the feed site's crawl")
    wait_until(lambda: _feeds_held(campaign) == {1}, "its feed given to an aggregator")
    (watching,) = [
        name for name, a in _policy_agents(campaign).items() if a["role"] == "feeds" and a["work"]
    ]
    _kill(campaign, watching)
    campaign.web.feed_bump(FEED_SITE)
    wait_until(lambda: campaign.sites()[FEED_SITE]["crawls"] == 2, "a crawl for the new item")
    _start(campaign, watching)

    wait_until(
        lambda: campaign.settled() and campaign.api("/api/status").get("links_waiting", 0) == 0,
        "the campaign to settle",
        timeout=TIMEOUT,
    )
    sites = campaign.sites()
    kept = {name for name, site in sites.items() if site["state"] == "idle"}
    assert kept == {TRUST, ALICE, FEED_SITE, MUSEUM, ARCHIVE, MILL}
    assert sites[BOB]["state"] == "blacklisted"
    assert _edges(campaign) == {(s, d) for s, d in EDGES if s in kept}
    applied = Counter(re.findall(r"links of crawl (\d+) applied", campaign.log("scheduler")))
    crawls_kept = sum(site["crawls"] for name, site in sites.items() if name in kept)
    assert sorted(applied.values()) == [1] * crawls_kept
    wait_until(lambda: _connected(campaign, "c1", "c2", watching), "the agents started again")


def _holds_or_waits(campaign: WebCampaign) -> bool:
    status = campaign.api("/api/status")
    (c1,) = [a for a in status["policy_agents"] if a["name"] == "c1"]
    return c1["work"] == 1 or (not c1["connected"] and status.get("links_waiting", 0) > 0)


def _feeds_held(campaign: WebCampaign) -> set[int]:
    """The number of feeds the connected aggregators poll, in all."""
    agents = _policy_agents(campaign).values()
    return {sum(a["work"] for a in agents if a["role"] == "feeds" and a["connected"])}
