"""The API crawler with real processes: against the loopback Mastodon instance and a real
cluster it archives the API answers and the posts' pages (an archived answer replays through the
proxy), obeys each 429's Retry-After, skips bad answers, and scores the linked stories in
popularity order; with a real scheduler, the stories it injects are then crawled."""

import asyncio
import http.client
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster
from deploy.testing.mastodon import HASHTAG, STATUSES, STORIES_BY_POPULARITY, Mastodon, Request
from deploy.testing.waits import wait_until
from tests.crawler.campaign import Campaign
from tests.proxy.conftest import through

RUN_TIMEOUT = 60
SKIPPED = ("/broken", "/huge")  # answered 200, but not with a list of statuses


@pytest.fixture(scope="module")
def mastodon() -> Iterator[Mastodon]:
    with Mastodon() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(module_cluster_factory: Callable[..., Cluster]) -> Cluster:
    return module_cluster_factory(nodes=1, replicas=1)


def api_crawler(
    cluster: Cluster, mastodon: Mastodon, report: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`python -m crawler.social` against the loopback instance; what it did and its report."""
    pins = [arg for pin in mastodon.resolve() for arg in ("--resolve", pin)]
    done = subprocess.run(
        [
            sys.executable, "-m", "crawler.social",
            "-c", str(cluster.config_path),
            "--instance", mastodon.instance(),
            "--report", str(report),
            *pins,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done, json.loads(report.read_text())


def live(mastodon: Mastodon, request: Request) -> bytes:
    """What the instance answers now to a request of its log."""
    connection = http.client.HTTPConnection("127.0.0.1", mastodon.port, timeout=10)
    try:
        connection.request("GET", request.path, headers={"Host": request.host})
        return connection.getresponse().read()
    finally:
        connection.close()


def answered(requests: list[Request]) -> list[Request]:
    return [r for r in requests if r.status == 200]


def test_api_answers_and_posts_are_archived_429s_obeyed_bad_answers_skipped_links_by_popularity(
    cluster, mastodon, proxy_factory, tmp_path
):
    _, report = api_crawler(
        cluster, mastodon, tmp_path / "report.json",
        "--hashtag", HASHTAG, "--hashtag", "broken", "--hashtag", "huge",
        "--account", "alice", "--account", "nobody",
        "--limit", "2", "--max-wait", "10",
    )  # fmt: skip
    assert report["skipped"] == {"bad-json": 1, "too-large": 1, "http-4xx": 1}
    tag = mastodon.requests(f"/api/v1/timelines/tag/{HASHTAG}")
    account = mastodon.requests("/api/v1/accounts/1/statuses")
    # Each timeline's first request was answered 429; the next came after its Retry-After:
    # one second for the hashtag, the HTTP date of the next whole second for the account.
    assert [r.status for r in tag] == [429, 200, 200, 200]
    assert tag[1].time >= tag[0].time + 1.0
    assert [r.status for r in account] == [429, 200, 200]
    assert account[1].time >= int(account[0].time) + 1
    assert report["throttled"] == 2
    # Paged by the Link header: 5 statuses of the hashtag in pages of 2, 3 of the account.
    assert ["max_id" in r.path for r in answered(tag)] == [False, True, True]
    alice = [s.id for s in STATUSES if s.account == "alice"]
    tagged = [s.id for s in STATUSES if s.tagged]
    assert report["posts"] == len(tagged) + len(alice)
    pages = answered(mastodon.requests("/@"))
    assert sorted(int(r.path.rpartition("/")[2]) for r in pages) == sorted({*alice, *tagged})
    assert report["pages"] == len(pages)
    # The stories, mentions and hashtags left out, ranked as the statuses' engagement ranks them.
    assert [link["url"] for link in report["links"]] == [
        mastodon.story(n) for n in STORIES_BY_POPULARITY
    ]
    scores = [link["score"] for link in report["links"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s < 1 for s in scores)
    api = [
        r
        for r in answered(mastodon.requests("/api/"))
        if not r.path.partition("?")[0].endswith(SKIPPED)
    ]
    assert report["archived"] == len(api) + len(pages)

    async def captured() -> dict[str, int]:
        async with ClusterClient(cluster.config) as client:
            return {
                r.path: len(await client.captures(f"http://{r.host}{r.path}")) for r in api + pages
            }

    assert set(asyncio.run(captured()).values()) == {1}
    proxy = proxy_factory(cluster)
    first = answered(tag)[0]
    status, headers, body = through(proxy, "GET", f"http://{first.host}{first.path}")
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert body == live(mastodon, first)
    assert [s["id"] for s in json.loads(body)] == ["105", "104"]


def test_the_stories_the_posts_link_to_are_injected_and_the_scheduler_crawls_them(
    cluster, mastodon, tmp_path
):
    """Needs the scheduler's POST /api/urls/inject."""
    campaign = Campaign(cluster, tmp_path, mastodon.resolve())
    try:
        campaign.start_scheduler()
        campaign.start_agent("a1")
        _, report = api_crawler(
            cluster, mastodon, tmp_path / "report.json",
            "--hashtag", HASHTAG, "--account", "alice",
            "--scheduler-api", campaign.url, "--campaign", "heritage",
        )  # fmt: skip
        assert report["refused"] == ""
        assert report["injected"] == len(STORIES_BY_POPULARITY)
        stories = {f"/story/{n}.html" for n in STORIES_BY_POPULARITY}
        wait_until(
            lambda: stories <= {r.path for r in answered(mastodon.requests("/story/"))},
            "the injected stories to be crawled",
            timeout=RUN_TIMEOUT,
        )
    finally:
        campaign.stop()
