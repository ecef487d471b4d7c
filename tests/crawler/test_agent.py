"""A crawler agent as a process: its monitoring page during a crawl, and its HIP service.

The HIP end here is a bare HipMaster standing where the scheduler will: it speaks the agent's
protocol (crawl, status, stop; site_done back) and nothing more.
"""

import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from typing import Any

from aiohttp import web

from archive.hip import HipMaster, Peer
from deploy.testing.ports import free_port
from deploy.testing.waits import wait_until
from tests.crawler.sites import ALPHA, GAMMA


def status_of(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]
    except OSError:
        return None


def test_monitoring_page_shows_the_crawl_as_it_goes(cluster_factory, sites, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    port = free_port()
    resolve = [arg for host in sites.resolve_args() for arg in ("--resolve", host)]
    crawl = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawler",
            "-c",
            str(cluster.config_path),
            *resolve,
            "--delay",
            "0.05",
            "--burst",
            "100",
            "--timeout",
            "2",
            "--retry-delay",
            "0.5",
            "--depth",
            "2",
            "--work",
            str(tmp_path / "work"),
            "--monitor",
            f"127.0.0.1:{port}",
            sites.url(ALPHA),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        seen: dict[str, Any] = {}

        def crawling() -> bool:
            status = status_of(f"http://127.0.0.1:{port}/status.json")
            if status is not None and status["crawl"]["fetched"] > 3:
                seen.update(status)
                return True
            assert crawl.poll() is None, crawl.stdout.read() if crawl.stdout else ""
            return False

        wait_until(crawling, "the monitoring page to show the crawl")
        assert seen["state"] == "crawling"
        assert seen["crawl"]["site"] == sites.url(ALPHA)
        assert seen["crawl"]["last_urls"] and seen["crawl"]["queues"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            html = page.read().decode()
        assert "Crawler agent" in html and "www.alpha.test" in html
        assert crawl.wait(timeout=120) == 0
    finally:
        crawl.kill()
        crawl.wait()


def test_agent_serves_a_scheduler_over_hip(cluster_factory, sites, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    asyncio.run(_scheduler_session(cluster, sites, tmp_path))


async def _scheduler_session(cluster: Any, sites: Any, tmp_path: Any) -> None:
    reports: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    joined = asyncio.Event()

    async def site_done(peer: Peer, params: Any) -> dict[str, bool]:
        await reports.put(params)
        return {"ok": True}

    async def on_connect(peer: Peer) -> None:
        joined.set()

    master = HipMaster(
        cluster.config.secret, "scheduler", {"site_done": site_done}, on_connect=on_connect
    )
    app = web.Application()
    master.add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawler.agent",
            "--scheduler",
            f"http://127.0.0.1:{port}",
            "--name",
            "agent-1",
            "--work",
            str(tmp_path / "agent"),
            "-c",
            str(cluster.config_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        await asyncio.wait_for(joined.wait(), 30)
        peer = master.slaves["agent-1"]
        order = {
            "start_url": sites.url(GAMMA),
            "politeness": {"delay": 0, "read_timeout": 2},
            "resolve": {host: [address] for host, address in sites.hosts.items()},
        }
        assert await peer.call("crawl", order) == {"accepted": sites.url(GAMMA)}
        done = await asyncio.wait_for(reports.get(), 60)
        assert done["agent"] == "agent-1"
        assert done["report"]["start_url"] == sites.url(GAMMA)
        assert done["report"]["pages"] == 3
        status = await peer.call("status")
        assert status["name"] == "agent-1" and status["crawl"]["sites_done"] == 1
        bad = {"start_url": "ftp://nowhere"}
        try:
            await peer.call("crawl", bad)
            raise AssertionError("a bad order was accepted")
        except Exception as exc:  # RemoteError with code bad_params
            assert getattr(exc, "code", "") == "bad_params", exc
        await peer.call("stop")
        started = time.monotonic()
        while agent.poll() is None and time.monotonic() - started < 30:
            await asyncio.sleep(0.1)
        assert agent.returncode == 0
    finally:
        agent.kill()
        agent.wait()
        await runner.cleanup()
