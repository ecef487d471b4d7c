"""`dlweb stream-agent`: a streaming agent serving a scheduler, as a HIP slave of it.

One event loop records many streams at once, up to the agent's capacity. The scheduler calls
`record` with an assignment (answered at once; `full` when every slot is taken, `bad_params` for
a bad assignment), `stop` with a stream id, and `status`. The agent calls the scheduler's
`stream_report` with the progress of every recording every few seconds, and at once when a
recording ends; an ended recording's report is sent again until it is acknowledged, as a site
crawler agent's `site_done` is. A stopping agent says so in its last report (`stopping`), so that
its streams go to other agents at once rather than back to it. The calls and their messages are
archive/stream_calls.py's, which the scheduler uses too.
"""

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import uvloop

from archive.cluster import ClusterClient
from archive.command_line import standalone
from archive.config import load_config
from archive.discovery import SCHEDULER, SCHEDULER_HOW, address
from archive.hip import Handler, HipError, HipSlave, Nothing, Peer, RemoteError
from archive.stream_calls import (
    RECORD,
    STATUS,
    STOP,
    STREAM_REPORT,
    RecordAccepted,
    RecordOrder,
    Stopped,
    StopStream,
    StreamerStatus,
    StreamReport,
)
from archive.streams import drift_of

from ..fetch import Resolver
from ..scheduler_slave import scheduler_slave
from .assignment import ROLE, Assignment
from .cli import REPORT_EVERY, add_agent_arguments
from .recorder import record
from .report import Recording
from .store import STORE_GRACE, StreamStore

__all__ = ["StreamAgent", "progress", "run"]

log = logging.getLogger(__name__)

RETRY_REPORT = 2.0
FINAL_REPORT_WAIT = 10.0  # seconds a stopping agent gives its last reports to get through


@dataclass
class Running:
    """One stream being recorded here."""

    assignment: Assignment
    recording: Recording
    started: float  # time.time() when this agent began recording it
    task: "asyncio.Task[None] | None" = None
    reason: str = "ended"  # why it ended, once it has


def progress(running: Running, ended: bool) -> dict[str, Any]:
    """What the scheduler is told of a recording: figures, not the lists a report grows."""
    recording = running.recording
    logs = recording.logs
    report: dict[str, Any] = {
        "stream": running.assignment.stream,
        "url": recording.url,
        "recording": recording.recording,
        "ended": ended,
        "started": running.started,
        "last": logs[-1].end.time / 1e6 if logs else 0.0,
        "protocol": recording.protocol,
        "bytes": recording.bytes,
        "chunks": recording.chunks,
        "connections": recording.connections,
        "titles": len(recording.titles),
        "gaps": len(recording.gaps),
        "errors": dict(recording.errors),
        "drift_text": drift_of(logs).describe(),
    }
    if ended:
        report["reason"] = running.reason
    return report


