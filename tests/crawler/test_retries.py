"""A fetch that failed for a reason that may pass (a 5xx, a 429, a reset, a timeout) is tried
again later in the same crawl, with backoff or after the wait the server asked for, a bounded
number of times; the answer that finally comes is archived, and the report says what happened."""

import asyncio
import email.utils
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from crawler.retries import MAX_RETRY_AFTER, Retries, Retry, RetryReport
from deploy.testing.cluster import Cluster
from deploy.testing.web_server import WebServer, answering

from .conftest import run_crawler

PAGE = (
    '<html><head><link rel="stylesheet" href="/style.css"></head><body>'
    '<a href="/flaky.html">flaky</a> <a href="/down.html">down</a></body></html>'
)


class FlakySite:
    """A start page linking to a page that answers 503 twice (asking for a 1 s wait), then 200;
    a page that always answers 500; a style sheet that answers 502 once."""

    def __init__(self) -> None:
        self.asked: dict[str, list[float]] = defaultdict(list)
        self._lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.Response:
        with self._lock:
            times = self.asked[request.path]
            times.append(time.monotonic())
            tries = len(times)
        if request.path == "/flaky.html" and tries <= 2:
            return web.Response(status=503, text="busy", headers={"Retry-After": "1"})
        if request.path == "/down.html":
            return web.Response(status=500, text="broken for good")
        if request.path == "/style.css":
            if tries == 1:
                return web.Response(status=502, text="bad gateway")
            return web.Response(text="body { color: red }", content_type="text/css")
        if request.path == "/flaky.html":
            return web.Response(text="<p>at last</p>", content_type="text/html")
        if request.path == "/":
            return web.Response(text=PAGE, content_type="text/html")
        return web.Response(status=404, text="none")


async def statuses(config: ClusterConfig, url: str) -> list[int]:
    async with ClusterClient(config) as client:
        return [capture.status for capture in await client.captures(url)]


def test_a_server_that_fails_twice_then_answers_is_tried_again_and_its_answer_kept(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    site = FlakySite()
    with WebServer(answering(site.handle)) as server:
        base = f"http://{server.host}:{server.port}"
        cluster = cluster_factory(nodes=1, replicas=1)
        done = run_crawler(
            cluster,
            tmp_path / "report.json",
            tmp_path / "work",
            "--delay", "0", "--retries", "2", "--retry-delay", "0.2",
            base + "/",
        )  # fmt: skip
    asked = {path: len(times) for path, times in site.asked.items()}
    assert asked["/flaky.html"] == 3 and asked["/style.css"] == 2
    assert asked["/down.html"] == 3  # a first try and two more
    flaky = site.asked["/flaky.html"]
    assert flaky[1] - flaky[0] >= 0.9 and flaky[2] - flaky[1] >= 0.9  # its Retry-After: 1
    down = site.asked["/down.html"]
    assert down[1] - down[0] >= 0.2 and down[2] - down[1] >= 0.4  # backoff: 0.2 s, then 0.4 s

    config = cluster.config
    # The answers that came last are archived, not the failures before them; a URL given up
    # keeps its last answer.
    assert asyncio.run(statuses(config, base + "/flaky.html")) == [200]
    assert asyncio.run(statuses(config, base + "/style.css")) == [200]
    assert asyncio.run(statuses(config, base + "/down.html")) == [500]
    retries: dict[str, Any] = done.report["retries"]
    assert retries["tried_again"] == 5 and retries["recovered"] == 2
    assert retries["given_up"] == [{"url": base + "/down.html", "reason": "status 500"}]


# -- the schedule, alone ------------------------------------------------------------------------


def _asked(url: str) -> Retry:
    return Retry(0.0, url, 1, True, False)


def test_each_try_waits_twice_as_long_and_the_last_is_given_up() -> None:
    report = RetryReport()
    retries = Retries(2, 10.0, report)
    before = time.monotonic()
    assert retries.failed(_asked("http://a.test/"), "status 503")
    assert 9.9 <= (retries.next_wait() or 0) <= 10.0
    assert retries.take_due() is None  # not due yet
    assert retries.failed(_asked("http://a.test/"), "status 503")
    assert retries.failed(_asked("http://a.test/"), "status 503") is False
    assert report.given_up == {"http://a.test/": "status 503"}
    assert len(retries) == 2 and time.monotonic() - before < 1


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        ("3", 3.0),
        ("an HTTP date 30 s ahead", 30.0),
        ("soon", 5.0),  # not a wait: the backoff
        (str(int(MAX_RETRY_AFTER) + 1), None),  # too long: given up
    ],
)
def test_retry_after_is_obeyed_within_bounds(retry_after: str, wait: float | None) -> None:
    if retry_after.startswith("an HTTP date"):
        retry_after = email.utils.formatdate(time.time() + 30, usegmt=True)
    report = RetryReport()
    retries = Retries(3, 5.0, report)
    scheduled = retries.failed(_asked("http://b.test/"), "status 429", retry_after)
    if wait is None:
        assert not scheduled and "too long a wait" in report.given_up["http://b.test/"]
        return
    assert scheduled
    assert wait - 1.5 <= (retries.next_wait() or 0) <= wait


def test_a_url_that_answers_at_last_counts_as_recovered() -> None:
    report = RetryReport()
    retries = Retries(2, 0.0, report)
    retries.failed(_asked("http://c.test/"), "timeout")
    due = retries.take_due()
    assert due is not None and (due.url, due.level, due.page) == ("http://c.test/", 1, True)
    retries.answered("http://c.test/")
    retries.answered("http://d.test/")  # never failed
    assert (report.tried_again, report.recovered) == (1, 1)
    assert report.to_json()["given_up"] == []
