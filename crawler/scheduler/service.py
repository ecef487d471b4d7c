"""The scheduler: master of the site crawler agents, deciding which site to crawl and when.

Its state lives in the store (SQLite by default), written before anything is acknowledged, so a
scheduler killed at any moment resumes where it stopped: sites being crawled by an agent that is
gone go back to the queue, finished crawls are never redone, discovered sites are kept.

Two policies run together. Expansion: each finished site's report passes the campaign's filters
or the site is blacklisted; a passing site's external links are matched against the registered
sites (the graph table) or register new sites, queued with a priority from their referrers'
relevance and hub ranks and their own authority (HITS on the graph). Temporal: each crawled site
is crawled again after an interval halved when it changed much since its previous crawl and
doubled when it hardly changed; a change in one of its feeds brings the next crawl forward; and
its next crawl goes only as deep as its last crawls found change (policy.py depth_hint).

Every connected agent is asked its state on a schedule (agent_poll.py), for the operator.

The expansion policy's graph is expansion.py's, the feeds feeds.py's. A finished crawl's
external links wait in the store until a connectivity agent has resolved them (connectivity.py),
and the feeds are polled by feed aggregators (feeds.py); with no agent of a kind connected, the
scheduler does that work itself unless `inline` is off. The stream links crawls report are
registered with their sites, and recorded by streaming agents when the operator says so
(streams.py).

The operator steers a running campaign (steering.py): every order carries the URLs injected into
its site, the campaign's blacklist and focus, and the politeness its domain's settings bound.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

from archive.connectivity_calls import ROLE as CONNECTIVITY
from archive.crawl_calls import CLONE, CRAWL, SITE_DONE, CrawlOrder, Focus, Ok, SiteDone
from archive.errors import DlwebError
from archive.feed_calls import FEED_CHANGED
from archive.feed_calls import ROLE as FEEDS
from archive.hip import HipError, HipMaster, Nothing, Peer, RemoteError
from archive.scheduler_answers import CrawlerAgent, Referrer, SchedulerStatus, SiteDetail
from archive.stream_calls import STREAM_REPORT
from archive.urlkey import BadUrl, canonical_url

from ..report_text import told
from ..stream.assignment import ROLE as STREAMER
from ..stream.settings import StreamSettings
from .agent_link import AgentLink, gone_longer_than, has_left
from .agent_poll import Polled
from .connectivity import ConnectivityAgents
from .expansion import Expansion, external_links
from .feeds import FeedWatch
from .policy import DepthHint, Filters, change_rate, depth_hint, judge, next_interval
from .reports import existing_file, with_change_by_level
from .steering import Steering
from .store import Site, SiteOptions, Store
from .streams import StreamAgents

__all__ = ["Scheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)

TICK = 0.2
BUSY_ELSEWHERE = -1  # an agent crawling a site it was given before the scheduler restarted
BUSY_RETRY = 5.0  # seconds before such an agent is asked again (its report may have been lost)


@dataclass
class SchedulerOptions:
    work: Path
    filters: Filters = field(default_factory=Filters)
    expand: bool = True
    politeness: dict[str, float] = field(default_factory=dict)
    browser: str = "never"  # the browser mode of every order (crawler/order.py)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    first_interval: float = 86_400.0
    shortest: float = 3_600.0
    longest: float = 30 * 86_400.0
    feed_interval: float = 900.0
    agent_grace: float = 10.0  # a vanished agent's sites and streams wait this long for it
    agent_poll: float = 30.0  # seconds between polls of each agent's state
    agent_poll_timeout: float = 10.0  # an agent that takes longer is shown as not answering
    quiet_crawls: int = 3  # levels unchanged in this many crawls are cut (0: never)
    full_crawl_every: int = 10  # every this many crawls goes to the full depth (0: never)
    record_streams: bool = False  # record every stream a crawl reports, not only those added
    stream_settings: StreamSettings = field(default_factory=StreamSettings)
    # Resolve links and poll feeds here while no connectivity agent or feed aggregator is.
    inline: bool = True
    focus: Focus | None = None  # what every crawl of a focused campaign finds relevant


@dataclass
class AgentState(AgentLink):
    site: int | None = None
    busy_since: float = 0.0
    polled: Polled = field(default_factory=Polled)


class Scheduler:
    def __init__(self, store: Store, secret: bytes, options: SchedulerOptions) -> None:
        self.store = store
        self.options = options
        self.agents: dict[str, AgentState] = {}
        self.streams = StreamAgents(
            store, options.stream_settings, options.resolve, options.agent_grace, self.wake
        )
        self.expansion = Expansion(store, options.expand, self.wake)
        self.steering = Steering(store, self.wake)
        self.connectivity = ConnectivityAgents(
            self.expansion, options.inline, options.agent_grace, self.wake
        )
        self.feeds = FeedWatch(
            store, options.resolve, options.feed_interval, self.wake, options.inline
        )
        self.hip = HipMaster(
            secret,
            "scheduler",
            {
                SITE_DONE.name: SITE_DONE.handler(self._site_done),
                STREAM_REPORT.name: STREAM_REPORT.handler(self.streams.report),
                FEED_CHANGED.name: FEED_CHANGED.handler(self.feeds.report),
            },
            on_connect=self._joined,
            on_disconnect=self._left,
        )
        self.second_agents: dict[str, int] = {}  # agents sent on a site another agent crawls
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.decisions = 0

    # -- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        # Crawls that were running when the scheduler stopped: their agents are gone or will
        # reconnect without them; the sites go back to the queue.
        for site in self.store.sites(state="crawling", limit=1_000_000):
            self.store.set_state(site.id, "queued", next_crawl=time.time())
        self.streams.restarted()
        self._tasks = [
            asyncio.create_task(self._dispatch_loop()),
            asyncio.create_task(self.expansion.rank_loop()),
            asyncio.create_task(self.feeds.loop()),
            asyncio.create_task(self._poll_loop()),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.connectivity.stop()
        await self.feeds.stop()

    @property
    def running(self) -> bool:
        return self.store.get_setting("campaign", "running") == "running"

    def wake(self) -> None:
        """Look for work now rather than at the next tick."""
        self._wake.set()

    def register(
        self, start_url: str, accept: str, reject: str = "", **options: Unpack[SiteOptions]
    ) -> Site:
        """A new site, queued for a crawl now (DuplicateSite when its start URL is taken)."""
        site = self.store.add_site(start_url, accept, reject, next_crawl=time.time(), **options)
        self._wake.set()
        return site

    def set_campaign(self, state: str) -> None:
        if state not in ("running", "paused"):
            raise DlwebError(f"campaign state {state!r} is not running or paused")
        self.store.set_setting("campaign", state)
        self._wake.set()

    # -- agents -------------------------------------------------------------------------------

    async def _joined(self, peer: Peer) -> None:
        if peer.role == STREAMER:
            await self.streams.joined(peer)
            return
        if peer.role == CONNECTIVITY:
            self.connectivity.joined(peer)
            return
        if peer.role == FEEDS:
            self.feeds.joined(peer)
            return
        if peer.role != "crawler":
            return
        self.agents.setdefault(peer.name, AgentState(peer.name, peer)).joined(peer)
        log.info("agent %s joined", peer.name)
        self._wake.set()

    async def _left(self, peer: Peer) -> None:
        self.streams.left(peer)
        self.connectivity.left(peer)
        self.feeds.left(peer)
        if has_left(self.agents, peer):
            log.info("agent %s left", peer.name)

    def _reclaim(self) -> None:
        """Sites of agents gone for longer than the grace go to other agents."""
        for agent in gone_longer_than(self.options.agent_grace, self.agents):
            self.second_agents.pop(agent.name, None)
            for site_id in self.store.release_agent(agent.name):
                log.info("site %d handed back: agent %s is gone", site_id, agent.name)
            del self.agents[agent.name]

    async def _poll_loop(self) -> None:
        """Ask every connected agent its state, all at once, every `agent_poll` seconds."""
        while True:
            try:
                await asyncio.gather(
                    *(
                        agent.polled.poll(agent.peer, self.options.agent_poll_timeout)
                        for agent in list(self.agents.values())
                        if agent.peer is not None and not agent.peer.closed
                    )
                )
            except Exception:
                log.exception("polling the agents failed; trying again")
            await asyncio.sleep(self.options.agent_poll)

    async def clone(self, name: str) -> dict[str, Any]:
        agent = self.agents.get(name)
        if agent is None or agent.peer is None:
            raise DlwebError(f"no connected agent {name!r}")
        return (await CLONE.call(agent.peer, Nothing())).to_json()

    # -- dispatch -----------------------------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while True:
            try:
                self._reclaim()
                self.streams.reclaim()
                self.connectivity.reclaim()
                # Links and feeds are handled whether the campaign of crawls runs or not.
                await self.connectivity.dispatch()
                await self.feeds.spread()
                # Live streams are recorded whether the campaign of crawls runs or not.
                await self.streams.dispatch()
                if self.running:
                    await self._dispatch()
            except DlwebError as exc:
                log.error("dispatch: %s", exc)
            except Exception:
                log.exception("dispatch failed; trying again")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), TICK)

    async def _dispatch(self) -> None:
        now = time.monotonic()
        free = [
            a
            for a in self.agents.values()
            if a.connected
            and (a.site is None or (a.site == BUSY_ELSEWHERE and now - a.busy_since > BUSY_RETRY))
        ]
        if not free:
            return
        for site, agent in zip(self.store.next_sites(time.time(), len(free)), free, strict=False):
            if not self.store.claim(site.id, agent.name, time.time()):
                continue
            agent.site = site.id
            self.decisions += 1
            log.info("%s given to agent %s", site.start_url, agent.name)
            assert agent.peer is not None
            try:
                await CRAWL.call(agent.peer, self.order(site), timeout=30)
            except (HipError, RemoteError) as exc:
                log.warning("agent %s refused %s: %s", agent.name, site.start_url, exc)
                self.store.release_agent(agent.name)
                # Still on a crawl from before a restart of ours: wait for its report.
                busy = isinstance(exc, RemoteError) and exc.code == "busy"
                agent.site = BUSY_ELSEWHERE if busy else None
                agent.busy_since = time.monotonic()

    def order(self, site: Site) -> CrawlOrder:
        """The order an agent is given for `site`: as deep as its depth hint says, with the
        signature file of the latest crawl that went as deep, and what the operator steers."""
        reports = self._last_reports(site)
        hint = self._depth_hint(site, reports)
        previous, _ = self._baseline(site, hint.depth, reports)
        if hint.cut:
            log.info(
                "%s: to depth %d of %d, %s",
                site.start_url,
                hint.depth,
                hint.full,
                hint.reason,
            )
        return CrawlOrder(
            site.start_url,
            site.accept,
            site.reject,
            max_depth=hint.depth,
            keywords=tuple(self.options.filters.keywords),
            previous=previous if previous and Path(previous).is_file() else None,
            politeness=self.steering.politeness(site, self.options.politeness),
            resolve=self.options.resolve,
            browser=self.options.browser,
            focus=self.options.focus,
            injected=self.store.injected(site.id),
            blocked=self.steering.blocklist.patterns,
        )

    def _last_reports(self, site: Site) -> list[Mapping[str, Any]]:
        """The reports of the site's last crawls, newest first: as many as the depth hint and the
        choice of a baseline look back on."""
        window = self.options.quiet_crawls + self.options.full_crawl_every
        if not site.crawls or not window:
            return []
        return [crawl.report for crawl in self.store.crawls(site.id, limit=window)]

    def _baseline(
        self, site: Site, depth: int, reports: list[Mapping[str, Any]]
    ) -> tuple[str, str]:
        """The signature and chunk files of the site's latest crawl that went `depth` deep or
        deeper (a report without its depth went as deep as the site goes): what a crawl to
        `depth` is compared with, since a crawl cut above knows nothing of the levels below."""
        for report in reports:
            reached = report.get("max_depth")
            if not isinstance(reached, int) or reached >= depth:
                return str(report.get("signature_file", "")), str(report.get("chunk_file", ""))
        return site.signature_file, site.chunk_file

    def depth_hint(self, site: Site) -> DepthHint:
        """The depth of the site's next crawl, from the reports of its last crawls."""
        return self._depth_hint(site, self._last_reports(site))

    def _depth_hint(self, site: Site, reports: list[Mapping[str, Any]]) -> DepthHint:
        options = self.options
        return depth_hint(
            site.max_depth, reports, site.crawls, options.quiet_crawls, options.full_crawl_every
        )

    # -- a site is done -----------------------------------------------------------------------

    async def _site_done(self, peer: Peer, done: SiteDone) -> Ok:
        # Telling a report's language and phrases takes tens of milliseconds: off the loop.
        report = await asyncio.to_thread(told, done.report)
        agent = self.agents.get(peer.name)
        if agent is not None:
            agent.site = None
        second = self.second_agents.pop(peer.name, None)
        if second is not None:
            self._finish_second(peer.name, second, report)
            self._wake.set()
            return Ok()
        site = self._site_of_report(peer.name, report)
        if site is None:
            log.info("report from %s for a site not given to it: kept out", peer.name)
        else:
            self._finish(site, report)
        self._wake.set()
        return Ok()

    def _finish_second(self, agent: str, site_id: int, report: Mapping[str, Any]) -> None:
        site = self.store.site(site_id)
        if site is None or report.get("start_url") != site.start_url or "failed" in report:
            log.info("second crawl by %s of site %d: nothing recorded", agent, site_id)
            return
        record = self.options.record_streams and site.state != "blacklisted"
        self.streams.found(site.id, report.get("streams"), record)
        self.store.finish(
            site.id,
            with_change_by_level(report),
            str(report.get("signature_file", "")),
            str(report.get("chunk_file", "")),
            time.time(),
            second=agent,
        )

    async def send_second(self, site_id: int) -> str:
        """Send a free agent on a site another agent is crawling: with the same order, breadth
        first, it fetches the same pages a little later, a second copy of a long crawl."""
        site = self.store.site(site_id)
        if site is None or site.state != "crawling":
            raise DlwebError(f"site {site_id} is not being crawled")
        free = [
            a
            for a in self.agents.values()
            if a.connected and a.site is None and a.name != site.agent
        ]
        if not free:
            raise DlwebError("no free agent")
        agent = free[0]
        agent.site = site.id
        self.second_agents[agent.name] = site.id
        assert agent.peer is not None
        try:
            await CRAWL.call(agent.peer, self.order(site), timeout=30)
        except (HipError, RemoteError) as exc:
            agent.site = None
            self.second_agents.pop(agent.name, None)
            raise DlwebError(f"agent {agent.name} refused: {exc}") from None
        log.info("%s: second agent %s sent", site.start_url, agent.name)
        return agent.name

    def _site_of_report(self, agent: str, report: Mapping[str, Any]) -> Site | None:
        """The site a report is about: the one the agent crawls, or (for a crawl given before a
        restart of ours) the site of its start URL, unless another agent has it now or the
        report was recorded already (an agent sends it again until it hears an answer, and a
        scheduler killed after recording it never answered)."""
        start_url = report.get("start_url")
        if not isinstance(start_url, str):
            return None
        site = self.store.agent_site(agent)
        if site is not None and site.start_url == start_url:
            return site
        try:
            site = self.store.find_site_for(canonical_url(start_url))
        except BadUrl:
            return None
        if site is None or site.start_url != start_url:
            return None
        if site.state in ("blacklisted", "removed") or (
            site.state == "crawling" and site.agent != agent
        ):
            return None
        started = report.get("started")
        if isinstance(started, int | float) and started <= site.last_crawl:
            return None
        return site

    def _finish(self, site: Site, report: Mapping[str, Any]) -> None:
        now = time.time()
        if "failed" in report:
            log.warning("%s failed: %s", site.start_url, report["failed"])
            self.store.set_state(site.id, "queued", next_crawl=now + self.options.shortest)
            return
        signature_file = str(report.get("signature_file", ""))
        chunk_file = str(report.get("chunk_file", ""))
        depth = report.get("max_depth")
        _, baseline = self._baseline(
            site,
            depth if isinstance(depth, int) else site.max_depth,
            self._last_reports(site),
        )
        chunks, previous = existing_file(chunk_file), existing_file(baseline)
        change = change_rate(report, previous, chunks) if chunks is not None else 1.0
        text = report.get("text")
        language = text.get("language") if isinstance(text, Mapping) else None
        verdict = judge(report, self.options.filters, str(language) if language else None)
        kept = verdict.passed or site.seed
        # A kept site's external links wait in the store, with its crawl, for the expansion
        # policy (connectivity.py).
        self.store.finish(
            site.id,
            with_change_by_level(report),
            signature_file,
            chunk_file,
            now,
            links=external_links(report) if kept else (),
        )
        self.streams.found(site.id, report.get("streams"), self.options.record_streams and kept)
        if not kept:
            log.info("%s blacklisted: %s", site.start_url, "; ".join(verdict.reasons))
            self.store.set_state(site.id, "blacklisted", relevance=verdict.relevance)
            return
        interval = (
            self.options.first_interval
            if site.crawls == 0 or not site.interval
            else next_interval(
                site.interval, change, shortest=self.options.shortest, longest=self.options.longest
            )
        )
        self.store.set_state(
            site.id,
            "idle",
            relevance=verdict.relevance,
            interval=interval,
            next_crawl=now + interval,
            change_rate=change,
        )
        self.feeds.remember(site, report)
        self.connectivity.apply_here()

    # -- what the operator sees ---------------------------------------------------------------

    def status(self) -> SchedulerStatus:
        return SchedulerStatus(
            campaign="running" if self.running else "paused",
            agents=tuple(
                CrawlerAgent(
                    a.name,
                    a.peer is not None,
                    a.site,
                    a.polled.status,
                    a.polled.at,
                    a.polled.unanswered,
                )
                for a in self.agents.values()
            ),
            counts=self.store.counts(),
            decisions=self.decisions,
            stream_agents=self.streams.status(),
            streams=self.store.stream_counts(),
            stream_decisions=self.streams.decisions,
            policy_agents=(*self.connectivity.status(), *self.feeds.status()),
            links_waiting=self.store.links_waiting(),
        )

    def site_detail(self, site: Site) -> SiteDetail:
        return SiteDetail(
            site,
            tuple(self.store.crawls(site.id)),
            tuple(Referrer(r.id, r.start_url, n) for r, n in self.store.referrers(site.id)),
        )
