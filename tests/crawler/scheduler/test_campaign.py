"""Crawl campaigns with real processes: a cluster, the scheduler, crawler agents, the local web.

Expansion from a seed finds the relevant sites and blacklists the others; hubs and authorities
come out as the web was built; kill -9 of the scheduler or of an agent loses nothing; a site that
changes is crawled more often than one that does not.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from archive.hip import HipSlave, hip_url
from deploy.testing.waits import wait_until
from tests.crawler.campaign import Campaign, dlweb
from tests.crawler.scheduler.web import (
    BOURGOGNE,
    CHANGING,
    FEED_SITE,
    IRRELEVANT,
    NEVER_DISCOVERED,
    PORTAL,
    RELEVANT,
    STABLE,
    TOP_AUTHORITIES,
    TOP_HUBS,
    Web,
    site_of,
    site_url,
)

CAMPAIGN_TIMEOUT = 180


@dataclass
class WebCampaign(Campaign):
    """A campaign on the scheduler's test web."""

    web: Web = field(kw_only=True)

    def sites(self) -> dict[str, dict[str, Any]]:
        """The registered sites by their name in the test web."""
        found = {}
        for site in self.api("/api/sites?limit=1000")["sites"]:
            name = site_of(site["start_url"])
            assert name is not None, site
            found[name] = site
        return found

    def add(self, site: str, *, seed: bool = False) -> None:
        self.api("/api/sites", {"start_url": site_url(site, self.web.port), "seed": seed})

    def settled(self) -> bool:
        """Nothing queued for now and nothing being crawled. The queue is read first: a site
        claimed between the two reads is then counted as crawling, where the other order missed
        it in both (queued when the counts were read, crawling when the queue was)."""
        due = self.api("/api/sites?state=queued")["sites"]
        counts = self.api("/api/status")["counts"]
        return counts.get("crawling", 0) == 0 and not [
            s for s in due if s["next_crawl"] <= time.time()
        ]


def test_expansion_finds_the_relevant_sites_and_ranks_hubs_and_authorities(campaign):
    campaign.start_scheduler("--keywords", "archive,heritage,museum,patrimoine")
    for name in ("a1", "a2", "a3"):
        campaign.start_agent(name)
    campaign.add(PORTAL, seed=True)
    wait_until(
        lambda: len(campaign.sites()) > 1 and campaign.settled(),
        "the campaign to settle",
        timeout=CAMPAIGN_TIMEOUT,
    )
    sites = campaign.sites()
    kept = {name for name, site in sites.items() if site["state"] == "idle"}
    blacklisted = {name for name, site in sites.items() if site["state"] == "blacklisted"}
    assert kept >= RELEVANT, sorted(RELEVANT - kept)
    assert not kept & IRRELEVANT
    assert blacklisted and blacklisted <= IRRELEVANT
    assert not set(sites) & NEVER_DISCOVERED
    assert all(site["crawls"] == 1 for site in sites.values())
    wait_until(lambda: max(s["authority"] for s in campaign.sites().values()) > 0, "the ranks")
    sites = campaign.sites()
    by_hub = sorted(sites, key=lambda name: -sites[name]["hub"])
    by_authority = sorted(sites, key=lambda name: -sites[name]["authority"])
    assert set(by_hub[:2]) == TOP_HUBS, [(n, sites[n]["hub"]) for n in by_hub[:4]]
    assert set(by_authority[:2]) == TOP_AUTHORITIES
    page = urllib.request.urlopen(campaign.url + "/", timeout=10).read().decode()
    assert "Agents" in page and "authority" in page and "Recently crawled" in page
    assert site_url(PORTAL, campaign.web.port) in page


def test_scheduler_killed_mid_campaign_resumes_without_recrawling_or_losing_sites(campaign):
    campaign.start_scheduler("--keywords", "archive,heritage,museum,patrimoine")
    for name in ("a1", "a2"):
        campaign.start_agent(name)
    campaign.add(PORTAL, seed=True)
    wait_until(
        lambda: sum(s["crawls"] for s in campaign.sites().values()) >= 4,
        "a few crawls",
        timeout=CAMPAIGN_TIMEOUT,
    )
    assert campaign.scheduler is not None
    campaign.scheduler.send_signal(signal.SIGKILL)
    campaign.scheduler.wait()
    campaign.start_scheduler("--keywords", "archive,heritage,museum,patrimoine")
    before = campaign.sites()
    finished = {name for name, site in before.items() if site["crawls"] >= 1}
    wait_until(campaign.settled, "the campaign to settle", timeout=CAMPAIGN_TIMEOUT)
    after = campaign.sites()
    assert set(before) <= set(after)
    assert all(after[name]["crawls"] == 1 for name in finished), {
        name: after[name]["crawls"] for name in finished
    }
    assert {name for name, site in after.items() if site["state"] == "idle"} >= RELEVANT


