"""The scheduler's store: sites and their delimitations, the schedule, crawls, the graph and
settings; what survives a reopen and a kill, and clear errors for files it cannot use. Every test
of a store runs on both engines: an SQLite file and a PostgreSQL database
(deploy/testing/postgres.py)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from archive.crawl_calls import ScoredUrl
from archive.errors import NotFound
from archive.metadata import cluster_id
from archive.scheduler_answers import DomainSettings
from crawler.delimitation import BadOrder
from crawler.scheduler.pg_store import PgStore
from crawler.scheduler.store import (
    DEFAULT_INTERVAL,
    DuplicateSite,
    SqliteStore,
    Store,
    StoreError,
)

CLUSTER = cluster_id("test", b"k" * 32)

REPORT = {
    "start_url": "http://a.example/",
    "started": 100.0,
    "pages": 12,
    "new_contents": 3,
    "known_contents": 9,
    "external_links": [{"url": f"http://x{n}.example/", "texts": ["x"]} for n in range(5)],
    "text": {"words": 1000, "keywords": {"museum": 4}},
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "scheduler.db"


@dataclass(frozen=True)
class Database:
    """A test's scheduler database, on one engine."""

    engine: str
    location: str  # the SQLite file's path, or the PostgreSQL database's URL

    def open(self) -> Store:
        if self.engine == "sqlite":
            return SqliteStore(Path(self.location))
        return PgStore(self.location, CLUSTER)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, path: Path) -> Database:
    if request.param == "sqlite":
        return Database("sqlite", str(path))
    return Database("postgresql", request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(database: Database) -> Iterator[Store]:
    with database.open() as opened:
        yield opened


# -- sites --------------------------------------------------------------------------------------


def test_a_new_site_is_queued_due_at_once_with_its_delimitation(store: Store) -> None:
    site = store.add_site(
        "HTTP://WWW.Example.org", "", "//shop.example.org", max_depth=7, priority=2.5, seed=True
    )
    assert site.start_url == "http://www.example.org/"
    assert site.accept == "//example.org OR .example.org"  # derived from the start URL
    assert (site.reject, site.max_depth, site.priority, site.seed) == (
        "//shop.example.org",
        7,
        2.5,
        True,
    )
    assert (site.state, site.next_crawl, site.interval, site.crawls) == (
        "queued",
        0.0,
        DEFAULT_INTERVAL,
        0,
    )
    assert site.source == "operator" and site.agent == "" and site.created > 0
    assert store.site(site.id) == site
    assert store.site(site.id + 1) is None
    assert site.to_json()["start_url"] == "http://www.example.org/"


def test_a_bad_delimitation_is_refused(store: Store) -> None:
    with pytest.raises(BadOrder, match="term 1"):
        store.add_site("http://a.example/", "//a.example:80")
    with pytest.raises(BadOrder, match="outside its own delimitation"):
        store.add_site("http://a.example/", "//b.example")
    assert store.counts()["sites"] == 0


def test_a_start_url_inside_a_registered_site_is_a_duplicate(store: Store) -> None:
    first = store.add_site("http://www.example.org/", "", "//shop.example.org")
    with pytest.raises(DuplicateSite, match=f"belongs to site {first.id}"):
        store.add_site("http://news.example.org/today", "//news.example.org")
    with pytest.raises(DuplicateSite):
        store.add_site("http://www.example.org/", "")
    # What a site rejects may be another site.
    shop = store.add_site("http://shop.example.org/", "//shop.example.org")
    assert store.find_site_for("http://shop.example.org/cart") == shop


def test_find_site_for_follows_disjoint_delimitations(store: Store) -> None:
    domain = store.add_site("http://www.uni.edu/", "//uni.edu OR .uni.edu", "re:^https?://[^/]+/~")
    ann = store.add_site("http://www.uni.edu/~ann/", "//www.uni.edu/~ann/")
    bob = store.add_site("http://www.uni.edu/~bob/", "//www.uni.edu/~bob/")
    shop = store.add_site("http://shop.example/", "//shop.example", "/private/")
    anywhere = store.add_site("http://wiki.test/", "re:^https?://wiki\\.")

    def owner(url: str) -> int | None:
        found = store.find_site_for(url)
        return None if found is None else found.id

    assert owner("http://www.uni.edu/") == domain.id
    assert owner("https://maths.uni.edu:8443/x?y=1") == domain.id
    assert owner("http://www.uni.edu/~ann/cv.html") == ann.id
    assert owner("http://www.uni.edu/~ann/") == ann.id
    assert owner("http://www.uni.edu/~bob/a/b") == bob.id
    assert owner("http://www.uni.edu/~carl/") is None  # rejected by the domain, no site of its own
    assert owner("http://uni.edu.evil.example/") is None
    assert owner("http://shop.example/a") == shop.id
    assert owner("http://shop.example/private/a") is None
    assert owner("http://sub.shop.example/") is None
    assert owner("http://wiki.anything.example/") == anywhere.id
    assert owner("http://unknown.example/") is None


def test_find_site_for_among_many_sites_of_one_host(store: Store) -> None:
    users = [
        store.add_site(f"http://perso.host.fr/u{n}/", f"//perso.host.fr/u{n}/") for n in range(300)
    ]
    for user in users[::37]:
        found = store.find_site_for(user.start_url + "page.html")
        assert found is not None and found.id == user.id
    assert store.find_site_for("http://perso.host.fr/nobody/") is None
    assert store.find_site_for("http://perso.host.fr/u1") is None  # the prefix needs its slash


def test_a_removed_site_matches_nothing_and_may_come_back(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    other = store.add_site("http://b.example/", "")
    store.add_edges(other.id, {site.id: 3}, 1.0)
    store.set_state(site.id, "removed")
    assert store.find_site_for("http://a.example/x") is None
    assert list(store.edges()) == []  # its links went with it
    assert [s.id for s in store.next_sites(10.0, 10)] == [other.id]
    store.set_state(site.id, "queued")
    found = store.find_site_for("http://a.example/x")
    assert found is not None and found.id == site.id
    store.set_state(site.id, "removed")
    again = store.add_site("http://a.example/", "")
    with pytest.raises(DuplicateSite, match="cannot come back"):
        store.set_state(site.id, "idle")
    assert store.find_site_for("http://a.example/") == store.site(again.id)


def test_set_state_checks_its_fields(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    store.set_state(
        site.id,
        "idle",
        next_crawl=50,
        interval=3600.0,
        relevance=1.5,
        change_rate=0.25,
        max_depth=3,
        agent="",
    )
    changed = store.site(site.id)
    assert changed is not None
    assert (changed.state, changed.next_crawl, changed.interval) == ("idle", 50.0, 3600.0)
    assert (changed.relevance, changed.change_rate, changed.max_depth) == (1.5, 0.25, 3)
    with pytest.raises(StoreError, match="'asleep' is not one of"):
        store.set_state(site.id, "asleep")
    with pytest.raises(StoreError, match="'start_url' cannot be set"):
        store.set_state(site.id, "idle", start_url="http://b.example/")
    with pytest.raises(StoreError, match="finite number"):
        store.set_state(site.id, "idle", next_crawl=float("nan"))
    with pytest.raises(StoreError, match="finite number"):
        store.set_state(site.id, "idle", priority="high")
    with pytest.raises(StoreError, match="not be negative"):
        store.set_state(site.id, "idle", max_depth=-1)
    with pytest.raises(StoreError, match="agent"):
        store.set_state(site.id, "crawling")
    with pytest.raises(StoreError, match="agent"):
        store.set_state(site.id, "idle", agent="a1")
    with pytest.raises(NotFound):
        store.set_state(site.id + 1, "idle")
    assert store.site(site.id) == changed
    store.set_state(site.id, "crawling", agent="a9")
    assert store.agent_site("a9") == store.site(site.id)


def test_sites_lists_by_state_in_registration_order(store: Store) -> None:
    ids = [store.add_site(f"http://s{n}.example/", "").id for n in range(5)]
    store.set_state(ids[1], "blacklisted")
    store.set_state(ids[3], "blacklisted")
    assert [s.id for s in store.sites()] == ids
    assert [s.id for s in store.sites(limit=2, offset=1)] == ids[1:3]
    assert [s.id for s in store.sites(state="blacklisted")] == [ids[1], ids[3]]
    assert [s.id for s in store.sites(state="queued")] == [ids[0], ids[2], ids[4]]
    with pytest.raises(StoreError):
        store.sites(state="nope")


# -- the schedule -------------------------------------------------------------------------------


def test_next_sites_highest_priority_first_then_longest_due(store: Store) -> None:
    low = store.add_site("http://low.example/", "", priority=1.0)
    high = store.add_site("http://high.example/", "", priority=5.0)
    late = store.add_site("http://late.example/", "", priority=5.0, next_crawl=30.0)
    early = store.add_site("http://early.example/", "", priority=5.0, next_crawl=20.0)
    future = store.add_site("http://future.example/", "", priority=9.0, next_crawl=1000.0)
    paused = store.add_site("http://paused.example/", "", priority=9.0)
    store.set_state(paused.id, "paused")

    def order(now: float, limit: int = 10) -> list[int]:
        return [site.id for site in store.next_sites(now, limit)]

    assert order(10.0) == [high.id, low.id]
    assert order(25.0) == [high.id, early.id, low.id]
    assert order(40.0) == [high.id, early.id, late.id, low.id]
    assert order(40.0, 2) == [high.id, early.id]
    assert order(40.0) == order(40.0)  # asking does not take
    store.set_priority(low.id, 7.0)
    assert order(40.0, 1) == [low.id]
    store.set_priorities({high.id: 8.0, late.id: 7.5})
    assert order(40.0, 3) == [high.id, late.id, low.id]
    assert order(2000.0, 1) == [future.id]
    assert order(10.0) == [high.id, low.id]  # an earlier time again
    store.set_state(high.id, "idle", next_crawl=500.0)
    assert order(40.0, 1) == [late.id]
    assert order(600.0, 2) == [high.id, late.id]
    with pytest.raises(NotFound):
        store.set_priority(paused.id + 100, 1.0)


def test_the_order_holds_through_many_changes(store: Store) -> None:
    rng = random.Random(5)
    ids = [store.add_site(f"http://s{n}.example/", "").id for n in range(40)]
    priorities = dict.fromkeys(ids, 0.0)
    for _ in range(3000):  # many more changes than sites: stale heap entries are dropped
        changed = {site_id: float(rng.randrange(100)) for site_id in rng.sample(ids, 3)}
        store.set_priorities(changed)
        priorities.update(changed)
        if rng.random() < 0.1:
            [first] = store.next_sites(rng.uniform(0, 10), 1)
            assert first.priority == max(priorities.values())
    expected = sorted(ids, key=lambda site_id: (-priorities[site_id], site_id))
    assert [s.id for s in store.next_sites(10.0, 40)] == expected


def test_claim_gives_a_site_to_one_agent_only(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    other = store.add_site("http://b.example/", "")
    store.set_state(other.id, "blacklisted")
    assert store.claim(site.id, "agent-1", 10.0)
    assert not store.claim(site.id, "agent-2", 11.0)
    assert not store.claim(other.id, "agent-2", 11.0)
    assert not store.claim(site.id + 100, "agent-2", 11.0)
    claimed = store.site(site.id)
    assert claimed is not None
    assert (claimed.state, claimed.agent, claimed.claimed) == ("crawling", "agent-1", 10.0)
    assert store.next_sites(20.0, 10) == []
    assert store.agent_site("agent-1") == claimed
    assert store.agent_site("agent-2") is None
    with pytest.raises(StoreError):
        store.claim(site.id, "", 12.0)


def test_release_agent_puts_its_sites_back_in_the_queue(store: Store) -> None:
    a = store.add_site("http://a.example/", "", priority=1.0)
    b = store.add_site("http://b.example/", "", priority=2.0, next_crawl=50.0)
    c = store.add_site("http://c.example/", "")
    assert store.claim(a.id, "agent-1", 10.0)
    assert store.claim(b.id, "agent-1", 20.0)  # before it was due
    assert store.claim(c.id, "agent-2", 20.0)
    assert sorted(store.release_agent("agent-1")) == [a.id, b.id]
    assert store.release_agent("agent-1") == []
    assert [s.id for s in store.next_sites(30.0, 10)] == [b.id, a.id]  # due at once
    released = store.site(b.id)
    assert released is not None
    assert (released.state, released.agent, released.next_crawl) == ("queued", "", 20.0)
    assert store.agent_site("agent-2") == store.site(c.id)


def test_finish_records_the_crawl_and_schedules_the_next(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    assert store.claim(site.id, "agent-1", 100.0)
    store.finish(site.id, REPORT, "/w/a.signatures", "/w/a.chunks", 160.0, new_chunk_share=0.2)
    done = store.site(site.id)
    assert done is not None
    assert (done.state, done.agent, done.last_crawl, done.crawls) == ("idle", "", 160.0, 1)
    assert done.next_crawl == 160.0 + DEFAULT_INTERVAL
    assert (done.signature_file, done.chunk_file) == ("/w/a.signatures", "/w/a.chunks")
    [crawl] = store.crawls(site.id)
    assert (crawl.site, crawl.agent, crawl.started, crawl.finished) == (
        site.id,
        "agent-1",
        100.0,
        160.0,
    )
    assert (crawl.pages, crawl.new_contents, crawl.known_contents, crawl.new_chunk_share) == (
        12,
        3,
        9,
        0.2,
    )
    assert "external_links" not in crawl.report and crawl.report["external_link_count"] == 5
    assert crawl.report["text"] == REPORT["text"]
    assert store.next_sites(161.0, 10) == []
    assert [s.id for s in store.next_sites(160.0 + DEFAULT_INTERVAL, 10)] == [site.id]

    store.set_state(site.id, "idle", interval=60.0)
    assert store.claim(site.id, "agent-2", 200.0)
    store.set_state(site.id, "paused")  # while it is crawled
    store.finish(site.id, {"pages": "many"}, "/w/b.signatures", "/w/b.chunks", 300.0)
    paused = store.site(site.id)
    assert paused is not None and paused.state == "paused" and paused.crawls == 2
    newest, oldest = store.crawls(site.id)
    assert (newest.pages, newest.new_chunk_share, newest.started) == (0, None, 300.0)
    assert oldest == crawl
    assert store.crawls(site.id, limit=1) == [newest]
    with pytest.raises(NotFound):
        store.finish(site.id + 1, REPORT, "", "", 1.0)


# -- the graph ----------------------------------------------------------------------------------


def test_edges_referrers_and_ranks(store: Store) -> None:
    a, b, c = (store.add_site(f"http://{n}.example/", "") for n in "abc")
    store.add_edges(a.id, {b.id: 2, c.id: 1, a.id: 9}, 10.0)  # the self-link is left out
    store.add_edges(b.id, {c.id: 4}, 10.0)
    store.add_edges(a.id, {b.id: 5}, 20.0)  # a later crawl's count replaces the earlier
    store.add_edges(c.id, {}, 20.0)
    assert sorted(store.edges()) == [(a.id, b.id, 5), (a.id, c.id, 1), (b.id, c.id, 4)]
    referrers = store.referrers(c.id)
    assert [(site.id, count) for site, count in referrers] == [(b.id, 4), (a.id, 1)]
    assert store.referrers(a.id) == []
    store.set_ranks({a.id: 0.9, b.id: 0.4}, {b.id: 0.3, c.id: 0.95})
    ranked = {s.id: (s.hub, s.authority) for s in store.sites()}
    assert ranked == {a.id: (0.9, 0.0), b.id: (0.4, 0.3), c.id: (0.0, 0.95)}
    store.set_ranks({c.id: 0.5}, {})
    ranked = {s.id: (s.hub, s.authority) for s in store.sites()}
    assert ranked == {a.id: (0.0, 0.0), b.id: (0.0, 0.0), c.id: (0.5, 0.0)}


# -- the campaign -------------------------------------------------------------------------------


def test_settings_and_counts(store: Store) -> None:
    assert store.get_setting("campaign") == ""
    assert store.get_setting("campaign", "running") == "running"
    store.set_setting("campaign", "paused")
    store.set_setting("campaign", "running")
    assert store.get_setting("campaign") == "running"
    a = store.add_site("http://a.example/", "")
    b = store.add_site("http://b.example/", "")
    store.set_state(b.id, "blacklisted")
    store.add_edges(a.id, {b.id: 1}, 1.0)
    assert store.claim(a.id, "agent-1", 1.0)
    store.finish(a.id, REPORT, "", "", 2.0)
    counts = store.counts()
    assert counts == {
        "queued": 0,
        "crawling": 0,
        "idle": 1,
        "blacklisted": 1,
        "paused": 0,
        "removed": 0,
        "sites": 2,
        "edges": 1,
        "crawls": 1,
    }


# -- streams ------------------------------------------------------------------------------------

RADIO = "http://radio.example:8000/live.mp3"


def test_streams_a_crawl_reports_are_registered_once_with_their_site(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    found = store.found_streams(site.id, [RADIO, "ftp://radio.example/x", RADIO], False, 5.0)
    assert [(s.url, s.site, s.state, s.source) for s in found] == [
        (RADIO, site.id, "found", f"site {site.id}")
    ]
    assert store.found_streams(site.id, ["HTTP://Radio.Example:8000/live.mp3"], True, 6.0) == []
    other = store.found_streams(site.id, ["http://radio.example/other.mp3"], True, 6.0)
    assert [s.state for s in other] == ["waiting"]
    assert store.stream_counts() == {
        "found": 1,
        "waiting": 1,
        "recording": 0,
        "stopped": 0,
        "streams": 2,
    }


def test_the_operator_records_a_found_or_stopped_stream_or_a_new_one(store: Store) -> None:
    site = store.add_site("http://a.example/", "")
    (found,) = store.found_streams(site.id, [RADIO], False, 5.0)
    assert store.record_stream(RADIO, None, 6.0).state == "waiting"
    assert store.move_stream(found.id, "stopped", "stopped", 7.0)
    again = store.record_stream(RADIO, site.id, 8.0)
    assert (again.id, again.state, again.site) == (found.id, "waiting", site.id)
    new = store.record_stream("http://b.example/live", None, 9.0)
    assert (new.state, new.site, new.source) == ("waiting", None, "operator")
    with pytest.raises(NotFound):
        store.record_stream("http://c.example/live", 99, 9.0)
    events = [(e.time, e.event, e.detail) for e in store.stream_events(found.id)]
    assert events == [
        (5.0, "found", f"site {site.id}, found"),
        (6.0, "added", "was found"),
        (7.0, "stopped", ""),
        (8.0, "added", "was stopped"),
    ]


def test_move_stream_moves_only_from_the_states_and_agent_given(store: Store) -> None:
    stream = store.record_stream(RADIO, None, 1.0)
    with pytest.raises(StoreError, match="has an agent when it is recording"):
        store.move_stream(stream.id, "recording", "assigned", 2.0)
    assert store.move_stream(stream.id, "recording", "assigned", 2.0, agent="s1", was=("waiting",))
    assert not store.move_stream(
        stream.id, "recording", "assigned", 3.0, agent="s2", was=("waiting",)
    )
    assert store.stream_load() == {"s1": 1}
    assert [s.id for s in store.agent_streams("s1")] == [stream.id]
    assert not store.move_stream(stream.id, "waiting", "released", 4.0, was_agent="s2")
    assert store.move_stream(stream.id, "waiting", "released", 4.0, was_agent="s1")
    moved = store.stream(stream.id)
    assert moved is not None and (moved.state, moved.agent, moved.assigned) == ("waiting", "", 2.0)
    events = [(e.event, e.agent) for e in store.stream_events(stream.id)]
    assert events == [("added", ""), ("assigned", "s1"), ("released", "s1")]


def test_recordings_keep_the_first_and_last_recorded_times_and_count_the_gaps(
    store: Store,
) -> None:
    stream = store.record_stream(RADIO, None, 1.0)
    first = {"stream": stream.id, "recording": "aaaa", "started": 10.0, "last": 0.0, "chunks": 0}
    store.stream_progress("s1", first, 10.5)
    kept = store.stream(stream.id)
    assert kept is not None and (kept.first_recorded, kept.recordings, kept.gaps) == (0.0, 1, 0)
    report = {
        **first,
        "last": 40.0,
        "chunks": 3,
        "bytes": 1000,
        "gaps": 1,
        "errors": {"stalled": 1},
    }
    store.stream_progress("s1", report, 41.0)
    store.stream_progress("s1", {**report, "ended": True, "reason": "the agent stopped"}, 42.0)
    second = {"stream": stream.id, "recording": "bbbb", "started": 45.0, "last": 60.0, "chunks": 2}
    store.stream_progress("s2", {**second, "bytes": 500}, 61.0)
    kept = store.stream(stream.id)
    assert kept is not None
    assert (kept.first_recorded, kept.last_recorded, kept.recordings, kept.gaps, kept.bytes) == (
        10.0,
        60.0,
        2,
        2,  # one within the first recording, one between the two
        1500,
    )
    recordings = store.stream_recordings(stream.id)
    assert [(r.recording, r.agent, r.ended, r.reason) for r in recordings] == [
        ("aaaa", "s1", 42.0, "the agent stopped"),
        ("bbbb", "s2", 0.0, ""),
    ]
    assert recordings[0].errors == {"stalled": 1}
    # Reports that name no known stream, or another stream's recording, change nothing.
    assert store.stream_progress("s1", {"stream": 99, "recording": "cccc"}, 62.0) is None
    store.stream_progress("s3", {**second, "stream": stream.id, "last": 99.0}, 63.0)
    assert store.stream_recordings(stream.id)[1].last == 60.0


# -- on disk ------------------------------------------------------------------------------------


def test_everything_survives_a_reopen(database: Database) -> None:
    with database.open() as store:
        domain = store.add_site("http://www.uni.edu/", "//uni.edu OR .uni.edu", "re:/~")
        ann = store.add_site("http://www.uni.edu/~ann/", "//www.uni.edu/~ann/", priority=3.0)
        gone = store.add_site("http://gone.example/", "")
        store.set_state(gone.id, "removed")
        assert store.claim(domain.id, "agent-1", 5.0)
        store.finish(domain.id, REPORT, "/w/s", "/w/c", 6.0)
        store.add_edges(domain.id, {ann.id: 2}, 6.0)
        store.set_ranks({domain.id: 1.0}, {ann.id: 1.0})
        store.set_setting("keywords", "museum")
        assert [s.id for s in store.next_sites(7.0, 10)] == [ann.id]
        before = store.sites()
    with database.open() as store:
        assert store.sites() == before
        assert [s.id for s in store.next_sites(7.0, 10)] == [ann.id]
        found = store.find_site_for("http://www.uni.edu/~ann/x")
        assert found is not None and found.id == ann.id
        assert store.find_site_for("http://gone.example/") is None
        assert len(store.crawls(domain.id)) == 1
        assert list(store.edges()) == [(domain.id, ann.id, 2)]
        assert store.get_setting("keywords") == "museum"


def test_sites_added_survive_a_kill(database: Database) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from crawler.scheduler.pg_store import PgStore\n"
        "from crawler.scheduler.store import SqliteStore\n"
        "engine, location, cluster = sys.argv[1:]\n"
        "store = SqliteStore(Path(location)) if engine == 'sqlite' else PgStore(location, cluster)\n"
        "for n in range(100000):\n"
        "    print(store.add_site(f'http://s{n}.example/', '').id, flush=True)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, database.engine, database.location, CLUSTER],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = [int(child.stdout.readline()) for _ in range(25)]
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with database.open() as store:
        for site_id in acknowledged:
            site = store.site(site_id)
            assert site is not None and site.start_url == f"http://s{site_id - 1}.example/"
        assert store.find_site_for("http://s3.example/a") is not None


# -- steering -----------------------------------------------------------------------------------


def test_injected_urls_wait_best_first_until_a_crawl_given_after_them_reports(
    store: Store,
) -> None:
    a = store.add_site("http://a.example/", "")
    b = store.add_site("http://b.example/", "")
    store.inject(a.id, [ScoredUrl("http://a.example/x", 0.2, "c1")], 10.0)
    store.inject(
        a.id, [ScoredUrl("http://a.example/y", 0.9), ScoredUrl("http://a.example/x", 0.5)], 20.0
    )
    store.inject(b.id, [ScoredUrl("http://b.example/z", 1.0)], 20.0)
    assert store.injected(a.id) == (
        ScoredUrl("http://a.example/y", 0.9),
        ScoredUrl("http://a.example/x", 0.5),
    )
    assert store.injected(a.id, limit=1) == (ScoredUrl("http://a.example/y", 0.9),)
    assert store.claim(a.id, "agent", 30.0)
    store.inject(a.id, [ScoredUrl("http://a.example/later", 0.1)], 40.0)
    store.finish(a.id, REPORT, "", "", 50.0)
    assert store.injected(a.id) == (ScoredUrl("http://a.example/later", 0.1),)
    assert store.injected(b.id) == (ScoredUrl("http://b.example/z", 1.0),)


def test_blacklist_patterns_are_kept_in_the_order_added_once_each(store: Store) -> None:
    store.add_to_blacklist(["host:spam.example", "re:/print/"])
    store.add_to_blacklist(["prefix:http://a.example/tmp/", "host:spam.example"])
    assert store.blacklist() == ("host:spam.example", "re:/print/", "prefix:http://a.example/tmp/")
    store.remove_from_blacklist(["re:/print/", "re:never-added"])
    assert store.blacklist() == ("host:spam.example", "prefix:http://a.example/tmp/")


def test_domain_settings_are_replaced_and_forgotten_when_none_is_set(store: Store) -> None:
    store.set_domain(DomainSettings("example.org", 100, 0.5, 2.0))
    store.set_domain(DomainSettings("a.example", max_delay=1.0))
    store.set_domain(DomainSettings("example.org", budget=50))
    assert store.domains() == [
        DomainSettings("a.example", None, None, 1.0),
        DomainSettings("example.org", 50, None, None),
    ]
    store.set_domain(DomainSettings("a.example"))
    assert store.domains() == [DomainSettings("example.org", 50, None, None)]


def test_a_campaign_database_from_before_streams_opens_with_empty_stream_and_steering_tables(
    path: Path,
) -> None:
    with SqliteStore(path) as store:
        store.add_site("http://a.example/", "")
    db = sqlite3.connect(path)
    for table in (
        "streams",
        "stream_recordings",
        "stream_events",
        "injected",
        "blacklist",
        "domains",
    ):
        db.execute(f"DROP TABLE {table}")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with SqliteStore(path) as store:
        assert [site.start_url for site in store.sites()] == ["http://a.example/"]
        assert store.streams() == []
        assert store.record_stream(RADIO, None, 1.0).state == "waiting"
        assert store.blacklist() == () and store.injected(1) == ()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    db.close()


def test_a_newer_schema_is_refused(path: Path) -> None:
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer dlweb.*schema version 99"):
        SqliteStore(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = 'one' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a scheduler's"):
        SqliteStore(path)


def test_a_file_that_is_no_scheduler_database_is_refused(path: Path) -> None:
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(StoreError, match="not a scheduler's database"):
        SqliteStore(path)
    path.unlink()
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a scheduler's"):
        SqliteStore(path)


def test_a_damaged_database_is_refused(path: Path) -> None:
    with SqliteStore(path) as store:
        for n in range(200):
            store.add_site(f"http://s{n}.example/", "")
    data = bytearray(path.read_bytes())
    data[4096 : 4096 * 3] = b"\xff" * 8192
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="damaged"):
        SqliteStore(path)


def test_a_second_store_on_the_same_database_is_refused(store: Store, database: Database) -> None:
    store.add_site("http://a.example/", "")
    with pytest.raises(StoreError, match="in use by another process"):
        database.open()
    assert store.counts()["sites"] == 1
