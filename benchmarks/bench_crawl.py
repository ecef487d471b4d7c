"""Site crawling: `dlweb crawl` (site-crawler agents storing into a cluster) beside Scrapy.

A farm of N local sites of M pages each (benchmarks/crawl_farm.py: one process, each site on a
loopback address of its own, an allow-all robots.txt, pages 3 links deep at most, one link per
page to another site) is crawled in the same run, with no politeness delay and never two requests
at once to one site, by:

1. Scrapy (latest, in its own virtual environment, see benchmarks/scrapy_peer.py), 100 requests
   at once over the sites, writing each page to a file;
2. dlweb: `dlweb crawl` of the N sites with site-crawler agents (--agents, 8 by default), storing
   into a local cluster started with `dlweb up` (1 storage node, replica 1).

Each time runs from the command's start to its exit. The farm counts what each crawler fetched:
every page of every site and nothing outside a site, or the run fails. Memory is sampled every
0.1 s: Scrapy's process, and dlweb's command process and each of its agents (PSS, which divides
the pages forked agents share among them, taken while every agent runs, since the last agents
alive share their pages among fewer processes; RSS; and the agent's private pages).

With --browser, the crawler's browser mode is measured instead: what loading pages in headless
Chromium costs, and whether it finds what only scripts make. The farm also serves a script-built
site (--scripted-pages, 60; benchmarks/scripted_farm.py): each page is an HTML shell with no text
or link of its own whose script GETs a JSON document (with a cache-busting query) naming the page's
text, an image and 2-3 links to other pages, draws them, then POSTs to an API; its links exist only
once the scripts have run. Into one cluster (`dlweb up`, 1 node, replica 1), with no delay and one
agent, so one browser (the agent crawls in the command's process, its Chromium below it), in turn:

1. `dlweb crawl --browser always` of the script-built site, which must meet every page and make
   every request of each (the farm counts the shells, documents, images and POSTs it served);
2. `dlweb crawl --browser never` of the same site, which must find the start page alone;
3. `--browser always`, then `never`, of static sites of the farm (--static-sites, 100, of
   --static-pages, 3: few, so that the run takes about 10 minutes), every page of every site.

Pages per minute per browser (per agent when parsing only), from the command's start to its exit,
Chromium's start included, are set against what Browsertrix Crawler's users report, about 1.3-3
pages per minute per browser window on script-heavy sites (against both ends), and on the static
sites against parse-only mode: the price of the browser. Memory is sampled every 0.1 s: the agent's
PSS plus its browser's memory measured as the agent measures it for its status and its cap
(crawler/browser/_chromium.py: anonymous and shared-memory PSS of each browser process, the pages
of the program file left out), summed in each sample. The goals: at least 20 script-built pages per
minute per browser on loopback, agent and browser under 400 MB.

With --focused, the harvest rate of focused crawling is measured instead: the farm serves sites
about topics (--sites of --pages; benchmarks/focused_farm.py), a third of each site's pages about
the campaign's topic (renewable energy) and the rest about four others, nothing but their words
and their anchors telling them apart (relevant pages at every level, linked from both kinds). Into
one cluster (`dlweb up`, 1 node, replica 1), with no delay and --agents agents, `dlweb crawl` runs
breadth-first, then with `--focus` of a focus file the benchmark writes (the topic's keywords, two
example texts, the weights of FOCUS_TUNING). The farm records the order in which each site's
pages were first requested (`GET /__order`); each crawl's harvest curve is the share of the
relevant pages met against the pages fetched a site, summed over the sites. The goal: 90% of the
relevant pages after at most half the fetches breadth-first needs. It also prints the relevance
the focus gives each kind of page and the scores of the links between kinds, the crawler's own
scoring (crawler/relevance.py) applied to the farm's pages.

Usage: python benchmarks/bench_crawl.py [--sites N] [--pages M] [--agents N] [--skip-scrapy]
       [--skip-dlweb] [--dir DIR] [--keep] [--json FILE]
       python benchmarks/bench_crawl.py --browser [--scripted-pages N] [--static-sites N]
       [--static-pages M] [--dir DIR] [--keep] [--json FILE]
       python benchmarks/bench_crawl.py --focused [--sites N] [--pages M] [--agents N]
       [--dir DIR] [--keep] [--json FILE]
"""

import argparse
import json
import math
import os
import select
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import (  # noqa: E402
    MB,
    BenchError,
    children_cpu,
    cluster_down,
    cluster_pids,
    cluster_up,
    cpu_seconds,
    dlweb,
    run_benchmark,
    stop,
    work_directory,
)
from crawl_farm import MAX_PAGES, address, host, make_focused_sites  # noqa: E402
from focused_farm import EXAMPLES, KEYWORDS  # noqa: E402
from scrapy_peer import scrapy_command, scrapy_version  # noqa: E402
from scripted_farm import ADDRESS as SCRIPTED_ADDRESS  # noqa: E402
from scripted_farm import HOST as SCRIPTED_HOST  # noqa: E402
from scripted_farm import MAX_PAGES as MAX_SCRIPTED_PAGES  # noqa: E402

from archive.crawl_calls import Focus  # noqa: E402
from crawler.browser._chromium import _resident as browser_resident  # noqa: E402
from crawler.links import LinkKind  # noqa: E402
from crawler.parsers import parse  # noqa: E402
from crawler.relevance import Relevance  # noqa: E402
from deploy.launcher import CONFIG_FILE  # noqa: E402
from deploy.processes import RUN_DIR  # noqa: E402

