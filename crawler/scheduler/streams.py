"""The scheduler's side of the streaming agents: which agent records which stream, and the
handover when an agent dies.

Streaming agents are HIP slaves of role `streamer` (crawler/stream/agent.py). When one joins, it
is asked its `status` (its capacity, the streams it records): those the database gives it are
kept, those waiting are adopted, any other is stopped, and the streams the database gives it
that it does not record go back to waiting. Waiting streams go, one at a time, to the connected
agent with the most free slots (`record`). An agent whose connection drops keeps its streams for
the grace period; then they go back to waiting, and so to other agents. The stretch between the
last chunk the gone agent stored and the first its successor stores is a gap in the stream's
timeline: the two recordings' chunk logs carry different recording ids, with a hole between.

Every decision is an event in the database (crawler/scheduler/stream_registry.py), and each
recording's progress, as its agent reports it (`stream_report`), a row of its own. The calls and
their messages are archive/stream_calls.py's, which the agents use too.
"""

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from archive.errors import NotFound
from archive.hip import HipError, Nothing, Peer, RemoteError
from archive.scheduler_answers import StreamDetail, StreamingAgent
from archive.stream_calls import RECORD, STATUS, STOP, Ok, StopStream, StreamReport

from ..stream.assignment import Assignment
from ..stream.settings import StreamSettings
from .agent_link import AgentLink, gone_longer_than, has_left
from .stream_registry import Stream, StreamRegistry

__all__ = ["StreamAgents"]

log = logging.getLogger(__name__)

CALL_TIMEOUT = 30.0
REFUSED_PAUSE = 5.0  # seconds an agent that refused a stream is given none


@dataclass
class StreamAgent(AgentLink):
    capacity: int = 0
    refused_at: float = -REFUSED_PAUSE