def test_a_report_sent_again_after_a_restart_is_not_counted_twice(campaign):
    """An agent sends its report until it hears an answer; a scheduler killed after recording
    a report, before answering, gets it again from the agent once restarted."""
    campaign.start_scheduler("--no-expand")
    campaign.start_agent("a1")
    campaign.add(PORTAL, seed=True)
    wait_until(campaign.settled, "the portal to be crawled", timeout=CAMPAIGN_TIMEOUT)
    campaign.agents["a1"].terminate()
    campaign.agents["a1"].wait()
    site = campaign.sites()[PORTAL]
    assert site["crawls"] == 1
    report = campaign.api(f"/api/sites/{site['id']}")["crawls"][0]["report"]
    assert campaign.scheduler is not None
    campaign.scheduler.send_signal(signal.SIGKILL)
    campaign.scheduler.wait()
    campaign.start_scheduler("--no-expand")

    async def send_again() -> Any:
        slave = HipSlave(
            hip_url(campaign.url), campaign.cluster.config.secret, "a1", {}, role="crawler"
        )
        await slave.start()
        try:
            return await slave.call("site_done", {"agent": "a1", "report": report})
        finally:
            await slave.stop()

    assert asyncio.run(send_again()) == {"ok": True}
    after = campaign.sites()[PORTAL]
    assert (after["crawls"], after["state"]) == (1, "idle")
    assert len(campaign.api(f"/api/sites/{site['id']}")["crawls"]) == 1


def test_agent_killed_mid_site_hands_the_site_to_another_agent(campaign):
    campaign.start_scheduler("--no-expand", "--delay", "0.4", "--burst", "0.4")
    campaign.start_agent("first")
    campaign.add(PORTAL, seed=True)
    wait_until(
        lambda: any(a["site"] for a in campaign.api("/api/status")["agents"]), "the crawl to start"
    )
    campaign.agents["first"].send_signal(signal.SIGKILL)
    campaign.start_agent("second")
    wait_until(
        lambda: campaign.sites()[PORTAL]["crawls"] == 1,
        "the site to be crawled",
        timeout=CAMPAIGN_TIMEOUT,
    )
    site_id = campaign.sites()[PORTAL]["id"]
    crawls = campaign.api(f"/api/sites/{site_id}")["crawls"]
    assert [crawl["agent"] for crawl in crawls] == ["second"]


def test_a_changing_site_is_crawled_more_often_than_a_stable_one(campaign):
    campaign.start_scheduler(
        "--no-expand", "--first-interval", "1", "--shortest", "0.5", "--longest", "60"
    )
    campaign.start_agent("a1")
    campaign.add(CHANGING, seed=True)
    campaign.add(STABLE, seed=True)
    wait_until(
        lambda: campaign.sites()[CHANGING]["crawls"] >= 6,
        "six crawls of the changing site",
        timeout=CAMPAIGN_TIMEOUT,
    )
    sites = campaign.sites()
    assert sites[STABLE]["crawls"] < sites[CHANGING]["crawls"] - 1, sites
    assert sites[CHANGING]["interval"] < sites[STABLE]["interval"]
    assert sites[CHANGING]["change_rate"] > sites[STABLE]["change_rate"]
    latest = {
        name: campaign.api(f"/api/sites/{sites[name]['id']}")["crawls"][0]["report"]
        for name in (CHANGING, STABLE)
    }
    assert latest[CHANGING]["change_by_level"]["0"] > 0
    assert set(latest[STABLE]["change_by_level"].values()) == {0}


def test_sites_in_other_languages_are_blacklisted(campaign):
    campaign.start_scheduler(
        "--no-expand", "--keywords", "archive,heritage,patrimoine", "--languages", "en"
    )
    campaign.start_agent("a1")
    campaign.add(STABLE)
    campaign.add(BOURGOGNE)
    wait_until(lambda: all(s["crawls"] for s in campaign.sites().values()), "both crawls")
    sites = campaign.sites()
    assert sites[STABLE]["state"] == "idle"
    assert sites[BOURGOGNE]["state"] == "blacklisted"