FARM = Path(__file__).resolve().parent / "crawl_farm.py"
FARM_SEED = 1
SAMPLE_INTERVAL = 0.1
READY_TIMEOUT = 60.0
KB = 1024
TARGET_SPEED = 2.0  # dlweb pages/s over Scrapy's
TARGET_AGENT_MB = 20.0  # peak PSS of one site agent
TARGET_QUICK_SPEEDUP = 3.0  # a full re-crawl's seconds over a quick one's, unchanged sites
TARGET_QUICK_BYTES = 5.0  # and its bytes
# Browser mode. What Browsertrix Crawler's users report on script-heavy sites, in pages per
# minute per browser window: the slow and the fast end.
BROWSERTRIX_PPM = (1.3, 3.0)
TARGET_SCRIPTED_PPM = 20.0  # script-built pages per minute per browser, on loopback
TARGET_BROWSER_AGENT_MB = 400.0  # peak of the agent's PSS plus its browser's memory
# Focused mode: the share of the relevant pages to reach, and the most fetches the focused crawl
# may take to reach it, over what breadth-first takes.
HARVEST_SHARE = 0.9
TARGET_HARVEST_RATIO = 0.5


@dataclass
class Farm:
    sites: int
    pages: int
    port: int
    control: int
    pid: int
    scripted: int = 0  # pages of the script-built site (none when 0)

    def urls(self) -> list[str]:
        return [f"http://{host(n)}:{self.port}/" for n in range(1, self.sites + 1)]

    def scripted_url(self) -> str:
        return f"http://{SCRIPTED_HOST}:{self.port}/"

    def hosts(self) -> dict[str, str]:
        hosts = {host(n): address(n) for n in range(1, self.sites + 1)}
        if self.scripted:
            hosts[SCRIPTED_HOST] = SCRIPTED_ADDRESS
        return hosts

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.control}{path}", method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            result: dict[str, Any] = json.load(answer)
            return result

    def counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = self._call("GET", "/__count")["sites"]
        return counts

    def scripted_counts(self) -> dict[str, int]:
        """What the script-built site served (see scripted_farm.Counts)."""
        counts: dict[str, int] = self._call("GET", "/__count")["scripted"]
        return counts

    def orders(self) -> dict[str, dict[str, list[str]]]:
        """Per site: its pages in the order first requested ("order"), and those about the
        focused campaign's topic ("relevant")."""
        orders: dict[str, dict[str, list[str]]] = self._call("GET", "/__order")["sites"]
        return orders

    def reset(self) -> None:
        self._call("POST", "/__reset")


@contextmanager
def running_farm(
    work: Path, sites: int, pages: int, scripted: int = 0, focused: bool = False
) -> Iterator[Farm]:
    port_file = work / "farm.json"
    log_path = work / "farm.log"
    command = [sys.executable, str(FARM), "--sites", str(sites), "--pages", str(pages)]
    command += ["--scripted-pages", str(scripted), "--seed", str(FARM_SEED)]
    command += ["--focused"] if focused else []
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*command, "--port-file", str(port_file)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the farm did not start:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.05)
        ports = json.loads(port_file.read_text())
        yield Farm(sites, pages, ports["port"], ports["control"], process.pid, scripted)
    finally:
        stop(process)


