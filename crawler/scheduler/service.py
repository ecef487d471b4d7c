"""The scheduler: master of the site crawler agents, deciding which site to crawl and when.

Its state lives in the store (SQLite by default), written before anything is acknowledged, so a
scheduler killed at any moment resumes where it stopped: sites being crawled by an agent that is
gone go back to the queue, finished crawls are never redone, discovered sites are kept.

Two policies run together. Expansion: each finished site's report passes the campaign's filters
or the site is blacklisted; a passing site's external links are matched against the registered
sites (the graph table) or register new sites, queued with a priority from their referrers'
relevance and hub ranks and their own authority (HITS on the graph). Temporal: each crawled site
is crawled again after an interval halved when it changed much since its previous crawl and
doubled when it hardly changed; a change in one of its feeds brings the next crawl forward.

The stream links crawls report are registered with their sites, and recorded by streaming agents
when the operator says so (streams.py).
"""

import asyncio
import contextlib
import hashlib
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from archive.errors import DlwebError
from archive.hip import HipError, HipMaster, Peer, RemoteError
from archive.network import NETWORK_ERRORS
from archive.urlkey import BadUrl, canonical_url

from ..order import read_signatures
from ..stream.assignment import ROLE as STREAMER
from ..stream.recording import StreamSettings
from .guess import guess_site
from .policy import Filters, change_rate, judge, next_interval, priority
from .ranks import hits
from .store import Site, Store
from .streams import StreamAgents