@dataclass(eq=False)
class StreamAgents:
    """The streaming agents and what they record; `wake` asks the scheduler for a dispatch."""

    store: StreamRegistry
    settings: StreamSettings
    resolve: dict[str, list[str]]
    grace: float
    wake: Callable[[], None]
    agents: dict[str, StreamAgent] = field(init=False, default_factory=dict)
    decisions: int = field(init=False, default=0)
    _calls: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def restarted(self) -> None:
        """After a restart of the scheduler, the agents that were recording have the grace
        period to come back with their streams."""
        now = time.monotonic()
        for name in self.store.stream_load():
            self.agents[name] = StreamAgent(name, None, gone_since=now)

    # -- agents -------------------------------------------------------------------------------

    async def joined(self, peer: Peer) -> None:
        agent = self.agents.setdefault(peer.name, StreamAgent(peer.name, peer))
        agent.joined(peer)
        try:
            status = await STATUS.call(peer, Nothing(), timeout=CALL_TIMEOUT)
        except (HipError, RemoteError) as exc:
            log.warning("streaming agent %s did not tell its status: %s", peer.name, exc)
            return
        agent.capacity = max(status.capacity, 0)
        recorded = status.recorded()
        log.info("streaming agent %s joined: capacity %d", peer.name, agent.capacity)
        now = time.time()
        for stream in self.store.agent_streams(peer.name):
            if stream.id not in recorded:
                self._released(
                    stream.id, peer.name, "released", now, "the agent came back without it"
                )
        for stream_id, url in recorded.items():
            known = self.store.stream(stream_id)
            if known is None or known.url != url:
                self._stop_on(peer, stream_id)
            elif known.state == "recording" and known.agent == peer.name:
                continue
            elif not self._decided(
                self.store.move_stream(
                    stream_id, "recording", "adopted", now, agent=peer.name, was=("waiting",)
                )
            ):
                self._stop_on(peer, stream_id)
        self.wake()

    def left(self, peer: Peer) -> None:
        if has_left(self.agents, peer):
            log.info("streaming agent %s left", peer.name)

    def reclaim(self) -> None:
        """The streams of agents gone for longer than the grace go back to waiting."""
        for agent in gone_longer_than(self.grace, self.agents):
            gone = f"the agent has been gone for {agent.absence():.1f} s"
            for stream in self.store.agent_streams(agent.name):
                self._released(stream.id, agent.name, "released", time.time(), gone)
                log.info("stream %d handed back: agent %s is gone", stream.id, agent.name)
            del self.agents[agent.name]
            self.wake()

    # -- dispatch -----------------------------------------------------------------------------

    async def dispatch(self) -> None:
        """Waiting streams to connected agents, each to the one with the most free slots."""
        now = time.monotonic()
        live = [
            a
            for a in self.agents.values()
            if a.connected and a.capacity and now - a.refused_at >= REFUSED_PAUSE
        ]
        if not live:
            return
        load = self.store.stream_load()
        free = {a.name: a.capacity - load.get(a.name, 0) for a in live}
        slots = sum(n for n in free.values() if n > 0)
        if not slots:
            return
        for stream in self.store.streams(state="waiting", limit=slots):
            agent = max(live, key=lambda a: free[a.name])
            if free[agent.name] <= 0:
                return
            if not self._decided(
                self.store.move_stream(
                    stream.id,
                    "recording",
                    "assigned",
                    time.time(),
                    agent=agent.name,
                    was=("waiting",),
                )
            ):
                continue
            free[agent.name] -= 1
            log.info("stream %d (%s) given to %s", stream.id, stream.url, agent.name)
            await self._send(agent, stream)

    def assignment(self, stream: Stream) -> Assignment:
        resumes = round(stream.last_recorded * 1e6)  # 0 for a stream never recorded
        return Assignment(stream.id, stream.url, self.settings, self.resolve, resumes)

    async def _send(self, agent: StreamAgent, stream: Stream) -> None:
        assert agent.peer is not None
        try:
            await RECORD.call(agent.peer, self.assignment(stream).message(), timeout=CALL_TIMEOUT)
        except (HipError, RemoteError) as exc:
            log.warning("agent %s refused stream %d: %s", agent.name, stream.id, exc)
            agent.refused_at = time.monotonic()
            self._released(stream.id, agent.name, "refused", time.time(), str(exc))

    # -- what agents report -------------------------------------------------------------------

    async def report(self, peer: Peer, params: StreamReport) -> Ok:
        """`stream_report`: each recording's progress kept; an ended recording's stream goes
        back to waiting; an agent recording a stream that is not its own is told to stop; a
        stopping agent is given no more."""
        agent = self.agents.get(peer.name)
        if agent is not None and params.stopping:
            agent.capacity = 0
        now = time.time()
        for report in params.streams:
            stream = self.store.stream_progress(peer.name, report, now)
            if stream is None:
                continue
            own = stream.state == "recording" and stream.agent == peer.name
            if report.get("ended") is not True:
                if not own:
                    self._stop_on(peer, stream.id)
            elif own and self._released(
                stream.id, peer.name, "ended", now, str(report.get("reason", ""))
            ):
                self.wake()
        return Ok()

    # -- the operator's choices ---------------------------------------------------------------

    def found(self, site_id: int, urls: object, record: bool) -> None:
        """Streams a crawl of a site reported: registered, to be recorded if `record`."""
        listed: Iterable[Any] = urls if isinstance(urls, list) else []
        added = self.store.found_streams(
            site_id, (u for u in listed if isinstance(u, str)), record, time.time()
        )
        for stream in added:
            log.info("site %d reported stream %s (%s)", site_id, stream.url, stream.state)
        if added and record:
            self.wake()

    def add(self, url: str, site_id: int | None) -> Stream:
        stream = self.store.record_stream(url, site_id, time.time())
        self.wake()
        return stream

    async def stop(self, url: str) -> Stream:
        stream = self.store.find_stream(url)
        if stream is None:
            raise NotFound(f"no stream {url}")
        self.store.move_stream(
            stream.id,
            "stopped",
            "stopped",
            time.time(),
            was=("found", "waiting", "recording"),
            detail="by the operator",
        )
        agent = self.agents.get(stream.agent) if stream.state == "recording" else None
        if agent is not None and agent.peer is not None:
            try:
                await STOP.call(agent.peer, StopStream(stream.id), timeout=CALL_TIMEOUT)
            except (HipError, RemoteError) as exc:
                log.warning("agent %s did not stop stream %d: %s", agent.name, stream.id, exc)
        stopped = self.store.stream(stream.id)
        assert stopped is not None
        return stopped

    def status(self) -> tuple[StreamingAgent, ...]:
        load = self.store.stream_load()
        return tuple(
            StreamingAgent(a.name, a.connected, a.capacity, load.get(a.name, 0))
            for a in self.agents.values()
        )

    def detail(self, stream: Stream) -> StreamDetail:
        """A stream, its recordings (one per agent it was given to) and the decisions about it."""
        return StreamDetail(
            stream,
            tuple(self.store.stream_recordings(stream.id)),
            tuple(self.store.stream_events(stream.id)),
        )

    # -- inside -------------------------------------------------------------------------------

    def _decided(self, moved: bool) -> bool:
        if moved:
            self.decisions += 1
        return moved

    def _released(self, stream_id: int, agent: str, event: str, now: float, why: str) -> bool:
        """A stream `agent` records goes back to waiting, the event saying why; False when it
        was not recording there."""
        return self._decided(
            self.store.move_stream(
                stream_id, "waiting", event, now, was=("recording",), was_agent=agent, detail=why
            )
        )

    def _stop_on(self, peer: Peer, stream_id: int) -> None:
        """Tell an agent to stop recording a stream that is not its own, without waiting."""
        log.info("agent %s records stream %d, which is not its own: stopped", peer.name, stream_id)
        task = asyncio.create_task(self._call_stop(peer, stream_id))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _call_stop(self, peer: Peer, stream_id: int) -> None:
        try:
            await STOP.call(peer, StopStream(stream_id), timeout=CALL_TIMEOUT)
        except (HipError, RemoteError) as exc:
            log.warning("agent %s did not stop stream %d: %s", peer.name, stream_id, exc)
