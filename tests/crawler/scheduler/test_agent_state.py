"""The scheduler polls every connected agent's state (its `status` call) and shows each one's
uptime, memory and current work on its status page and in `/api/status`; an agent that does not
answer in time, or answers no status, is shown as such.

A scheduler and one agent crawl the crawler's test web as real processes, the scheduler polling
every 0.2 s; the agents that do not answer are HIP slaves in this process."""

import asyncio
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archive.crawl_calls import STATUS
from archive.hip import HipMaster, HipSlave, Peer, hip_url
from archive.scheduler_answers import CrawlerAgent, SchedulerStatus
from crawler.scheduler.agent_poll import Polled
from crawler.scheduler.status_page import agent_row
from deploy.testing.cluster import Cluster
from deploy.testing.ports import free_port
from deploy.testing.waits import wait_until
from tests.crawler.campaign import Campaign
from tests.crawler.sites import ALPHA, Sites

SECRET = b"s" * 32


@pytest.fixture
def campaign(
    cluster_factory: Callable[..., Cluster], sites: Sites, tmp_path: Path
) -> Iterator[Campaign]:
    running = Campaign(cluster_factory(nodes=1, replicas=1), tmp_path, sites.resolve_args())
    try:
        yield running
    finally:
        running.stop()


def test_the_status_shows_each_agents_uptime_memory_and_current_work(
    campaign: Campaign, sites: Sites
) -> None:
    campaign.start_scheduler("--agent-poll", "0.2")
    campaign.start_agent("a1")
    # ALPHA's slow page keeps its crawl going for 30 s after its other pages.
    campaign.api("/api/sites", {"start_url": sites.url(ALPHA), "seed": True})
    seen: list[CrawlerAgent] = []

    def crawling() -> bool:
        status = SchedulerStatus.from_json(campaign.api("/api/status"), "/api/status")
        seen[:] = [a for a in status.agents if a.status and a.status.pages > 0]
        return bool(seen)

    wait_until(crawling, "the polled state of the agent to show its crawl", timeout=60)
    (agent,) = seen
    assert agent.name == "a1" and agent.unanswered == ""
    assert agent.status is not None
    assert agent.status.state == "crawling" and agent.status.sites == (sites.url(ALPHA),)
    assert agent.status.name == "a1" and agent.status.uptime > 0
    assert 10 < agent.status.rss_mb < 2000
    pages = agent.status.pages
    page = urllib.request.urlopen(campaign.url + "/", timeout=10).read().decode()
    assert "uptime" in page and "memory" in page and sites.url(ALPHA) in page
    assert " MB</td>" in page and " ago</td>" in page
    later = campaign.api("/api/status")["agents"][0]
    assert later["polled"] >= agent.polled and later["status"]["pages"] >= pages


async def _agent_that(
    status: Callable[[Peer, Any], Awaitable[Any]], check: Callable[[Polled], None]
) -> None:
    """A HIP slave whose `status` answers with `status`, polled once by a scheduler's poll."""
    joined: asyncio.Queue[Peer] = asyncio.Queue()

    async def on_connect(peer: Peer) -> None:
        await joined.put(peer)

    master = HipMaster(SECRET, "scheduler", {}, on_connect=on_connect)
    app = web.Application()
    master.add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    slave = HipSlave(
        hip_url(f"http://127.0.0.1:{port}"), SECRET, "mute", {STATUS.name: status}, role="crawler"
    )
    await slave.start()
    try:
        peer = await asyncio.wait_for(joined.get(), 10)
        polled = Polled()
        await polled.poll(peer, timeout=0.3)
        check(polled)
    finally:
        await slave.stop()
        await runner.cleanup()


def test_an_agent_that_does_not_answer_in_time_is_shown_as_not_answering() -> None:
    async def never(peer: Peer, params: Any) -> Any:
        await asyncio.sleep(30)

    def check(polled: Polled) -> None:
        assert polled.status is None and polled.at == 0.0
        assert polled.unanswered == "call status to mute timed out after 0.3 s"
        row = agent_row(CrawlerAgent("mute", True, None, None, 0.0, polled.unanswered), 0.0)
        assert row[-1] == "no answer: call status to mute timed out after 0.3 s"

    asyncio.run(_agent_that(never, check))


def test_an_agent_that_answers_no_status_is_shown_as_not_answering() -> None:
    async def wrong(peer: Peer, params: Any) -> Any:
        return {"name": "mute", "state": "idle"}

    def check(polled: Polled) -> None:
        assert polled.status is None
        assert polled.unanswered == "status: the answer has no 'pid'"

    asyncio.run(_agent_that(wrong, check))


def test_a_status_goes_through_json_unchanged() -> None:
    answered = {
        "name": "a1",
        "state": "crawling",
        "pid": 7,
        "uptime": 12.5,
        "rss_mb": 80.2,
        "sites": ["http://www.alpha.test/"],
        "pages": 4,
        "crawl": {"site": "http://www.alpha.test/", "pages": 4},
        "errors": {},
        "browser": {},
    }
    status = STATUS.answer.from_json(answered, "status")
    assert status.to_json() == answered
    assert status.sites == ("http://www.alpha.test/",)