def test_a_changed_feed_brings_the_next_crawl_forward(campaign):
    campaign.start_scheduler("--no-expand", "--feed-interval", "0.5")
    campaign.start_agent("a1")
    campaign.add(FEED_SITE, seed=True)
    wait_until(lambda: campaign.sites()[FEED_SITE]["crawls"] == 1, "the first crawl")
    assert campaign.sites()[FEED_SITE]["next_crawl"] > time.time() + 3_600
    campaign.web.feed_bump(FEED_SITE)
    wait_until(lambda: campaign.sites()[FEED_SITE]["crawls"] == 2, "a crawl for the new item")


def test_operator_commands(campaign):
    campaign.start_scheduler("--no-expand", "--paused")
    added = dlweb(campaign, "sites", "add", site_url(STABLE, campaign.web.port), "--priority", "2")
    assert added.returncode == 0, added.stderr
    site_id = json.loads(added.stdout)["id"]
    listed = dlweb(campaign, "sites", "list")
    assert site_url(STABLE, campaign.web.port) in listed.stdout and "queued" in listed.stdout
    again = dlweb(campaign, "sites", "add", site_url(STABLE, campaign.web.port))
    assert again.returncode != 0 and "refused" in again.stderr and "Traceback" not in again.stderr
    injected = dlweb(campaign, "sites", "inject", str(site_id), "--priority", "9")
    assert json.loads(injected.stdout)["priority"] == 9
    shown = json.loads(dlweb(campaign, "sites", "show", str(site_id)).stdout)
    assert shown["site"]["start_url"] == site_url(STABLE, campaign.web.port)
    campaign.start_agent("a1")
    wait_until(lambda: campaign.api("/api/status")["agents"], "the agent to join")
    assert campaign.sites()[STABLE]["crawls"] == 0  # paused: nothing is crawled
    assert dlweb(campaign, "campaign", "resume").returncode == 0
    wait_until(lambda: campaign.sites()[STABLE]["crawls"] == 1, "the crawl once resumed")
    black = dlweb(campaign, "sites", "blacklist", str(site_id))
    assert json.loads(black.stdout)["state"] == "blacklisted"
    wrong = subprocess.run(
        [sys.executable, "-m", "dlweb", "sites", "list", "--scheduler", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wrong.returncode != 0 and "cannot reach the scheduler" in wrong.stderr


def test_an_agent_clones_itself_into_the_pool(campaign):
    campaign.start_scheduler("--no-expand")
    campaign.start_agent("a1")
    wait_until(lambda: campaign.api("/api/status")["agents"], "the agent to join")
    clone = campaign.api("/api/agents/a1/clone", {})
    try:
        assert clone["name"] == "a1-1"
        wait_until(
            lambda: {a["name"] for a in campaign.api("/api/status")["agents"]} == {"a1", "a1-1"},
            "the clone to join",
        )
        campaign.add(STABLE)
        campaign.add(CHANGING)
        wait_until(lambda: all(s["crawls"] for s in campaign.sites().values()), "both crawls")
    finally:
        os.kill(clone["pid"], signal.SIGTERM)


def test_a_second_agent_is_sent_on_a_site_being_crawled(campaign):
    campaign.start_scheduler("--no-expand", "--delay", "0.4", "--burst", "0.4")
    # Both agents are there before the site: one crawls it, and the other is sent on it while
    # that crawl goes on (an agent started meanwhile could come after the crawl's end).
    campaign.start_agent("first")
    campaign.start_agent("second")
    wait_until(lambda: len(campaign.api("/api/status")["agents"]) == 2, "both agents")
    campaign.add(PORTAL, seed=True)
    wait_until(lambda: campaign.sites()[PORTAL]["state"] == "crawling", "the first crawl")
    site_id = campaign.sites()[PORTAL]["id"]
    agents = campaign.api("/api/status")["agents"]
    (crawling,) = [agent["name"] for agent in agents if agent["site"] is not None]
    sent = campaign.api(f"/api/sites/{site_id}/second-agent", {})
    assert sent["agent"] == ({"first", "second"} - {crawling}).pop()
    wait_until(lambda: campaign.sites()[PORTAL]["crawls"] == 2, "both crawls")
    crawls = campaign.api(f"/api/sites/{site_id}")["crawls"]
    assert {crawl["agent"] for crawl in crawls} == {"first", "second"}
    assert campaign.sites()[PORTAL]["state"] == "idle"