class StreamAgent:
    def __init__(
        self, name: str, capacity: int, store: StreamStore, report_every: float = REPORT_EVERY
    ) -> None:
        self.name = name
        self.capacity = capacity
        self.store = store
        self.report_every = report_every
        self.running: dict[int, Running] = {}
        self.ended: dict[str, dict[str, Any]] = {}  # final reports not acknowledged yet
        self.slave: HipSlave | None = None
        self.stopped = asyncio.Event()
        self.stopping = False  # takes no more streams
        self._report_now = asyncio.Event()

    def handlers(self) -> dict[str, Handler]:
        return {
            RECORD.name: RECORD.handler(self._record),
            STOP.name: STOP.handler(self._stop),
            STATUS.name: STATUS.handler(self._status),
        }

    # -- the scheduler's calls ----------------------------------------------------------------

    async def _record(self, _: Peer, order: RecordOrder) -> RecordAccepted:
        assignment = Assignment.of(order)
        running = self.running.get(assignment.stream)
        if running is None:
            if self.stopping:
                raise RemoteError("stopping", f"{self.name} is stopping")
            if len(self.running) >= self.capacity:
                raise RemoteError("full", f"{self.name} records {self.capacity} streams already")
            running = Running(assignment, Recording(assignment.url), time.time())
            self.running[assignment.stream] = running
            running.task = asyncio.create_task(self._run(running))
            log.info("stream %d: recording %s", assignment.stream, assignment.url)
        return RecordAccepted(assignment.stream, running.recording.recording)

    async def _stop(self, _: Peer, params: StopStream) -> Stopped:
        running = self.running.get(params.stream)
        if running is None or running.task is None:
            return Stopped(params.stream, False)
        await self._end(running, "stopped by the scheduler")
        return Stopped(params.stream, True, running.recording.recording)

    async def _status(self, _: Peer, params: Nothing) -> StreamerStatus:
        return self.status()

    def status(self) -> StreamerStatus:
        return StreamerStatus(
            self.name,
            os.getpid(),
            self.capacity,
            self.capacity - len(self.running),
            tuple(progress(r, ended=False) for r in self.running.values()),
        )

    # -- recordings ---------------------------------------------------------------------------

    async def _run(self, running: Running) -> None:
        """Record until stopped; whatever ends it, its last report is queued."""
        assignment = running.assignment
        try:
            await record(
                running.recording,
                self.store,
                Resolver(assignment.resolve),
                assignment.settings,
                resumes=assignment.resumes or None,
            )
        except Exception as exc:
            log.exception("stream %d: recording failed", assignment.stream)
            running.recording.errors["internal"] += 1
            running.reason = f"failed: {exc}"
        finally:
            self.running.pop(assignment.stream, None)
            self.ended[running.recording.recording] = progress(running, ended=True)
            self._report_now.set()
            log.info("stream %d: recording ended (%s)", assignment.stream, running.reason)

    async def _end(self, running: Running, reason: str) -> None:
        assert running.task is not None
        running.reason = reason
        running.task.cancel()
        await asyncio.wait([running.task])

    async def stop_all(self, reason: str) -> None:
        self.stopping = True
        await asyncio.gather(*(self._end(r, reason) for r in list(self.running.values())))

    # -- reports ------------------------------------------------------------------------------

    async def report_loop(self) -> None:
        """Progress every `report_every` seconds, at once when a recording ends, and every
        RETRY_REPORT seconds while an ended recording's report is not acknowledged."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._report_now.wait(), self.report_every)
            self._report_now.clear()
            while not await self.send_reports() and self.ended:
                await asyncio.sleep(RETRY_REPORT)

    async def send_reports(self) -> bool:
        """One `stream_report` call with every recording's progress; whether it got through."""
        ended = dict(self.ended)
        streams = [progress(r, ended=False) for r in self.running.values()]
        if not streams and not ended:
            return True
        assert self.slave is not None
        try:
            await STREAM_REPORT.call(
                self.slave, StreamReport(self.name, (*streams, *ended.values()), self.stopping)
            )
        except (HipError, RemoteError) as exc:
            log.warning("stream report not delivered yet: %s", exc)
            return False
        for recording in ended:
            self.ended.pop(recording, None)
        return True


async def _serve(args: argparse.Namespace) -> None:
    config = load_config(args.config)
    args.scheduler = await address(SCHEDULER, args.scheduler, config, SCHEDULER_HOW)
    name = args.name or f"streamer-{os.getpid()}"
    async with ClusterClient(config, name) as client:
        store = StreamStore(client)
        agent = StreamAgent(name, args.capacity, store, args.report_every)
        async with scheduler_slave(
            args, config, name, ROLE, agent.handlers(), agent.stopped
        ) as slave:
            agent.slave = slave
            reporter = asyncio.create_task(agent.report_loop())
            try:
                await agent.stopped.wait()
            finally:
                reporter.cancel()
                await agent.stop_all("the agent stopped")
                # The scheduler hands the streams to other agents as soon as it hears of it.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(agent.send_reports(), FINAL_REPORT_WAIT)
                try:
                    await asyncio.wait_for(store.join(), STORE_GRACE)
                except TimeoutError:
                    log.error(
                        "%d inserts still failing after %g s: given up",
                        store.pending,
                        STORE_GRACE,
                    )


def run(args: argparse.Namespace) -> int:
    uvloop.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(
        standalone("python -m crawler.stream.agent", "dlweb streaming agent", add_agent_arguments)
    )