def children(pid: int) -> list[int]:
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def memory_kb(pid: int) -> tuple[int, int, int] | None:
    """RSS, PSS and USS (private pages) of a process in KiB (smaps_rollup), None once it has
    exited."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    fields = {}
    for line in text.splitlines()[1:]:
        name, _, value = line.partition(":")
        fields[name] = int(value.split()[0])
    if "Rss" not in fields:
        return None  # a zombie
    return fields["Rss"], fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"]


@dataclass
class Peak:
    rss_mb: float = 0.0
    pss_mb: float = 0.0
    uss_mb: float = 0.0


@dataclass
class Memory:
    """Peaks of a process tree: its root, each process below it, and the sum of all PSS.

    The pages forked agents share are divided among the processes alive, so an agent's PSS
    grows as the others end: the children's PSS peaks are taken while `full` of them run.
    """

    root: int
    full: int = 1
    root_peak: Peak = field(default_factory=Peak)
    below: dict[int, Peak] = field(default_factory=dict)
    total_pss_mb: float = 0.0

    def sample(self) -> None:
        pids = [self.root]
        for pid in pids:
            pids += children(pid)
        total = 0.0
        usages = {pid: usage for pid in pids if (usage := memory_kb(pid)) is not None}
        all_running = len(usages) - (self.root in usages) >= self.full
        for pid, usage in usages.items():
            rss, pss, uss = (kb * KB / MB for kb in usage)
            peak = self.root_peak if pid == self.root else self.below.setdefault(pid, Peak())
            peak.rss_mb = max(peak.rss_mb, rss)
            peak.uss_mb = max(peak.uss_mb, uss)
            if pid == self.root or all_running:
                peak.pss_mb = max(peak.pss_mb, pss)
            total += pss
        self.total_pss_mb = max(self.total_pss_mb, total)

    def summary(self) -> dict[str, Any]:
        below = list(self.below.values())
        return {
            "command": asdict(self.root_peak),
            "children": len(below),
            "child_max": {
                "rss_mb": max((peak.rss_mb for peak in below), default=0.0),
                "pss_mb": max((peak.pss_mb for peak in below), default=0.0),
                "uss_mb": max((peak.uss_mb for peak in below), default=0.0),
            },
            "total_pss_mb": self.total_pss_mb,
        }


def descendants(pid: int) -> list[int]:
    """The processes below `pid`, at every depth."""
    found = children(pid)
    for child in found:
        found += children(child)
    return found


@dataclass
class AgentMemory:
    """Peaks of one agent with its browser: `dlweb crawl` with one agent crawls in its own
    process (`root`), and every process below it is its browser's (Chromium and the processes
    it starts). The agent's PSS, plus the browser's memory measured as the agent measures it
    for its monitoring status and its cap (crawler/browser/_chromium.py: anonymous and
    shared-memory PSS of each of its processes, pages of the program file left out), both
    taken in the same sample."""

    root: int
    agent_pss_mb: float = 0.0
    browser_mb: float = 0.0
    total_mb: float = 0.0
    browser_processes: int = 0

    def sample(self) -> None:
        usage = memory_kb(self.root)
        if usage is None:
            return
        browser = descendants(self.root)
        agent = usage[1] * KB / MB
        used = sum(browser_resident(pid) for pid in browser) / MB
        self.agent_pss_mb = max(self.agent_pss_mb, agent)
        self.browser_mb = max(self.browser_mb, used)
        self.total_mb = max(self.total_mb, agent + used)
        self.browser_processes = max(self.browser_processes, len(browser))

    def summary(self) -> dict[str, Any]:
        return {
            "agent_pss_mb": self.agent_pss_mb,
            "browser_mb": self.browser_mb,
            "total_mb": self.total_mb,
            "browser_processes": self.browser_processes,
        }


def measured(
    command: list[str], log_path: Path, what: str, processes: int = 1, browser: bool = False
) -> dict[str, Any]:
    """Run `command` to its exit, sampling the memory of its process tree (of one agent and its
    browser with `browser`): seconds, the CPU it and the children it waited for used, memory
    peaks."""
    before = children_cpu()
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    memory: Memory | AgentMemory = (
        AgentMemory(process.pid) if browser else Memory(process.pid, full=processes)
    )
    # The exit is waited for on a pidfd, which wakes at the exit rather than at the next
    # sample: a run is timed to the exit, not to within SAMPLE_INTERVAL after it.
    exited = os.pidfd_open(process.pid)
    try:
        memory.sample()
        while not select.select([exited], [], [], SAMPLE_INTERVAL)[0]:
            memory.sample()
        process.wait()
    finally:
        os.close(exited)
        if process.poll() is None:
            for pid in children(process.pid):
                os.kill(pid, signal.SIGTERM)
            stop(process)
    seconds = time.monotonic() - started
    cpu = children_cpu() - before
    if process.returncode != 0:
        output = log_path.read_text(errors="replace").strip()
        raise BenchError(f"{what} exited with {process.returncode}:\n{output[-4000:]}")
    return {"seconds": seconds, "cpu_s": cpu, "memory": memory.summary()}


def check_farm(farm: Farm, who: str) -> dict[str, int]:
    """What the farm served to `who`; raises unless it fetched every page and none elsewhere."""
    counts = farm.counts()
    short = {name: c["pages"] for name, c in counts.items() if c["pages"] < farm.pages}
    outside = {name: c["outside"] for name, c in counts.items() if c["outside"]}
    if short:
        listed = ", ".join(f"{name}: {pages}" for name, pages in list(short.items())[:5])
        raise BenchError(
            f"{who} fetched fewer than {farm.pages} pages on {len(short)} sites ({listed} ...)"
        )
    if outside:
        raise BenchError(f"{who} followed links to other sites: {outside}")
    return {
        "pages": sum(c["pages"] for c in counts.values()),
        "requests": sum(c["requests"] for c in counts.values()),
        "robots": sum(c["robots"] for c in counts.values()),
        "favicon": sum(c["favicon"] for c in counts.values()),
        "unknown": sum(c["unknown"] for c in counts.values()),
    }


def crawl_figures(run: dict[str, Any], served: dict[str, int], farm_cpu: float) -> dict[str, Any]:
    return {
        **run,
        **served,
        "pages_per_s": served["pages"] / run["seconds"],
        "farm_cpu_s": farm_cpu,
    }


def bench_scrapy(work: Path, farm: Farm) -> dict[str, Any]:
    workdir = work / "scrapy"
    out = workdir / "pages"
    out.mkdir(parents=True)
    command = scrapy_command(workdir, farm.urls(), farm.hosts(), out)
    farm_cpu = cpu_seconds([farm.pid])
    run = measured(command, workdir / "scrapy.log", "scrapy runspider")
    farm_cpu = cpu_seconds([farm.pid]) - farm_cpu
    served = check_farm(farm, "Scrapy")
    files = sum(1 for path in out.rglob("*") if path.is_file())
    if files != farm.sites * farm.pages:
        raise BenchError(f"Scrapy wrote {files:,} pages, not {farm.sites * farm.pages:,}")
    print(f"  {run['seconds']:.2f} s, {served['requests']:,} requests, {files:,} files written")
    return {"version": scrapy_version(), **crawl_figures(run, served, farm_cpu)}


def check_report(path: Path, farm: Farm) -> dict[str, int]:
    """Totals of the crawl's report; raises unless it has every site, all pages, no errors."""
    try:
        sites = json.loads(path.read_text())["sites"]
    except (OSError, ValueError, KeyError) as exc:
        raise BenchError(f"no usable crawl report in {path}: {exc}") from exc
    expected = set(farm.urls())
    if {site["start_url"] for site in sites} != expected:
        raise BenchError(f"the crawl report has {len(sites)} sites, not the {len(expected)} asked")
    totals = {"pages": 0, "components": 0, "bytes": 0}
    for site in sites:
        if "failed" in site:
            raise BenchError(f"the crawl of {site['start_url']} failed: {site['failed']}")
        errors = sum(site["errors"].values())
        if site["pages"] != farm.pages or errors:
            raise BenchError(
                f"the crawl report says {site['start_url']}: {site['pages']} pages,"
                f" {errors} errors (expected {farm.pages} pages, no errors)"
            )
        for key in totals:
            totals[key] += site[key]
    return totals


def crawl_command(
    farm: Farm, config: Path, agents: int, report: Path, crawler_work: Path, *extra: str
) -> list[str]:
    """`dlweb crawl` of every site of the farm, with no delay, into the cluster of `config`."""
    command = dlweb("crawl", *farm.urls(), "-c", str(config), "--delay", "0", *extra)
    for name, ip in farm.hosts().items():
        command += ["--resolve", f"{name}:{ip}"]
    return command + ["--agents", str(agents), "--report", str(report), "--work", str(crawler_work)]


