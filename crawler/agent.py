"""`dlweb crawler-agent`: a site crawler serving a scheduler, as a HIP slave of it.

The scheduler calls `crawl` with an order (the agent answers at once and crawls in the
background), `status` for the monitoring figures, `clone` to start one more agent like this one,
and `stop`. When a site is done, the agent calls the scheduler's `site_done` with the report
(and the depth it was crawled to, `max_depth`), again until it is acknowledged, so a report is never lost to a dropped connection. The calls and
their messages are archive/crawl_calls.py's, which the scheduler uses too.
"""

import argparse
import asyncio
import logging
import subprocess
import sys

from archive.cluster import ClusterClient
from archive.command_line import serve_until_stopped, standalone
from archive.config import load_config
from archive.crawl_calls import (
    CLONE,
    CRAWL,
    SITE_DONE,
    STATUS,
    STOP,
    AgentStatus,
    Cloned,
    CrawlAccepted,
    CrawlOrder,
    SiteDone,
    Stopping,
)
from archive.discovery import SCHEDULER, SCHEDULER_HOW, address
from archive.errors import DlwebError
from archive.hip import Handler, HipError, HipSlave, Nothing, Peer, RemoteError

from .cli import add_agent_arguments
from .order import Order
from .pool import Agent
from .scheduler_slave import scheduler_slave

__all__ = ["AgentService", "run"]

log = logging.getLogger(__name__)

RETRY_REPORT = 2.0


class AgentService:
    def __init__(self, agent: Agent, client: ClusterClient, args: argparse.Namespace) -> None:
        self.agent = agent
        self.client = client
        self.args = args
        self.clones = 0
        self.slave: HipSlave | None = None
        self.stopped = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def handlers(self) -> dict[str, Handler]:
        return {
            CRAWL.name: CRAWL.handler(self._crawl),
            STATUS.name: STATUS.handler(self._status),
            CLONE.name: CLONE.handler(self._clone),
            STOP.name: STOP.handler(self._stop),
        }

    async def _crawl(self, _: Peer, message: CrawlOrder) -> CrawlAccepted:
        if self._task is not None and not self._task.done():
            raise RemoteError("busy", f"{self.agent.name} is crawling {self.agent.progress.site}")
        try:
            order = Order.from_message(message)
        except DlwebError as exc:
            raise RemoteError("bad_params", str(exc)) from None
        self._task = asyncio.create_task(self._run(order))
        return CrawlAccepted(order.delimitation.start_url)

    async def _run(self, order: Order) -> None:
        try:
            report = await self.agent.crawl(self.client, order)
            # How deep it went: the scheduler compares a crawl with one that went as deep.
            report["max_depth"] = order.delimitation.max_depth
        except DlwebError as exc:
            report = {"start_url": order.delimitation.start_url, "failed": str(exc)}
        except Exception as exc:
            log.exception("crawl of %s stopped", order.delimitation.start_url)
            report = {"start_url": order.delimitation.start_url, "failed": f"internal error: {exc}"}
        assert self.slave is not None
        while True:
            try:
                await SITE_DONE.call(self.slave, SiteDone(self.agent.name, report))
                return
            except (HipError, RemoteError) as exc:
                log.warning("report of %s not delivered yet: %s", order.delimitation.start_url, exc)
                await asyncio.sleep(RETRY_REPORT)

    async def _status(self, _: Peer, params: Nothing) -> AgentStatus:
        return self.agent.status_message()

    async def _clone(self, _: Peer, params: Nothing) -> Cloned:
        """Start one more agent like this one, under a name of its own (and its monitoring page,
        if any, on a free port); it joins the scheduler by itself."""
        self.clones += 1
        name = f"{self.agent.name}-{self.clones}"
        args = self.args
        command = [
            sys.executable,
            "-m",
            "crawler.agent",
            "--scheduler",
            args.scheduler,
            "--name",
            name,
            "--work",
            str(args.work),
            "-c",
            str(args.config),
        ]
        if args.monitor is not None:
            command += ["--monitor", f"{args.monitor[0]}:0"]
        if args.hip_proxy is not None:
            command += ["--hip-proxy", args.hip_proxy.url]
        process = subprocess.Popen(command, start_new_session=True)
        return Cloned(process.pid, name)

    async def _stop(self, _: Peer, params: Nothing) -> Stopping:
        self.stopped.set()
        return Stopping(self.agent.name)


async def _serve(args: argparse.Namespace) -> None:
    config = load_config(args.config)
    args.scheduler = await address(SCHEDULER, args.scheduler, config, SCHEDULER_HOW)
    agent = Agent(config, args.work, name=args.name or "", monitor=args.monitor)
    await agent.serve_monitor()
    async with ClusterClient(config, agent.name) as client:
        service = AgentService(agent, client, args)
        try:
            async with scheduler_slave(
                args, config, agent.name, "crawler", service.handlers(), service.stopped
            ) as slave:
                service.slave = slave
                await service.stopped.wait()
        finally:
            await agent.close()


def run(args: argparse.Namespace) -> int:
    args.work.mkdir(parents=True, exist_ok=True)
    return serve_until_stopped(_serve(args))


if __name__ == "__main__":
    sys.exit(standalone("python -m crawler.agent", "dlweb site crawler agent", add_agent_arguments))
