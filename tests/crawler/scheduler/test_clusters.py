"""Sites clustered by the phrases of their last crawls' reports, and the API that shows them."""

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from archive.scheduler_answers import SiteClusters
from crawler.report import SiteReport
from crawler.report_text import told
from crawler.scheduler.clusters import Topic, cluster, phrases_of, vector_of
from crawler.scheduler.service import Scheduler, SchedulerOptions
from crawler.scheduler.store import SqliteStore
from deploy.testing.scheduler_api import scheduler_api

# Two topics; each test site writes its pages from its topic's sentences and some of its own.
TOPICS = {
    "reefs": [
        "The coral reef survey counted parrot fish in the lagoon.",
        "Coral bleaching spreads when the sea surface temperature rises.",
        "Divers of the coral reef survey measure coral bleaching each spring.",
    ],
    "trains": [
        "The steam locomotive pulled the night train over the viaduct.",
        "A narrow gauge railway climbs to the slate quarry.",
        "Volunteers restore the steam locomotive for the narrow gauge railway.",
    ],
}
OWN = ["tide tables", "ticket office", "summer timetable", "gift shop", "school visits"]


def site_report(url: str, topic: str, seed: int) -> dict[str, Any]:
    """The report of a crawl of a test site on the topic: a dozen pages of its sentences."""
    rng = random.Random(seed)
    report = SiteReport(url)
    for _ in range(12):
        sentences = rng.sample(TOPICS[topic], 2) + [f"Our {rng.choice(OWN)} is open."]
        report.text.add(" ".join(sentences), ())
    return told(report.to_json())  # as the scheduler stores it


SITES = [
    ("http://reef-one.test/", "reefs"),
    ("http://rails-one.test/", "trains"),
    ("http://reef-two.test/", "reefs"),
    ("http://rails-two.test/", "trains"),
    ("http://reef-three.test/", "reefs"),
]


def topics_of(sites: list[tuple[str, str]]) -> list[Topic]:
    return [
        Topic(i, url, vector_of(phrases_of(site_report(url, topic, i))))
        for i, (url, topic) in enumerate(sites, 1)
    ]


def test_two_topics_give_two_clusters_named_by_their_phrases() -> None:
    found = cluster(topics_of(SITES))
    assert found.sites == 5 and found.alone == ()
    reefs, trains = found.clusters
    assert reefs.sites == (1, 3, 5) and trains.sites == (2, 4)
    assert reefs.start_urls[0] == "http://reef-one.test/"
    assert any("coral" in phrase for phrase in reefs.phrases)
    assert any("locomotive" in phrase or "railway" in phrase for phrase in trains.phrases)
    assert not {word for p in reefs.phrases for word in p.split()} & {"steam", "railway"}


def test_the_clusters_do_not_depend_on_the_order_sites_come_in() -> None:
    topics = topics_of(SITES)
    assert cluster(topics) == cluster(list(reversed(topics)))


def test_sites_alike_in_nothing_stay_alone() -> None:
    topics = [*topics_of(SITES[:2]), Topic(9, "http://empty.test/", {})]
    found = cluster(topics)
    assert found.clusters == () and found.alone == (1, 2) and found.sites == 2
    assert cluster(topics_of(SITES), threshold=1.0).clusters == ()


def test_a_site_vector_is_a_unit_vector_of_its_phrases_and_their_words() -> None:
    vector = vector_of([("solar panels", 3), ("heat", 1)])
    assert set(vector) == {"p:solar panels", "w:solar", "w:panels", "p:heat"}
    assert abs(sum(w * w for w in vector.values()) - 1) < 1e-9
    assert vector["p:solar panels"] > vector["p:heat"]


def test_phrases_that_are_not_phrases_are_left_out_of_a_report() -> None:
    report = {
        "text": {
            "phrases": [
                {"phrase": "tide tables", "count": 4},
                {"phrase": 3, "count": 4},
                {"phrase": "ferry", "count": True},
                {"phrase": "ferry", "count": -1},
                "tide",
            ]
        }
    }
    assert phrases_of(report) == [("tide tables", 4)]
    assert phrases_of({"text": "none"}) == [] and phrases_of({}) == []


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[TestClient[Any, Any]]:
    """The scheduler's API on a store whose sites were crawled once, and one never."""
    store = SqliteStore(tmp_path / "scheduler.db")
    scheduler = Scheduler(store, b"s" * 32, SchedulerOptions(work=tmp_path))
    for i, (url, topic) in enumerate(SITES, 1):
        site = store.add_site(url, "")
        store.finish(site.id, site_report(url, topic, i), "", "", 100.0 + i)
    store.add_site("http://never.test/", "")
    async with scheduler_api(scheduler, "token") as client:
        yield client


async def test_the_api_answers_the_clusters_of_the_crawled_sites(
    api: TestClient[Any, Any],
) -> None:
    response = await api.get("/api/clusters")
    assert response.status == 200, await response.text()
    found = SiteClusters.from_json(await response.json(), "clusters")
    assert [c.sites for c in found.clusters] == [(1, 3, 5), (2, 4)]
    assert found.sites == 5 and found.threshold == 0.2
    strict = SiteClusters.from_json(
        await (await api.get("/api/clusters?threshold=1")).json(), "clusters"
    )
    assert strict.clusters == () and strict.alone == (1, 2, 3, 4, 5)


async def test_a_bad_threshold_is_refused_clearly(api: TestClient[Any, Any]) -> None:
    for bad in ("0", "1.5", "lots", "nan"):
        response = await api.get(f"/api/clusters?threshold={bad}")
        assert response.status == 400
        assert "threshold must be a number above 0, at most 1" in await response.text()