def bench_recrawls(
    work: Path, farm: Farm, config: Path, agents: int, rounds: int, cluster: list[int]
) -> dict[str, Any]:
    """Re-crawls of the unchanged farm after a first crawl, alternated: a full one (every page
    downloaded and parsed again) and a quick one (the first crawl's URLs asked conditionally,
    only what changed parsed): seconds and bytes of each, medians."""
    crawler_work = work / "recrawler"
    first = work / "first-report.json"
    measured(crawl_command(farm, config, agents, first, crawler_work), work / "first.log", "first")
    figures: dict[str, list[tuple[float, int]]] = {"full": [], "quick": []}
    for number in range(rounds):
        for kind, extra in (("full", ()), ("quick", ("--previous", str(crawler_work), "--quick"))):
            farm.reset()
            report = work / f"{kind}-{number}-report.json"
            folder = crawler_work if kind == "quick" else work / "full-work"
            command = crawl_command(farm, config, agents, report, folder, *extra)
            before = cpu_seconds([farm.pid]), cpu_seconds(cluster)
            run = measured(command, work / f"{kind}-{number}.log", f"dlweb crawl ({kind})")
            farm_cpu, cluster_cpu = (
                cpu_seconds([farm.pid]) - before[0],
                cpu_seconds(cluster) - before[1],
            )
            check_farm(farm, f"the {kind} re-crawl")
            stored = check_report(report, farm)
            figures[kind].append((run["seconds"], stored["bytes"]))
            print(
                f"  round {number + 1}, {kind:<5} {run['seconds']:7.2f} s {stored['bytes']:>12,} bytes;"
                f" CPU s: crawler {run['cpu_s']:.1f}, farm {farm_cpu:.1f}, cluster {cluster_cpu:.1f}"
            )
    medians = {
        kind: {
            "seconds": statistics.median(seconds for seconds, _ in runs),
            "bytes": statistics.median(size for _, size in runs),
        }
        for kind, runs in figures.items()
    }
    return {
        **medians,
        "speedup": medians["full"]["seconds"] / medians["quick"]["seconds"],
        "bytes_ratio": medians["full"]["bytes"] / max(medians["quick"]["bytes"], 1),
    }


def bench_dlweb(work: Path, farm: Farm, agents: int, recrawl_rounds: int = 0) -> dict[str, Any]:
    data = work / "cluster"
    config = data / CONFIG_FILE
    report = work / "crawl-report.json"
    try:
        cluster_up(data, 1, 1)
        command = crawl_command(farm, config, agents, report, work / "crawler")
        cluster = list(cluster_pids(data / RUN_DIR).values())
        cpu = cpu_seconds([farm.pid]), cpu_seconds(cluster)
        run = measured(command, work / "crawl.log", "dlweb crawl", processes=agents)
        farm_cpu, cluster_cpu = cpu_seconds([farm.pid]) - cpu[0], cpu_seconds(cluster) - cpu[1]
        served = check_farm(farm, "dlweb crawl")
        stored = check_report(report, farm)
        print(
            f"  {run['seconds']:.2f} s, {served['requests']:,} requests; report:"
            f" {stored['pages']:,} pages, {stored['components']:,} components,"
            f" {stored['bytes'] / MB:.1f} MB"
        )
        figures = crawl_figures(run, served, farm_cpu)
        result = {**figures, "agents": agents, "report": stored, "cluster_cpu_s": cluster_cpu}
        if recrawl_rounds:
            print(f"re-crawls of the unchanged farm, full and quick, {recrawl_rounds} rounds ...")
            farm.reset()
            result["recrawl"] = bench_recrawls(work, farm, config, agents, recrawl_rounds, cluster)
        return result
    finally:
        cluster_down(data)


# Browser mode: the crawls of one run, in order: (key, label, site, --browser).
BROWSER_CASES = (
    ("scripted_browser", "script-built, browser", "scripted", "always"),
    ("scripted_parse", "script-built, parse only", "scripted", "never"),
    ("static_browser", "static, browser", "static", "always"),
    ("static_parse", "static, parse only", "static", "never"),
)