__all__ = ["Scheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)

TICK = 0.2
RANK_EVERY = 30.0  # seconds between HITS runs while the graph changes
FEED_TIMEOUT = 10.0
MAX_FEEDS = 5  # feeds polled per site
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
    record_streams: bool = False  # record every stream a crawl reports, not only those added
    stream_settings: StreamSettings = field(default_factory=StreamSettings)


@dataclass
class AgentState:
    name: str
    peer: Peer | None
    site: int | None = None
    gone_since: float = 0.0
    busy_since: float = 0.0


class Scheduler:
    def __init__(self, store: Store, secret: bytes, options: SchedulerOptions) -> None:
        self.store = store
        self.options = options
        self.agents: dict[str, AgentState] = {}
        self.streams = StreamAgents(
            store, options.stream_settings, options.resolve, options.agent_grace, self.wake
        )
        self.hip = HipMaster(
            secret,
            "scheduler",
            {"site_done": self._site_done, "stream_report": self.streams.report},
            on_connect=self._joined,
            on_disconnect=self._left,
        )
        self.seconds: dict[str, int] = {}  # agents sent on a site another agent crawls
        self._wake = asyncio.Event()
        self._graph_changed = False
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
            asyncio.create_task(self._rank_loop()),
            asyncio.create_task(self._feed_loop()),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def running(self) -> bool:
        return self.store.get_setting("campaign", "running") == "running"

    def wake(self) -> None:
        """Look for work now rather than at the next tick."""
        self._wake.set()

    def register(
        self,
        start_url: str,
        accept: str,
        reject: str = "",
        max_depth: int = 150,
        priority: float = 0.0,
        source: str = "operator",
        seed: bool = False,
    ) -> Site:
        """A new site, queued for a crawl now (DuplicateSite when its start URL is taken)."""
        site = self.store.add_site(
            start_url,
            accept,
            reject,
            max_depth=max_depth,
            priority=priority,
            source=source,
            seed=seed,
        )
        self.store.set_state(site.id, "queued", next_crawl=time.time())
        self._wake.set()
        found = self.store.site(site.id)
        assert found is not None
        return found

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
        if peer.role != "crawler":
            return
        agent = self.agents.get(peer.name)
        if agent is None:
            self.agents[peer.name] = AgentState(peer.name, peer)
        else:
            agent.peer, agent.gone_since = peer, 0.0
        log.info("agent %s joined", peer.name)
        self._wake.set()

    async def _left(self, peer: Peer) -> None:
        self.streams.left(peer)
        agent = self.agents.get(peer.name)
        if agent is not None and agent.peer is peer:
            agent.peer, agent.gone_since = None, time.monotonic()
            log.info("agent %s left", peer.name)

    def _reclaim(self) -> None:
        """Sites of agents gone for longer than the grace go to other agents."""
        now = time.monotonic()
        for agent in list(self.agents.values()):
            if agent.peer is None and now - agent.gone_since >= self.options.agent_grace:
                self.seconds.pop(agent.name, None)
                for site_id in self.store.release_agent(agent.name):
                    log.info("site %d handed back: agent %s is gone", site_id, agent.name)
                del self.agents[agent.name]

    async def clone(self, name: str) -> dict[str, Any]:
        agent = self.agents.get(name)
        if agent is None or agent.peer is None:
            raise DlwebError(f"no connected agent {name!r}")
        answer: dict[str, Any] = await agent.peer.call("clone", {})
        return answer

    # -- dispatch -----------------------------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while True:
            try:
                self._reclaim()
                self.streams.reclaim()
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
            if a.peer is not None
            and not a.peer.closed
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
                await agent.peer.call("crawl", self._order(site), timeout=30)
            except (HipError, RemoteError) as exc:
                log.warning("agent %s refused %s: %s", agent.name, site.start_url, exc)
                self.store.release_agent(agent.name)
                # Still on a crawl from before a restart of ours: wait for its report.
                busy = isinstance(exc, RemoteError) and exc.code == "busy"
                agent.site = BUSY_ELSEWHERE if busy else None
                agent.busy_since = time.monotonic()

    def _order(self, site: Site) -> dict[str, Any]:
        order: dict[str, Any] = {
            "start_url": site.start_url,
            "accept": site.accept,
            "reject": site.reject,
            "max_depth": site.max_depth,
            "keywords": list(self.options.filters.keywords),
            "politeness": dict(self.options.politeness),
            "resolve": self.options.resolve,
            "browser": self.options.browser,
        }
        if site.signature_file and Path(site.signature_file).is_file():
            order["previous"] = site.signature_file
        return order

    # -- a site is done -----------------------------------------------------------------------

    async def _site_done(self, peer: Peer, params: Any) -> dict[str, bool]:
        if not isinstance(params, Mapping) or not isinstance(params.get("report"), Mapping):
            raise RemoteError("bad_params", "site_done needs {agent, report}")
        report = params["report"]
        agent = self.agents.get(peer.name)
        if agent is not None:
            agent.site = None
        second = self.seconds.pop(peer.name, None)
        if second is not None:
            self._finish_second(peer.name, second, report)
            self._wake.set()
            return {"ok": True}
        site = self._site_of_report(peer.name, report)
        if site is None:
            log.info("report from %s for a site not given to it: kept out", peer.name)
        else:
            self._finish(site, report)
        self._wake.set()
        return {"ok": True}

    def _finish_second(self, agent: str, site_id: int, report: Mapping[str, Any]) -> None:
        site = self.store.site(site_id)
        if site is None or report.get("start_url") != site.start_url or "failed" in report:
            log.info("second crawl by %s of site %d: nothing recorded", agent, site_id)
            return
        record = self.options.record_streams and site.state != "blacklisted"
        self.streams.found(site.id, report.get("streams"), record)
        self.store.finish(
            site.id,
            _with_change_by_level(report),
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
            if a.peer is not None and not a.peer.closed and a.site is None and a.name != site.agent
        ]
        if not free:
            raise DlwebError("no free agent")
        agent = free[0]
        agent.site = site.id
        self.seconds[agent.name] = site.id
        assert agent.peer is not None
        try:
            await agent.peer.call("crawl", self._order(site), timeout=30)
        except (HipError, RemoteError) as exc:
            agent.site = None
            self.seconds.pop(agent.name, None)
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
        chunks, previous = _existing(chunk_file), _existing(site.chunk_file)
        change = change_rate(report, previous, chunks) if chunks is not None else 1.0
        self.store.finish(site.id, _with_change_by_level(report), signature_file, chunk_file, now)
        text = report.get("text")
        language = text.get("language") if isinstance(text, Mapping) else None
        verdict = judge(report, self.options.filters, str(language) if language else None)
        kept = verdict.passed or site.seed
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
        self._links(site, report)
        self._remember_feeds(site, report)

    def _links(self, site: Site, report: Mapping[str, Any]) -> None:
        """External links: edges to known sites, new sites for unknown ones."""
        targets: dict[int, int] = {}
        for link in report.get("external_links", []):
            url = link.get("url") if isinstance(link, Mapping) else None
            if not isinstance(url, str):
                continue
            try:
                url = canonical_url(url)
            except BadUrl:
                continue
            target = self.store.find_site_for(url)
            if target is None:
                if not self.options.expand:
                    continue
                target = self._discover(url, site)
                if target is None:
                    continue
            if target.id != site.id and target.state != "blacklisted":
                targets[target.id] = targets.get(target.id, 0) + 1
        if targets:
            self.store.add_edges(site.id, targets, time.time())
            self._graph_changed = True

    def _discover(self, url: str, referrer: Site) -> Site | None:
        try:
            start_url, accept, reject = guess_site(url)
        except (BadUrl, DlwebError):
            return None
        # A link to a directory without its slash (/~ann) lies outside the site it guesses.
        known = self.store.find_site_for(start_url)
        if known is not None:
            return known
        try:
            return self.register(
                start_url,
                accept,
                reject,
                max_depth=referrer.max_depth,
                priority=priority([referrer.relevance], [referrer.hub], 0.0),
                source=f"discovered from site {referrer.id}",
            )
        except DlwebError as exc:
            log.info("%s not registered: %s", start_url, exc)
            return self.store.find_site_for(url)

    # -- ranks --------------------------------------------------------------------------------

    async def _rank_loop(self) -> None:
        while True:
            await asyncio.sleep(RANK_EVERY if not self._graph_changed else 1.0)
            if self._graph_changed:
                self._graph_changed = False
                self.rank()

    def rank(self) -> None:
        """HITS on the site graph, then the priorities of the sites waiting for a first crawl."""
        hubs, authorities = hits(self.store.edges())
        self.store.set_ranks(hubs, authorities)
        waiting = {}
        for site in self.store.sites(state="queued", limit=1_000_000):
            if site.crawls:
                continue
            referrers = self.store.referrers(site.id)
            waiting[site.id] = priority(
                [r.relevance for r, _ in referrers],
                [hubs.get(r.id, 0.0) for r, _ in referrers],
                authorities.get(site.id, 0.0),
            )
        self.store.set_priorities(waiting)

    # -- feeds --------------------------------------------------------------------------------

    def _remember_feeds(self, site: Site, report: Mapping[str, Any]) -> None:
        """The site's feeds, each with the SHA-256 of the copy the crawl archived: a poll that
        finds other bytes means the site has news."""
        feeds = [f for f in report.get("feeds", []) if isinstance(f, str)][:MAX_FEEDS]
        self.store.set_setting(f"feeds:{site.id}", "\n".join(feeds))
        signature_file = _existing(str(report.get("signature_file", "")))
        if not feeds or signature_file is None:
            return
        try:
            archived = read_signatures(signature_file)
        except DlwebError as exc:
            log.warning("%s: %s", site.start_url, exc)
            return
        for url in feeds:
            try:
                signature = archived.get(canonical_url(url))
            except BadUrl:
                continue
            if signature is not None:
                self.store.set_setting(f"feed:{url}", signature.content)

    async def _feed_loop(self) -> None:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=FEED_TIMEOUT),
            auto_decompress=False,  # the bytes as sent, as the crawler hashed them
            connector=aiohttp.TCPConnector(resolver=_PinnedResolver(self.options.resolve)),
        ) as session:
            while True:
                await asyncio.sleep(self.options.feed_interval)
                await self.poll_feeds(session)

    async def poll_feeds(self, session: aiohttp.ClientSession) -> list[int]:
        """Sites whose feeds changed since the last look: their next crawl is now."""
        brought_forward = []
        for site in self.store.sites(state="idle", limit=1_000_000):
            feeds = self.store.get_setting(f"feeds:{site.id}")
            for url in feeds.split("\n") if feeds else []:
                try:
                    async with session.get(url) as answer:
                        body = await answer.read()
                except NETWORK_ERRORS as exc:
                    log.info("feed %s: %s", url, exc)
                    continue
                digest = hashlib.sha256(body).hexdigest()
                key = f"feed:{url}"
                before = self.store.get_setting(key)
                self.store.set_setting(key, digest)
                if before and before != digest:
                    log.info("feed %s changed: %s is crawled again now", url, site.start_url)
                    self.store.set_state(site.id, "idle", next_crawl=time.time())
                    brought_forward.append(site.id)
                    break
        if brought_forward:
            self._wake.set()
        return brought_forward

    # -- what the operator sees ---------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "campaign": "running" if self.running else "paused",
            "agents": [
                {"name": a.name, "connected": a.peer is not None, "site": a.site}
                for a in self.agents.values()
            ],
            "counts": self.store.counts(),
            "decisions": self.decisions,
            "stream_agents": self.streams.status(),
            "streams": self.store.stream_counts(),
            "stream_decisions": self.streams.decisions,
        }


def _existing(name: str) -> Path | None:
    """The file of a path a report or the store names, if it is there (an agent's disk)."""
    return Path(name) if name and Path(name).is_file() else None


def _with_change_by_level(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report with the share of new contents at each level of the site, where it changes."""
    kept = dict(report)
    levels = report.get("levels")
    if isinstance(levels, Mapping):
        kept["change_by_level"] = {
            level: round(counts["new_contents"] / seen, 4)
            for level, counts in levels.items()
            if isinstance(counts, Mapping)
            and (seen := counts.get("new_contents", 0) + counts.get("known_contents", 0))
        }
    return kept


class _PinnedResolver(AbstractResolver):
    """Host names the campaign pins to addresses (as the agents' --resolve), others by DNS."""

    def __init__(self, pinned: Mapping[str, list[str]]) -> None:
        self.pinned = {host.lower(): list(addresses) for host, addresses in pinned.items()}
        self.fallback = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = self.pinned.get(host.lower())
        if not addresses:
            return await self.fallback.resolve(host, port, family)
        return [
            ResolveResult(hostname=host, host=a, port=port, family=socket.AF_INET, proto=0, flags=0)
            for a in addresses
        ]

    async def close(self) -> None:
        await self.fallback.close()
