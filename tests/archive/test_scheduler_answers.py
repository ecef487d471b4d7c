"""The scheduler's API answers (archive/scheduler_answers.py): their JSON is their fields in order,
messages within as their own JSON, and reading it back gives the same answer; a bad answer is a
bad_params error naming what was read and the field, never a KeyError."""

import json
from types import SimpleNamespace
from typing import Any

import pytest

from archive.hip import RemoteError
from archive.scheduler_answers import (
    Crawl,
    CrawlerAgent,
    Referrer,
    SchedulerStatus,
    SecondAgentSent,
    Site,
    SiteDetail,
    Sites,
    Stream,
    StreamDetail,
    StreamEvent,
    StreamingAgent,
    StreamRecording,
    Streams,
)

SITE = Site(
    1,
    "http://a.example/",
    "//a.example",
    "",
    150,
    "idle",
    1.5,
    0.25,
    0.0,
    0.125,
    True,
    "operator",
    "",
    0.0,
    86_500.0,
    86_400.0,
    100.0,
    "sig",
    "chunks",
    0.5,
    2,
    10.0,
)
CRAWL = Crawl(3, 1, "a1", 90.0, 100.0, 12, 3, 9, None, {"pages": 12, "text": {"words": 5}})
STREAM = Stream(
    4,
    "http://radio.example/live",
    "http://radio.example/live",
    None,
    "recording",
    "s1",
    20.0,
    21.0,
    50.0,
    1,
    0,
    1000,
    "operator",
    19.0,
)
RECORDING = StreamRecording("aaaa", 4, "s1", 21.0, 50.0, 1000, 3, 0, 0, {"stalled": 1}, "", 0.0, "")
EVENT = StreamEvent(7, 4, 20.0, "assigned", "s1", "")
STATUS = SchedulerStatus(
    "running",
    (CrawlerAgent("a1", True, 1), CrawlerAgent("a2", False, None)),
    {"queued": 0, "idle": 1, "sites": 1},
    5,
    (StreamingAgent("s1", True, 16, 1),),
    {"recording": 1, "streams": 1},
    2,
)
ANSWERS = (
    SITE,
    CRAWL,
    Sites((SITE, SITE)),
    Sites(()),
    SiteDetail(SITE, (CRAWL, CRAWL), (Referrer(2, "http://b.example/", 3),)),
    SecondAgentSent(1, "a2"),
    STREAM,
    Streams((STREAM,)),
    StreamDetail(STREAM, (RECORDING,), (EVENT,)),
    STATUS,
)


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda answer: type(answer).__name__)
def test_an_answer_read_back_from_its_json_is_the_same(answer: Any) -> None:
    sent = json.dumps(answer.to_json())
    assert type(answer).from_json(json.loads(sent), "GET /api/x") == answer


def test_the_json_is_the_fields_in_order_with_messages_within_as_their_json() -> None:
    assert list(SITE.to_json()) == [
        "id",
        "start_url",
        "accept",
        "reject",
        "max_depth",
        "state",
        "priority",
        "relevance",
        "hub",
        "authority",
        "seed",
        "source",
        "agent",
        "claimed",
        "next_crawl",
        "interval",
        "last_crawl",
        "signature_file",
        "chunk_file",
        "change_rate",
        "crawls",
        "created",
    ]
    detail = SiteDetail(SITE, (CRAWL,), (Referrer(2, "http://b.example/", 3),)).to_json()
    assert json.dumps(detail) == json.dumps(
        {
            "site": SITE.to_json(),
            "crawls": [CRAWL.to_json()],
            "referrers": [{"site": 2, "start_url": "http://b.example/", "links": 3}],
        }
    )
    assert json.dumps(STATUS.to_json()) == json.dumps(
        {
            "campaign": "running",
            "agents": [
                {"name": "a1", "connected": True, "site": 1},
                {"name": "a2", "connected": False, "site": None},
            ],
            "counts": {"queued": 0, "idle": 1, "sites": 1},
            "decisions": 5,
            "stream_agents": [{"name": "s1", "connected": True, "capacity": 16, "streams": 1}],
            "streams": {"recording": 1, "streams": 1},
            "stream_decisions": 2,
        }
    )
    assert STREAM.to_json()["site"] is None and CRAWL.to_json()["new_chunk_share"] is None


def test_an_entry_is_copied_from_a_record_with_its_fields() -> None:
    record = SimpleNamespace(**SecondAgentSent(1, "a2").to_json(), other="left out")
    assert SecondAgentSent.of(record) == SecondAgentSent(1, "a2")


def _bad(kind: Any, data: Any) -> str:
    with pytest.raises(RemoteError) as caught:
        kind.from_json(data, "GET /api/sites")
    assert caught.value.code == "bad_params"
    return caught.value.message


def test_a_bad_answer_names_what_was_read_and_the_field() -> None:
    assert _bad(Sites, []) == "GET /api/sites: the answer must be an object"
    assert _bad(Sites, {}) == "GET /api/sites: the answer has no 'sites'"
    site = SITE.to_json()
    bad_site = {**site, "priority": "high"}
    assert _bad(Sites, {"sites": [site, bad_site]}) == (
        "GET /api/sites: sites[1].priority must be a number"
    )
    missing = {key: value for key, value in site.items() if key != "state"}
    assert _bad(Site, missing) == "GET /api/sites: the answer has no 'state'"
    assert _bad(Site, {**site, "seed": 1}) == "GET /api/sites: seed must be bool"
    assert _bad(Site, {**site, "id": True}) == "GET /api/sites: id must be int"
    detail = {"site": 7, "crawls": [], "referrers": []}
    assert _bad(SiteDetail, detail) == "GET /api/sites: site must be an object"
    crawl = {**CRAWL.to_json(), "new_chunk_share": "half"}
    assert _bad(Crawl, crawl) == "GET /api/sites: new_chunk_share must be a number"
    assert _bad(Stream, {**STREAM.to_json(), "site": "1"}) == ("GET /api/sites: site must be int")
    agents = {**STATUS.to_json(), "agents": [{"name": "a1", "connected": "yes", "site": None}]}
    assert _bad(SchedulerStatus, agents) == "GET /api/sites: agents[0].connected must be bool"


def test_a_number_in_a_float_field_reads_as_a_float_and_null_only_where_allowed() -> None:
    site = Site.from_json({**SITE.to_json(), "priority": 2}, "GET /api/sites/1")
    assert site.priority == 2.0 and isinstance(site.priority, float)
    assert _bad(Site, {**SITE.to_json(), "priority": None}) == (
        "GET /api/sites: priority must be a number"
    )