def one_agent_crawl(
    work: Path, farm: Farm, config: Path, urls: list[str], mode: str, name: str
) -> tuple[dict[str, Any], Path]:
    """`dlweb crawl --browser MODE` of `urls` with one agent: its figures (time, CPU, memory
    of the agent and its browser, the report's totals, pages per minute) and its report."""
    report = work / f"{name}-report.json"
    command = dlweb("crawl", *urls, "-c", str(config), "--delay", "0", "--browser", mode)
    for site, ip in farm.hosts().items():
        command += ["--resolve", f"{site}:{ip}"]
    command += ["--agents", "1", "--report", str(report), "--work", str(work / name)]
    farm_cpu = cpu_seconds([farm.pid])
    run = measured(command, work / f"{name}.log", f"dlweb crawl --browser {mode}", browser=True)
    run["farm_cpu_s"] = cpu_seconds([farm.pid]) - farm_cpu
    try:
        sites = json.loads(report.read_text())["sites"]
    except (OSError, ValueError, KeyError) as exc:
        raise BenchError(f"no usable crawl report in {report}: {exc}") from exc
    if failed := [site for site in sites if "failed" in site]:
        raise BenchError(f"the crawl of {failed[0]['start_url']} failed: {failed[0]['failed']}")
    errors: dict[str, int] = {}
    for site in sites:
        for kind, n in site["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
    totals = {key: sum(site.get(key, 0) for site in sites) for key in ("pages", "browser_pages")}
    run.update(totals, errors=errors, pages_per_min=totals["pages"] * 60 / run["seconds"])
    return run, report


def check_scripted(farm: Farm, run: dict[str, Any], mode: str) -> dict[str, int]:
    """What the script-built site served; raises unless a crawl in the browser met every page
    and made every request of each (its data, image and POST), and one that parses only found
    the start page alone and never ran a script."""
    served = farm.scripted_counts()
    pages = farm.scripted
    if mode == "always":
        expected = {"pages": pages, "data": pages, "images": pages, "seen": pages}
        expected |= {"report pages": pages, "browser pages": pages}
    else:
        expected = {"pages": 1, "data": 0, "images": 0, "posts": 0}
        expected |= {"report pages": 1, "browser pages": 0}
    found = served | {"report pages": run["pages"], "browser pages": run["browser_pages"]}
    wrong = {key: found[key] for key, value in expected.items() if found[key] != value}
    if wrong or served["unknown"] or run["errors"]:
        raise BenchError(
            f"--browser {mode} on the script-built site: {wrong or ''} (expected"
            f" {expected}), unknown requests {served['unknown']}, errors {run['errors']}"
        )
    return served


def bench_browser_case(
    work: Path, farm: Farm, config: Path, key: str, site: str, mode: str
) -> dict[str, Any]:
    urls = [farm.scripted_url()] if site == "scripted" else farm.urls()
    run, report = one_agent_crawl(work, farm, config, urls, mode, key)
    if site == "scripted":
        run["served"] = check_scripted(farm, run, mode)
        run["site_pages"] = farm.scripted
    else:
        run["served"] = check_farm(farm, f"dlweb crawl --browser {mode}")
        check_report(report, farm)
        browsed = farm.sites * farm.pages if mode == "always" else 0
        if run["browser_pages"] != browsed:
            raise BenchError(
                f"--browser {mode}: {run['browser_pages']} pages through the browser, not {browsed}"
            )
        run["site_pages"] = farm.sites * farm.pages
    if mode == "always" and not run["memory"]["browser_processes"]:
        raise BenchError(f"--browser {mode}: no browser process was seen below the agent")
    memory = run["memory"]
    print(
        f"  {run['seconds']:.1f} s, {run['pages']:,} pages ({run['browser_pages']:,} in the"
        f" browser), {run['pages_per_min']:,.1f} pages/min; peak agent + browser"
        f" {memory['total_mb']:.1f} MB"
    )
    return run


def run_browser(args: argparse.Namespace) -> dict[str, Any]:
    """Browser mode: one agent crawls the script-built site and the static sites, in the
    browser and parsing only, into one cluster."""
    figures: dict[str, Any] = {
        "scripted_pages": args.scripted_pages,
        "static_sites": args.static_sites,
        "static_pages": args.static_pages,
        "browsertrix_ppm": list(BROWSERTRIX_PPM),
        "runs": {},
        "failed": {},
    }
    farm_size = (args.static_sites, args.static_pages, args.scripted_pages)
    with work_directory("crawl", args) as work, running_farm(work, *farm_size) as farm:
        print(
            f"farm: a script-built site of {args.scripted_pages} pages and"
            f" {args.static_sites} static sites of {args.static_pages} pages,"
            f" port {farm.port}"
        )
        data = work / "cluster"
        try:
            cluster_up(data, 1, 1)
            for key, label, site, mode in BROWSER_CASES:
                print(f"dlweb crawl --browser {mode}, 1 agent: {label} ...")
                try:
                    figures["runs"][key] = bench_browser_case(
                        work, farm, data / CONFIG_FILE, key, site, mode
                    )
                except BenchError as exc:
                    figures["failed"][key] = str(exc)
                    print(f"  FAILED: {exc}")
                farm.reset()
        finally:
            cluster_down(data)
    runs = figures["runs"]
    ratios: dict[str, float] = {}
    for key in ("scripted_browser", "static_browser"):
        if key in runs:
            ppm = runs[key]["pages_per_min"]
            ratios[f"{key}_vs_browsertrix_low"] = ppm / BROWSERTRIX_PPM[0]
            ratios[f"{key}_vs_browsertrix_high"] = ppm / BROWSERTRIX_PPM[1]
    if "static_browser" in runs and "static_parse" in runs:
        ppm = runs["static_browser"]["pages_per_min"], runs["static_parse"]["pages_per_min"]
        ratios["static_browser_vs_parse"] = ppm[0] / ppm[1]
    figures["ratios"] = ratios
    browsed = [runs[key]["memory"] for key in ("scripted_browser", "static_browser") if key in runs]
    peak = max(browsed, key=lambda memory: memory["total_mb"]) if browsed else None
    figures["memory_peak"] = peak
    targets: dict[str, bool | None] = {"scripted_speed": None, "agent_browser_memory": None}
    if "scripted_browser" in runs:
        targets["scripted_speed"] = runs["scripted_browser"]["pages_per_min"] >= TARGET_SCRIPTED_PPM
    if peak is not None:
        targets["agent_browser_memory"] = 0 < peak["total_mb"] < TARGET_BROWSER_AGENT_MB
    figures["targets"] = targets
    return {"browser": figures}


# Focused mode: the crawls of one run, in order: (key, label).
FOCUSED_CASES = (("breadth_first", "breadth-first"), ("focused", "focused (--focus)"))
CURVE_POINTS = 10  # the harvest curve at each tenth of a site's fetches
# How the focus file weighs a link's evidence: its anchor most, since the farm's anchors name their
# targets; the best window of its page's text a little; the page's whole text not at all, as it
# says no more of one link than of its neighbours (docs/crawler.md, the levels of evidence).
FOCUS_TUNING: dict[str, Any] = {"weights": {"document": 0.0, "paragraph": 1.0, "anchor": 8.0}}


def focus_document() -> dict[str, Any]:
    """What the campaign's focus file says: its topic's keywords, two example texts, and the
    weights of the evidence."""
    return {"keywords": KEYWORDS, "examples": EXAMPLES, **FOCUS_TUNING}


def harvest(order: list[str], relevant: set[str]) -> list[int]:
    """The relevant pages among a site's first k fetched pages, for k = 1, 2, ..."""
    found, curve = 0, []
    for path in order:
        found += path in relevant
        curve.append(found)
    return curve


def fetches_to(curve: list[int], total: int) -> int:
    """The fetches after which HARVEST_SHARE of `total` relevant pages were met."""
    wanted = math.ceil(HARVEST_SHARE * total)
    return next(k for k, found in enumerate(curve, 1) if found >= wanted)


def harvest_figures(orders: dict[str, dict[str, list[str]]], pages: int) -> dict[str, Any]:
    """A crawl's harvest: per site and summed over the sites, the relevant pages met against
    the pages fetched (each site's k-th fetch taken together), and the fetches to reach
    HARVEST_SHARE of them."""
    curves = {name: harvest(site["order"], set(site["relevant"])) for name, site in orders.items()}
    relevant = {name: len(site["relevant"]) for name, site in orders.items()}
    summed = [sum(curve[k] for curve in curves.values()) for k in range(pages)]
    total = sum(relevant.values())
    points = [round(pages * n / CURVE_POINTS) for n in range(1, CURVE_POINTS + 1)]
    return {
        "relevant": total,
        "curve": [{"fetches": k, "share": summed[k - 1] / total} for k in points],
        "fetches_90": fetches_to(summed, total),
        "site_fetches_90": {name: fetches_to(curves[name], relevant[name]) for name in curves},
        "site_curves": curves,
    }


def link_scores(farm: Farm) -> dict[str, dict[str, float]]:
    """What the focus file makes of the farm's pages, as the crawler scores them: each kind of
    page's relevance and the scores of the links between kinds (mean, lowest, highest)."""
    focus = Focus.from_json(focus_document(), "focus")
    relevance = Relevance(focus)
    sites = make_focused_sites(farm.sites, farm.pages, farm.port, FARM_SEED)
    scores: dict[str, list[float]] = {}
    for name, site in sites.items():
        base = f"http://{name}:{farm.port}"
        kind = {path: "relevant" if path in site.relevant else "other" for path in site.pages}
        for path, body in site.pages.items():
            result = parse(base + path, "text/html; charset=utf-8", body)
            if result is None:
                raise BenchError(f"no parser read {base + path}")
            page = relevance.page(base + path, result.text)
            scores.setdefault(f"{kind[path]} page", []).append(page.score)
            links = [link for link in result.links if link.kind is LinkKind.PAGE]
            for position, link in enumerate(links, 1):
                target = link.url.removeprefix(base)
                if target in kind:
                    score = relevance.link(page, link.url, link.text, position)
                    scores.setdefault(f"{kind[path]} -> {kind[target]}", []).append(score)
    return {
        key: {"mean": statistics.mean(values), "min": min(values), "max": max(values)}
        for key, values in sorted(scores.items())
    }


def bench_focused_case(
    work: Path, farm: Farm, config: Path, agents: int, key: str, focus: Path
) -> dict[str, Any]:
    """One crawl of the topical farm, breadth-first or focused: its figures and its harvest."""
    report = work / f"{key}-report.json"
    extra = ("--focus", str(focus)) if key == "focused" else ()
    command = crawl_command(farm, config, agents, report, work / f"{key}-work", *extra)
    run = measured(command, work / f"{key}.log", f"dlweb crawl ({key})", processes=agents)
    served = check_farm(farm, f"dlweb crawl ({key})")
    check_report(report, farm)
    figures = harvest_figures(farm.orders(), farm.pages)
    print(
        f"  {run['seconds']:.2f} s, {served['pages']:,} pages; {HARVEST_SHARE:.0%} of the"
        f" {figures['relevant']:,} relevant pages after {figures['fetches_90']} fetches a site"
    )
    return {"seconds": run["seconds"], "cpu_s": run["cpu_s"], **served, **figures}


def run_focused(args: argparse.Namespace) -> dict[str, Any]:
    """Focused mode: the topical farm crawled breadth-first, then with a focus file."""
    figures: dict[str, Any] = {
        "sites": args.sites,
        "pages": args.pages,
        "agents": args.agents,
        "share": HARVEST_SHARE,
        "focus": focus_document(),
        "runs": {},
    }
    with (
        work_directory("crawl", args) as work,
        running_farm(work, args.sites, args.pages, focused=True) as farm,
    ):
        print(
            f"farm: {args.sites} sites of {args.pages} pages about topics, a third about"
            f" the campaign's, port {farm.port}"
        )
        focus = work / "focus.yaml"
        focus.write_text(yaml.safe_dump(focus_document(), width=100))
        data = work / "cluster"
        try:
            cluster_up(data, 1, 1)
            for key, label in FOCUSED_CASES:
                print(f"dlweb crawl, {label}, {args.agents} agents ...")
                farm.reset()
                figures["runs"][key] = bench_focused_case(
                    work, farm, data / CONFIG_FILE, args.agents, key, focus
                )
        finally:
            cluster_down(data)
        figures["link_scores"] = link_scores(farm)
    runs = figures["runs"]
    figures["ratio"] = runs["focused"]["fetches_90"] / runs["breadth_first"]["fetches_90"]
    figures["targets"] = {"harvest": figures["ratio"] <= TARGET_HARVEST_RATIO}
    return {"focused": figures}


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.browser:
        return run_browser(args)
    if args.focused:
        return run_focused(args)
    report: dict[str, Any] = {"sites": args.sites, "pages": args.pages}
    with work_directory("crawl", args) as work, running_farm(work, args.sites, args.pages) as farm:
        print(f"farm: {args.sites} sites of {args.pages} pages on port {farm.port}")
        if not args.skip_scrapy:
            print("Scrapy: 100 requests at once, one per site, pages written to files ...")
            report["scrapy"] = bench_scrapy(work, farm)
            farm.reset()
        if not args.skip_dlweb:
            print(f"dlweb crawl: {args.agents} agents into a cluster (1 node, replica 1) ...")
            try:
                report["dlweb"] = bench_dlweb(work, farm, args.agents, args.recrawl)
            except BenchError as exc:
                report["dlweb_failed"] = str(exc)
    targets: dict[str, bool | None] = {"speed": None, "agent_memory": None, "quick": None}
    if "recrawl" in report.get("dlweb", {}):
        again = report["dlweb"]["recrawl"]
        targets["quick"] = (
            again["speedup"] >= TARGET_QUICK_SPEEDUP and again["bytes_ratio"] >= TARGET_QUICK_BYTES
        )
    if "dlweb" in report:
        agent_pss = report["dlweb"]["memory"]["child_max"]["pss_mb"]
        targets["agent_memory"] = 0 < agent_pss <= TARGET_AGENT_MB
    if "scrapy" in report and "dlweb" in report:
        ours, peer = report["dlweb"], report["scrapy"]
        report["ratios"] = {
            "pages_per_s": ours["pages_per_s"] / peer["pages_per_s"],
            "pss": ours["memory"]["total_pss_mb"] / peer["memory"]["command"]["pss_mb"],
        }
        targets["speed"] = report["ratios"]["pages_per_s"] >= TARGET_SPEED
    report["targets"] = targets
    return report


def memory_line(label: str, rss: str, pss: float, uss: str = "") -> str:
    return f"    {label:<26}{rss:>9}{pss:>9.1f}{uss:>9}"


def show_browser(figures: dict[str, Any]) -> None:
    low, high = figures["browsertrix_ppm"]
    runs = figures["runs"]
    print()
    print(
        f"Browser mode, one agent (one browser), no delay, on loopback:\n  a script-built site"
        f" of {figures['scripted_pages']} pages, {figures['static_sites']} static sites of"
        f" {figures['static_pages']} pages"
    )
    print(
        f"  {'':<26}{'pages':>7}{'of':>6}{'seconds':>9}{'pages/min':>10}"
        f"{'/' + format(low, 'g'):>7}{'/' + format(high, 'g'):>6}{'CPU s':>7}{'peak MB':>9}"
    )
    for key, label, _, mode in BROWSER_CASES:
        if key not in runs:
            print(f"  {label:<26}FAILED: {figures['failed'].get(key, '?')}")
            continue
        row = runs[key]
        ppm = row["pages_per_min"]
        versus = f"{ppm / low:>7.1f}{ppm / high:>6.1f}" if mode == "always" else f"{'':>13}"
        print(
            f"  {label:<26}{row['pages']:>7,}{row['site_pages']:>6,}{row['seconds']:>9.1f}"
            f"{ppm:>10,.1f}{versus}{row['cpu_s']:>7.1f}{row['memory']['total_mb']:>9.1f}"
        )
    print(
        f"  pages/min: per browser (per agent when parsing only); /{low:g} and /{high:g}: times"
        " what\n  Browsertrix Crawler users report per browser window on script-heavy sites;"
        " peak MB: the\n  agent's PSS plus its browser's memory, summed in each sample"
    )
    ratios = figures["ratios"]
    if "static_browser_vs_parse" in ratios:
        print(
            "  ratio (static sites, browser / parse only, pages/min)"
            f" {ratios['static_browser_vs_parse']:>7.3f}"
        )
    if (peak := figures["memory_peak"]) is not None:
        print(
            f"  peak memory, agent + browser: {peak['total_mb']:.1f} MB (agent PSS peak"
            f" {peak['agent_pss_mb']:.1f} MB,\n  browser peak {peak['browser_mb']:.1f} MB, up to"
            f" {peak['browser_processes']} browser processes)"
        )
    print()
    targets = figures["targets"]
    print(
        f"target: >= {TARGET_SCRIPTED_PPM:g} script-built pages/min per browser:"
        f" {verdict(targets['scripted_speed'])}"
    )
    print(
        f"target: agent + browser < {TARGET_BROWSER_AGENT_MB:g} MB (peak):"
        f" {verdict(targets['agent_browser_memory'])}"
    )


def show_focused(figures: dict[str, Any]) -> None:
    runs = figures["runs"]
    pages = figures["pages"]
    breadth, focused = runs["breadth_first"], runs["focused"]
    print()
    print(
        f"Focused crawl of {figures['sites']} sites x {pages} pages about topics, a third about"
        f" the campaign's\n  ({breadth['relevant']:,} relevant pages), {figures['agents']}"
        " agents, no delay: relevant pages met (share of all) against pages fetched a site"
    )
    print(f"  {'fetched':>12}{'breadth-first':>15}{'focused':>10}")
    for row, other in zip(breadth["curve"], focused["curve"], strict=True):
        share = f"{row['fetches']} ({row['fetches'] / pages:.0%})"
        print(f"  {share:>12}{row['share']:>15.1%}{other['share']:>10.1%}")
    share = f"{HARVEST_SHARE:.0%}"
    print(f"  fetches a site to {share} of the relevant pages, summed over the sites:")
    for label, row in (("breadth-first", breadth), ("focused", focused)):
        per_site = sorted(row["site_fetches_90"].values())
        print(
            f"    {label:<14}{row['fetches_90']:>5} ({row['fetches_90'] / pages:.0%});"
            f" per site {per_site[0]} to {per_site[-1]}, median {statistics.median(per_site):g}"
        )
    print(f"  ratio (focused / breadth-first, fetches to {share})  {figures['ratio']:>7.2f}")
    print("  scores the focus gives (mean, lowest, highest):")
    for key, score in figures["link_scores"].items():
        print(f"    {key:<22}{score['mean']:>7.3f}{score['min']:>7.3f}{score['max']:>7.3f}")
    print()
    print(
        f"target: {share} of the relevant pages after <= {TARGET_HARVEST_RATIO:g}x the fetches"
        f" breadth-first needs: {verdict(figures['targets']['harvest'])}"
    )


def show(report: dict[str, Any]) -> None:
    if "browser" in report:
        show_browser(report["browser"])
        return
    if "focused" in report:
        show_focused(report["focused"])
        return
    total = report["sites"] * report["pages"]
    print()
    print(
        f"Crawl of {report['sites']} sites x {report['pages']} pages ({total:,} pages),"
        " no delay, one request at a time per site"
    )
    rows = []
    if "scrapy" in report:
        rows.append((f"Scrapy {report['scrapy']['version']}", report["scrapy"]))
    if "dlweb" in report:
        rows.append((f"dlweb, {report['dlweb']['agents']} agents", report["dlweb"]))
    if rows:
        print(f"  {'':<22}{'pages':>8}{'seconds':>9}{'pages/s':>9}{'CPU s':>7}{'farm CPU s':>11}")
    for label, row in rows:
        print(
            f"  {label:<22}{row['pages']:>8,}{row['seconds']:>9.2f}{row['pages_per_s']:>9,.0f}"
            f"{row['cpu_s']:>7.1f}{row['farm_cpu_s']:>11.1f}"
        )
    if rows:
        print(f"  {'peak memory (MB = 2^20 bytes)':<28}{'RSS':>9}{'PSS':>9}{'private':>9}")
    if "scrapy" in report:
        process = report["scrapy"]["memory"]["command"]
        print(memory_line("Scrapy process", f"{process['rss_mb']:.1f}", process["pss_mb"]))
    if "dlweb" in report:
        memory = report["dlweb"]["memory"]
        command, agent = memory["command"], memory["child_max"]
        print(memory_line("dlweb command process", f"{command['rss_mb']:.1f}", command["pss_mb"]))
        label = f"dlweb agent (max of {memory['children']})"
        print(
            memory_line(label, f"{agent['rss_mb']:.1f}", agent["pss_mb"], f"{agent['uss_mb']:.1f}")
        )
        print(memory_line("dlweb, all processes", "", memory["total_pss_mb"]))
        print(f"  cluster CPU during the crawl: {report['dlweb']['cluster_cpu_s']:.1f} s")
    if "recrawl" in report.get("dlweb", {}):
        again = report["dlweb"]["recrawl"]
        print(f"  re-crawl of the unchanged farm (medians)  {'seconds':>9}{'bytes':>14}")
        for kind in ("full", "quick"):
            print(f"  {kind:<41}{again[kind]['seconds']:>9.2f}{again[kind]['bytes']:>14,.0f}")
        print(f"  ratio (full / quick, seconds)           {again['speedup']:>7.2f}")
        print(f"  ratio (full / quick, bytes)             {again['bytes_ratio']:>7.1f}")
    if "dlweb_failed" in report:
        print(f"  dlweb: FAILED: {report['dlweb_failed']}")
    if "ratios" in report:
        print(f"  ratio (dlweb / Scrapy, pages/s)         {report['ratios']['pages_per_s']:>7.2f}")
        print(f"  ratio (dlweb / Scrapy, total peak PSS)  {report['ratios']['pss']:>7.2f}")
    print()
    speed, memory_met = report["targets"]["speed"], report["targets"]["agent_memory"]
    print(
        f"target: dlweb pages/s >= {TARGET_SPEED:g}x Scrapy's, storage included: {verdict(speed)}"
    )
    print(f"target: <= {TARGET_AGENT_MB:g} MB (peak PSS) per site agent: {verdict(memory_met)}")
    print(
        f"target: a quick re-crawl >= {TARGET_QUICK_SPEEDUP:g}x faster and >= "
        f"{TARGET_QUICK_BYTES:g}x fewer bytes than a full one: {verdict(report['targets']['quick'])}"
    )


def verdict(met: bool | None) -> str:
    return "n/a" if met is None else "PASS" if met else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=100, help="sites in the farm (2 or more)")
    parser.add_argument("--pages", type=int, default=100, help="pages per site (up to 400)")
    parser.add_argument("--agents", type=int, default=8, help="dlweb's site-crawler agents")
    parser.add_argument("--skip-scrapy", action="store_true", help="run dlweb only")
    parser.add_argument("--skip-dlweb", action="store_true", help="run Scrapy only")
    parser.add_argument(
        "--recrawl",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="after dlweb's crawl, this many rounds of a full and a quick re-crawl of the farm",
    )
    parser.add_argument(
        "--browser",
        action="store_true",
        help="instead, crawl in browser mode and parsing only with one agent: a script-built"
        " site and static sites",
    )
    parser.add_argument(
        "--focused",
        action="store_true",
        help="instead, crawl sites about topics breadth-first and with a focus file: the"
        " harvest rates",
    )
    parser.add_argument(
        "--scripted-pages", type=int, default=60, help="pages of the script-built site (--browser)"
    )
    parser.add_argument(
        "--static-sites", type=int, default=100, help="static sites (--browser; 2 or more)"
    )
    parser.add_argument(
        "--static-pages", type=int, default=3, help="pages per static site (--browser)"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary dir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    if args.browser and args.focused:
        parser.error("--browser and --focused are two different runs")
    if args.skip_scrapy and args.skip_dlweb and not (args.browser or args.focused):
        parser.error("--skip-scrapy and --skip-dlweb leave nothing to run")
    if args.focused and (args.sites < 2 or not CURVE_POINTS <= args.pages <= MAX_PAGES):
        parser.error(f"--sites must be 2 or more, --pages from {CURVE_POINTS} to {MAX_PAGES}")
    if args.static_sites < 2 or not 1 <= args.static_pages <= MAX_PAGES:
        parser.error(f"--static-sites must be 2 or more, --static-pages from 1 to {MAX_PAGES}")
    if not 1 <= args.scripted_pages <= MAX_SCRIPTED_PAGES:
        parser.error(f"--scripted-pages must be from 1 to {MAX_SCRIPTED_PAGES}")
    outcome = run_benchmark(args, run, show, "crawlers, farm and cluster stopped, files removed")
    if isinstance(outcome, int):
        return outcome
    return 1 if "dlweb_failed" in outcome or outcome.get("browser", {}).get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
