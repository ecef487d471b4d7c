"""Running site crawls: one agent crawls one site at a time; several agents are forked clones.

Clones are forked after everything is imported, so the interpreter, the libraries and the parsers
are shared copy-on-write: each clone's own memory is its event loop, its connections and the
compact structures of the site it is crawling. numpy, which compares texts, is imported before
forking only when some site is crawled in full: a quick re-crawl reads text only where a page
changed, and its command starts sooner without it. Agents run on uvloop, as the servers do: a
crawl is a stream of small exchanges, where the event loop's own cost per read and write shows.
"""

import gc
import importlib
import logging
import multiprocessing
import os
import queue
import re
import resource
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from archive.crawl_calls import AgentStatus
from archive.errors import DlwebError

from .browser import Browser
from .monitor import start_monitor
from .order import Order
from .site import Progress, SiteCrawler

__all__ = ["Agent", "crawl_sites", "latest_signatures"]

log = logging.getLogger(__name__)

SIGNATURES_SUFFIX = ".signatures"


def signature_path(work: Path, start_url: str) -> Path:
    """Where a crawl of this site leaves its signature file: host and time in the name."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
    return work / f"{_host_part(start_url)}-{stamp}-{os.getpid()}{SIGNATURES_SUFFIX}"


def latest_signatures(work: Path, start_urls: Iterable[str]) -> dict[str, Path]:
    """The signature file the latest crawl of each of these sites left in `work`, by start URL
    (a site without one is left out). The folder is read once, however many sites and crawls it
    holds: a crawl's files gather there, three a site each time."""
    wanted: dict[str, list[str]] = {}
    for url in start_urls:
        wanted.setdefault(_host_part(url), []).append(url)
    latest: dict[str, tuple[str, float, Path]] = {}
    with os.scandir(work) as entries:
        for entry in entries:
            name = entry.name.removesuffix(SIGNATURES_SUFFIX)
            host, _, stamp = name.rpartition("-")[0].rpartition("-")
            if name == entry.name or host not in wanted:
                continue
            found = (stamp, entry.stat().st_mtime, Path(entry.path))
            if host not in latest or found[:2] > latest[host][:2]:
                latest[host] = found
    return {url: latest[host][2] for host, urls in wanted.items() if host in latest for url in urls}


def resident_memory() -> int:
    """The bytes of this process's memory now resident (its peak where /proc is missing)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _host_part(start_url: str) -> str:
    """A site's host (and port) as its files name it."""
    return re.sub(r"[^a-z0-9.-]+", "_", start_url.split("//", 1)[-1].split("/", 1)[0].lower())


@dataclass
class Agent:
    """One site crawler agent: its cluster connection, its monitoring page, its state."""

    config: ClusterConfig
    work: Path
    name: str = ""
    monitor: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        self.name = self.name or f"crawler-{os.getpid()}"
        self.progress = Progress()
        self.started = time.monotonic()
        self.state = "idle"
        self.errors: dict[str, int] = {}
        self.monitor_url = ""
        # One browser for every site this agent crawls; Chromium starts with the first page.
        self.browser = Browser()

    def status(self) -> dict[str, Any]:
        """The monitoring figures, as the monitoring page shows them."""
        return self.status_message().to_json()

    def status_message(self) -> AgentStatus:
        """The monitoring figures, as the scheduler's `status` call is answered them."""
        crawling = self.state == "crawling"
        return AgentStatus(
            name=self.name,
            state=self.state,
            pid=os.getpid(),
            uptime=round(time.monotonic() - self.started, 3),
            rss_mb=round(resident_memory() / 2**20, 1),
            sites=(self.progress.site,) if crawling and self.progress.site else (),
            pages=self.progress.pages if crawling else 0,
            crawl=self.progress.to_json(),
            errors=self.errors,
            browser={
                "memory_mb": round(self.browser.memory() / 2**20, 1),
                **self.browser.stats.to_json(),
            },
        )

    async def crawl(self, client: ClusterClient, order: Order) -> dict[str, Any]:
        self.state = "crawling"
        self.progress.pages = self.progress.fetched = self.progress.errors = 0
        work = self.work / f"site-{os.getpid()}"
        try:
            report = await SiteCrawler(order, client, work, self.progress, self.browser).run(
                signature_path(self.work, order.delimitation.start_url)
            )
        finally:
            self.state = "idle"
        for kind, n in report.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + n
        return report.to_json()

    async def close(self) -> None:
        """Stop what the agent started for its crawls (its browser)."""
        await self.browser.close()

    async def serve_monitor(self) -> None:
        if self.monitor is None:
            return
        host, port = self.monitor
        runner = await start_monitor(host, port, self.status, self.config.http)
        address = runner.addresses[0]
        self.monitor_url = f"http://{address[0]}:{address[1]}/"
        log.info("%s: monitoring page at %s", self.name, self.monitor_url)


