"""`dlweb demo`: a local cluster with a proxy, a small site crawled twice and an imported WARC,
then instructions for browsing them, until Ctrl-C stops everything it started."""

import argparse
import asyncio
import contextlib
import io
import json
import math
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

from archive.cluster import ClusterClient
from archive.config import ClusterConfig, load_config
from archive.errors import DlwebError, NotFound
from archive.timestamps import format_digits, format_http_date, format_iso, parse_time
from exchange.batches import BatchReader
from exchange.importer import Importer

from .demo_warc import FIRST, SECOND, SITE, WARC_PATH
from .demo_web import HOST_NAME, DemoWeb
from .launcher import CONFIG_FILE, DEFAULT_HOST, STOP_TIMEOUT, Launch, Plan, down, up
from .processes import LOG_DIR, locked, running_pid, stop

# Between the two crawls, so that the closest capture to a date of one crawl is never the
# other's: a date is at most one crawl and a second away from its own captures.
CRAWL_GAP = 3.0
WAKE = 0.2


class DemoError(DlwebError):
    """A step of the demo failed; what it started is stopped."""


def _say(line: str = "") -> None:
    print(line, flush=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops the demo as Ctrl-C does."""
    raise KeyboardInterrupt


def _check_proxy_port(data: Path, port: int) -> None:
    """Refuse a proxy port another program holds (a proxy of this cluster may hold it)."""
    if running_pid(data, "proxy") is not None:
        return
    with socket.socket() as probe:
        try:
            probe.bind((DEFAULT_HOST, port))
        except OSError as exc:
            raise DemoError(
                f"--proxy-port {port}: {DEFAULT_HOST}:{port} is not free ({exc.strerror});"
                " choose another port with --proxy-port"
            ) from None


def _crawl(config_path: Path, work: Path, url: str, number: int) -> dict[str, Any]:
    """Crawl the demo site as `dlweb crawl` does; its report."""
    from crawler.cli import add_arguments

    parser = argparse.ArgumentParser(prog="dlweb crawl")
    add_arguments(parser)
    report_path = work / f"demo-crawl-{number}.json"
    report_path.unlink(missing_ok=True)
    args = parser.parse_args(
        [
            url,
            "--resolve",
            f"{HOST_NAME}:127.0.0.1",
            "--delay",
            "0",
            "--timeout",
            "10",
            "--work",
            str(work),
            "--report",
            str(report_path),
            "-c",
            str(config_path),
        ]
    )
    with contextlib.redirect_stdout(io.StringIO()) as summary:
        status = args.run(args)
    reports = json.loads(report_path.read_text())["sites"] if report_path.exists() else []
    report: dict[str, Any] = reports[0] if reports else {"failed": summary.getvalue().strip()}
    if status != 0 or "failed" in report or not report.get("pages"):
        why = report.get("failed") or "no page was fetched"
        raise DemoError(f"crawl {number} of {url} failed: {why}")
    return report


async def _capture_time(config: ClusterConfig, url: str, since: float) -> int:
    """The time of the first capture of url after `since` (seconds). Asked as an `after`
    lookup, which goes past a replica that has not yet been refreshed with it."""
    async with ClusterClient(config) as client:
        try:
            found = await client.closest(url, int(since * 1e6), mode="after")
        except NotFound:
            raise DemoError(f"the crawl stored no capture of {url}") from None
    return found.capture.time


async def _import_warc(config: ClusterConfig) -> str:
    """Import the bundled WARC as `dlweb import` does; a one-line summary."""
    problems: list[str] = []
    async with ClusterClient(config) as client, BatchReader([WARC_PATH]) as reading:
        summary = await Importer(client, report=problems.append).run(reading)
    if summary.problems:
        raise DemoError(f"{WARC_PATH}: {'; '.join(problems) or summary.problems[0].reason}")
    return f"{summary.captures} captures, {summary.added} new"


def _stop_cluster(data: Path, launch: Launch) -> None:
    """Stop the cluster processes the demo started; a cluster that was running stays so."""
    if not launch.already:
        down(data)
        return
    with locked(data):
        pids = {name: pid for name in launch.started if (pid := running_pid(data, name))}
        stop(data, pids, STOP_TIMEOUT)
    _say(f"left running, as they were before: {', '.join(launch.already)}")


def _second(seconds: float, up: bool = False) -> int:
    """A time in seconds rounded to a whole second, down or up, in microseconds."""
    return (math.ceil(seconds) if up else math.floor(seconds)) * 1_000_000


def _visit(url: str, label: str, at: int) -> str:
    """The date to pick for a version, and the link that picks it and opens the page (the date
    harbor asks once to confirm a link it did not make itself)."""
    link = f"http://date.dlweb/set?at={format_digits(at)}&back={quote(url, safe=':/')}"
    return f"     {label}: pick {format_iso(at)}, or open {link}"


def _curl(proxy: str, url: str, at: int) -> str:
    return f"   curl -x {proxy} -H 'Accept-Datetime: {format_http_date(at)}' {url}"


def _instructions(data: Path, proxy: str, site: str, v1: int, v2: int) -> list[str]:
    old, new = parse_time(FIRST), parse_time(SECOND)
    address = proxy.removeprefix("http://")
    return [
        "",
        "dlweb demo is ready.",
        f"1. Set {address} as your browser's HTTP and HTTPS proxy ({proxy}).",
        "2. For HTTPS sites, install the archive's CA certificate from http://cert.dlweb/",
        "   (the demo's two sites are plain HTTP and need none).",
        "3. Pick a date at http://date.dlweb/ (day and time, UTC), then visit (a link below asks"
        " you to confirm its date once):",
        f"   {site}  (crawled twice a few seconds ago; it changed in between)",
        _visit(site, "version 1, the first crawl", v1),
        _visit(site, "version 2, the second crawl (or any later date)", v2),
        f"   {SITE}  (imported from {WARC_PATH.name}, captured in 2019 and 2021)",
        _visit(SITE, "the 2019 copy", old),
        _visit(SITE, "the 2021 copy (or any later date)", new),
        f"   http://captures.dlweb/?url={site} lists every capture of a page;",
        "   http://search.dlweb/ finds pages by their words, each opened at its date.",
        "4. Or from a terminal, one date per request:",
        _curl(proxy, site, v1),
        _curl(proxy, site, v2),
        _curl(proxy, SITE, old),
        _curl(proxy, SITE, new),
        f"The archive stays in {data}; logs in {data / LOG_DIR}.",
        "Press Ctrl-C to stop the demo (web server, proxy and cluster).",
    ]


@dataclass
class _Started:
    """What the demo started so far, to be stopped."""

    launch: Launch | None = None
    web: DemoWeb | None = None


def _start(data: Path, proxy_port: int, nodes: int | None, started: _Started) -> None:
    """Every step of the demo, one line each, then the instructions."""
    _say(f"dlweb demo: starting in {data} (Ctrl-C stops it)")
    # Interrupted, `up` stops what it started before it raises.
    launch = started.launch = up(Plan(data, nodes=nodes, proxy_port=proxy_port, search=True))
    count = sum(1 for name in launch.started + launch.already if name.startswith("node"))
    _say(f"cluster ready: master {launch.master}, {count} storage nodes, proxy {launch.proxy}")
    config_path = data / CONFIG_FILE
    config = load_config(config_path)
    web = started.web = DemoWeb()
    _say(f"demo site version 1 served at {web.url} (127.0.0.1:{web.port})")
    reports = []
    for version in (1, 2):
        if version == 2:
            time.sleep(CRAWL_GAP)
            web.version = 2
            _say("demo site switched to version 2: new home page text, news and logo")
        report = _crawl(config_path, data / "crawler", web.url, version)
        captured = asyncio.run(_capture_time(config, web.url, report["started"]))
        reports.append(report)
        _say(
            f"crawl {version}: {report['pages']} pages and {report['components']} components;"
            f" {web.url} captured at {format_iso(captured)}"
        )
    _say(f"imported {WARC_PATH.name}: {asyncio.run(_import_warc(config))}")
    v1 = _second(reports[0]["started"])
    v2 = _second(reports[1]["finished"], up=True)
    for line in _instructions(data, launch.proxy, web.url, v1, v2):
        _say(line)


def _stop(data: Path, started: _Started) -> None:
    if started.web is None and started.launch is None:
        return
    cluster = started.launch is not None and started.launch.started
    _say("stopping the demo site" + (", the proxy and the cluster" if cluster else ""))
    if started.web is not None:
        started.web.close()
    if started.launch is not None:
        _stop_cluster(data, started.launch)
    _say("stopped")


def run_demo(data: Path, proxy_port: int, nodes: int | None) -> int:
    """Start the demo, print how to browse it, and stop everything on Ctrl-C or SIGTERM."""
    _check_proxy_port(data, proxy_port)
    started = _Started()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Ctrl-C raises KeyboardInterrupt even where the demo was started with SIGINT ignored (a
    # background job of a script), and SIGTERM does the same.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    ready = False
    try:
        _start(data, proxy_port, nodes, started)
        ready = True
        while True:  # short naps: a signal the kernel gives another thread waits for the next
            time.sleep(WAKE)
    except KeyboardInterrupt:
        _say()
    finally:
        for sig in handlers:  # a second Ctrl-C does not cut the stopping short
            signal.signal(sig, signal.SIG_IGN)
        try:
            _stop(data, started)
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
    if not ready:
        print("dlweb demo: interrupted before it was ready", file=sys.stderr)
        return 130
    return 0
