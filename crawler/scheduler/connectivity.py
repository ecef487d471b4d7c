"""The scheduler's side of the connectivity agents: which agent resolves which finished crawl's
external links, and what happens to them when an agent dies.

Connectivity agents are HIP slaves of role `connectivity` (crawler/connectivity_agent.py). The
crawls whose links wait in the store (link_reports) go, one at a time, to connected agents with
no call in flight (`resolve_links`); the answer is applied (expansion.py) in one transaction,
which takes the crawl out of the store. A call that fails (the agent killed, its connection
dropped, a bad answer) applies nothing: the crawl waits in the store for the next free agent.
So does every crawl when the scheduler restarts, since which agent resolves what is kept in
memory only.

Without a connected agent, the scheduler resolves the links itself when `inline` (the default),
else they wait for one. A campaign that does not expand needs no guess: its links are applied
at once, by the scheduler.
"""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from archive.connectivity_calls import NO_SITE, RESOLVE_LINKS, ExternalLinks
from archive.errors import DlwebError
from archive.hip import HipError, Peer, RemoteError
from archive.scheduler_answers import PolicyAgent

from .agent_link import AgentLink, gone_longer_than, has_left
from .expansion import Expansion, resolve_links
from .store import LinkReport

__all__ = ["ConnectivityAgents"]

log = logging.getLogger(__name__)

CALL_TIMEOUT = 60.0
INLINE_BATCH = 20  # crawls the scheduler resolves itself in one dispatch


@dataclass
class ConnectivityAgent(AgentLink):
    crawl: int | None = None  # the crawl whose links it resolves
    resolved: int = 0


@dataclass(eq=False)
class ConnectivityAgents:
    """The connectivity agents and the crawls they resolve; `wake` asks for a dispatch."""

    expansion: Expansion
    inline: bool
    grace: float
    wake: Callable[[], None]
    agents: dict[str, ConnectivityAgent] = field(init=False, default_factory=dict)
    _calls: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def joined(self, peer: Peer) -> None:
        self.agents.setdefault(peer.name, ConnectivityAgent(peer.name, peer)).joined(peer)
        log.info("connectivity agent %s joined", peer.name)
        self.wake()

    def left(self, peer: Peer) -> None:
        if has_left(self.agents, peer):
            log.info("connectivity agent %s left", peer.name)

    def reclaim(self) -> None:
        """Agents gone for longer than the grace are forgotten (their calls failed already)."""
        for agent in gone_longer_than(self.grace, self.agents):
            if agent.crawl is None:
                del self.agents[agent.name]

    async def dispatch(self) -> None:
        """Waiting crawls to free agents, or applied here (`apply_here`)."""
        if self.apply_here():
            return
        store = self.expansion.store
        resolving = {a.crawl for a in self.agents.values() if a.crawl is not None}
        free = [a for a in self.agents.values() if a.connected and a.crawl is None]
        if not free:
            return
        for agent, report in zip(free, store.link_reports(len(free), resolving), strict=False):
            agent.crawl = report.crawl
            task = asyncio.create_task(self._resolve(agent, report))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)

    def apply_here(self) -> bool:
        """Applies waiting links in the scheduler (INLINE_BATCH crawls at most) when it does not
        expand, or when `inline` and no agent is connected; whether it did."""
        expand = self.expansion.expand
        if expand and not (self.inline and not any(a.connected for a in self.agents.values())):
            return False
        resolving = {a.crawl for a in self.agents.values() if a.crawl is not None}
        for report in self.expansion.store.link_reports(INLINE_BATCH, resolving):
            guesses = resolve_links(report.links) if expand else (NO_SITE,) * len(report.links)
            self.expansion.apply(report, guesses)
        return True

    async def _resolve(self, agent: ConnectivityAgent, report: LinkReport) -> None:
        assert agent.peer is not None
        try:
            answer = await RESOLVE_LINKS.call(
                agent.peer, ExternalLinks(report.crawl, report.links), timeout=CALL_TIMEOUT
            )
            if answer.crawl != report.crawl or len(answer.sites) != len(report.links):
                raise RemoteError("bad_params", "an answer for other links")
            self.expansion.apply(report, answer.sites)
            agent.resolved += 1
        except (HipError, RemoteError) as exc:
            log.warning(
                "links of crawl %d not resolved by %s: %s; they wait", report.crawl, agent.name, exc
            )
        except DlwebError as exc:
            log.error("links of crawl %d not applied: %s", report.crawl, exc)
        finally:
            agent.crawl = None
            self.wake()

    async def stop(self) -> None:
        for task in self._calls:
            task.cancel()
        await asyncio.gather(*self._calls, return_exceptions=True)

    def status(self) -> list[PolicyAgent]:
        return [
            PolicyAgent(a.name, "connectivity", a.connected, int(a.crawl is not None), a.resolved)
            for a in self.agents.values()
        ]