async def _crawl_in_turn(agent: Agent, orders: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    await agent.serve_monitor()
    reports = []
    try:
        async with ClusterClient(agent.config, agent.name) as client:
            for order in orders:
                reports.append(await _one(agent, client, order))
    finally:
        await agent.close()
    return reports


async def _one(agent: Agent, client: ClusterClient, order: dict[str, Any]) -> dict[str, Any]:
    """Crawl one site of a checked order (a JSON object: compiled expressions do not travel)."""
    try:
        return await agent.crawl(client, Order.from_json(order))
    except DlwebError as exc:
        log.error("%s: site not crawled: %s", order["start_url"], exc)
        return {"start_url": order["start_url"], "failed": str(exc)}


def _clone(
    config: ClusterConfig,
    work: Path,
    monitor: tuple[str, int] | None,
    sites: "multiprocessing.Queue[dict[str, Any] | None]",
    results: "multiprocessing.Queue[dict[str, Any]]",
) -> None:
    """A forked agent: takes sites from the shared queue until it is empty."""
    agent = Agent(config, work, monitor=monitor)

    async def loop() -> None:
        await agent.serve_monitor()
        try:
            async with ClusterClient(config, agent.name) as client:
                while (order := sites.get()) is not None:
                    results.put(await _one(agent, client, order))
        finally:
            await agent.close()

    try:
        uvloop.run(loop())
    except KeyboardInterrupt:
        pass
    except Exception:
        log.error("%s stopped: %s", agent.name, traceback.format_exc())
        os._exit(1)


def crawl_sites(
    config: ClusterConfig,
    orders: Sequence[dict[str, Any]],
    work: Path,
    agents: int = 1,
    monitor: tuple[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Crawl every site with `agents` agents; one report per site, in the orders' order, each
    with its language and phrases told here (report_text.py), while the other sites are crawled
    when agents are forked."""
    from .report_text import told  # here, not in the agents: see report_text.py

    work.mkdir(parents=True, exist_ok=True)
    if agents <= 1 or len(orders) <= 1:
        agent = Agent(config, work, monitor=monitor)
        return [told(report) for report in uvloop.run(_crawl_in_turn(agent, orders))]
    return _crawl_forked(config, orders, work, agents, monitor, told)


def _crawl_forked(
    config: ClusterConfig,
    orders: Sequence[dict[str, Any]],
    work: Path,
    agents: int,
    monitor: tuple[str, int] | None,
    tell: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Crawl with forked agents; each report is told (`tell`) as it comes (the language filters
    are built at the first report with text: a quick re-crawl of unchanged sites builds none)."""
    context = multiprocessing.get_context("fork")
    # Queues with a feeder thread: a pipe alone would block this process once full.
    sites: multiprocessing.Queue[dict[str, Any] | None] = context.Queue()
    results: multiprocessing.Queue[dict[str, Any]] = context.Queue()
    for order in orders:
        sites.put(order)
    if not all(order.get("quick") for order in orders):
        importlib.import_module("archive.simhash")
    # Objects the clones inherit stay out of the collector's reach, so its passes do not write
    # to (and so copy) the pages the clones share with this process.
    gc.freeze()
    clones = []
    for number in range(min(agents, len(orders))):
        sites.put(None)
        port = None if monitor is None else (monitor[0], monitor[1] + number if monitor[1] else 0)
        clone = context.Process(target=_clone, args=(config, work, port, sites, results))
        clone.start()
        clones.append(clone)
    reports: dict[str, dict[str, Any]] = {}
    while len(reports) < len(orders):
        try:
            report = results.get(timeout=0.5)
        except queue.Empty:
            if any(clone.is_alive() for clone in clones):
                continue
            break
        reports[report["start_url"]] = tell(report)
    for clone in clones:
        clone.join()
    for order in orders:
        reports.setdefault(
            order["start_url"], {"start_url": order["start_url"], "failed": "its agent stopped"}
        )
    return [reports[order["start_url"]] for order in orders]
