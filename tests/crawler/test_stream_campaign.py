"""Streams in a crawl campaign, with real processes: a cluster, the scheduler, a site crawler
agent, streaming agents, Icecast fed by ffmpeg, and a website whose page links a playlist naming
the radio.

The crawl reports the stream; the scheduler registers it with its site and, once the operator
asks (or with --record-streams), hands it to a streaming agent. An agent killed with SIGKILL loses
the stream to the other one, and the archived timeline shows the two recordings with a gap that
spans the kill.
"""

import asyncio
import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archive.cluster import ClusterClient
from archive.errors import NotFound
from archive.streams import ChunkLog, stream_logs, timeline
from deploy.testing.cluster import Cluster
from deploy.testing.icecast import Icecast
from deploy.testing.waits import wait_until
from deploy.testing.web_server import WebServer, answering
from tests.crawler.campaign import Campaign, dlweb

# Small chunks and frequent reports, so that a recording shows within a second or two.
SCHEDULER_OPTIONS = ("--no-expand", "--stream-chunk-seconds", "1", "--stream-point-seconds", "0.5")
AGENT_OPTIONS = ("--report-every", "0.5")


class RadioSite:
    """A website whose home page links a playlist (.m3u) that names a live radio."""

    def __init__(self, stream_url: str) -> None:
        self.stream_url = stream_url
        self.server = WebServer(answering(self._answer, method="GET"))

    @property
    def start_url(self) -> str:
        return self.server.base + "/"

    async def _answer(self, request: web.Request) -> web.Response:
        if request.path == "/":
            page = "<html><body><h1>Our radio</h1><a href='/live.m3u'>Listen live</a></body></html>"
            return web.Response(text=page, content_type="text/html")
        if request.path == "/live.m3u":
            playlist = f"#EXTM3U\n#EXTINF:-1,Our radio\n{self.stream_url}\n"
            return web.Response(text=playlist, content_type="audio/x-mpegurl")
        raise web.HTTPNotFound()


@pytest.fixture(scope="module")
def module_cluster(module_cluster_factory: Callable[..., Cluster]) -> Cluster:
    return module_cluster_factory(nodes=1, replicas=1)


@pytest.fixture(scope="module")
def radio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RadioSite]:
    with Icecast(tmp_path_factory.mktemp("icecast")) as icecast:
        icecast.feed("/radio.mp3", title="Morning show")
        site = RadioSite(icecast.url("/radio.mp3"))
        with site.server:
            yield site


@pytest.fixture
def campaign(module_cluster: Cluster, tmp_path: Path) -> Iterator[Campaign]:
    running = Campaign(module_cluster, tmp_path)
    try:
        yield running
    finally:
        running.stop()


def the_stream(campaign: Campaign) -> dict[str, Any] | None:
    """The campaign's only stream, once a crawl has reported it."""
    streams = campaign.api("/api/streams")["streams"]
    assert len(streams) <= 1, streams
    return streams[0] if streams else None


def crawl_the_site(campaign: Campaign, radio: RadioSite) -> dict[str, Any]:
    """The site registered and crawled by a site crawler agent; the stream its crawl reported."""
    campaign.start_agent("crawler")
    site = campaign.api("/api/sites", {"start_url": radio.start_url, "seed": True})
    wait_until(lambda: the_stream(campaign) is not None, "the crawl to report the stream")
    stream = the_stream(campaign)
    assert stream is not None
    assert (stream["url"], stream["site"]) == (radio.stream_url, site["id"])
    return stream


def archived_logs(cluster: Cluster, url: str) -> list[ChunkLog]:
    async def read() -> list[ChunkLog]:
        async with ClusterClient(cluster.config) as client:
            return await stream_logs(client, url)

    return sorted(asyncio.run(read()), key=lambda log: log.start)


def by_recording(logs: list[ChunkLog]) -> list[list[ChunkLog]]:
    """The logs of each recording, in the order the recordings began."""
    recordings: dict[str, list[ChunkLog]] = {}
    for log in logs:
        recordings.setdefault(log.recording, []).append(log)
    return list(recordings.values())


def test_a_stream_whose_agent_is_killed_goes_to_the_other_agent_with_a_gap_over_the_kill(
    campaign: Campaign, module_cluster: Cluster, radio: RadioSite
) -> None:
    campaign.start_scheduler(*SCHEDULER_OPTIONS)
    for name in ("streamer-1", "streamer-2"):
        campaign.start_stream_agent(name, *AGENT_OPTIONS)
    found = crawl_the_site(campaign, radio)
    assert (found["state"], found["agent"]) == ("found", "")  # not recorded until asked
    added = dlweb(campaign, "streams", "add", radio.stream_url)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["id"] == found["id"]

    def recorded_by_one_agent() -> bool:
        stream = the_stream(campaign)
        return stream is not None and stream["state"] == "recording" and stream["last_recorded"] > 0

    wait_until(recorded_by_one_agent, "a streaming agent to record the stream")
    first = campaign.api(f"/api/streams/{found['id']}")
    killed_name = first["stream"]["agent"]
    (other,) = {"streamer-1", "streamer-2"} - {killed_name}
    campaign.agents[killed_name].send_signal(signal.SIGKILL)
    campaign.agents[killed_name].wait()
    killed_at = time.time()

    def taken_over() -> bool:
        stream = the_stream(campaign)
        assert stream is not None
        return stream["agent"] == other and stream["last_recorded"] > killed_at

    wait_until(taken_over, f"{other} to take the stream over", timeout=20)

    def two_recordings_archived() -> bool:
        try:
            logs = archived_logs(module_cluster, radio.stream_url)
        except NotFound:
            # A chunk being inserted: its record read before a lookup finds its content.
            return False
        recordings = by_recording(logs)
        return len(recordings) == 2 and recordings[1][0].end.time / 1e6 > killed_at

    wait_until(two_recordings_archived, "both recordings' chunks in the cluster")
    before, after = by_recording(archived_logs(module_cluster, radio.stream_url))
    shown = campaign.api(f"/api/streams/{found['id']}")
    recorded_by = {r["recording"]: r["agent"] for r in shown["recordings"]}
    assert (recorded_by[before[0].recording], recorded_by[after[0].recording]) == (
        killed_name,
        other,
    )
    hole = (before[-1].end.time / 1e6, after[0].start / 1e6)
    assert hole[0] < killed_at < hole[1], (hole, killed_at)
    # The new recording logs the gap it began with, from the last the scheduler heard.
    gap = after[0].gap
    assert gap is not None and gap.kind == "handover", gap
    assert gap.start / 1e6 <= killed_at <= gap.end / 1e6
    (shown_gap,) = timeline(before + after).gaps
    assert shown_gap.start == before[-1].end.time and shown_gap.kind == "handover"
    assert after[0].start / 1e6 - killed_at < 10  # the grace (1 s) and the handover
    assert all(log.codec == "mpeg-audio" and log.chunk for log in before + after)
    events = [(e["event"], e["agent"]) for e in shown["events"]]
    assert events == [
        ("found", ""),
        ("added", ""),
        ("assigned", killed_name),
        ("released", killed_name),
        ("assigned", other),
    ], events
    stream = shown["stream"]
    assert stream["recordings"] == 2 and stream["gaps"] >= 1
    assert stream["first_recorded"] < killed_at < stream["last_recorded"]
    listed = dlweb(campaign, "streams", "list")
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if radio.stream_url in line]
    assert "recording" in line.split() and other in line.split(), listed.stdout
    agents = {a["name"]: a for a in campaign.api("/api/status")["stream_agents"]}
    assert agents == {other: {"name": other, "connected": True, "capacity": 16, "streams": 1}}


def test_with_record_streams_a_reported_stream_is_recorded_handed_back_by_a_stopping_agent_and_stopped(
    campaign: Campaign, radio: RadioSite
) -> None:
    campaign.start_scheduler(*SCHEDULER_OPTIONS, "--record-streams")
    found = crawl_the_site(campaign, radio)
    assert found["state"] == "waiting"  # no streaming agent yet

    def recorded_by(agent: str) -> Callable[[], bool]:
        def check() -> bool:
            stream = the_stream(campaign)
            assert stream is not None
            recordings = campaign.api(f"/api/streams/{found['id']}")["recordings"]
            return stream["agent"] == agent and any(
                r["agent"] == agent and r["chunks"] for r in recordings
            )

        return check

    campaign.start_stream_agent("leaving", *AGENT_OPTIONS)
    wait_until(recorded_by("leaving"), "the first agent to record the stream")
    leaving = campaign.agents["leaving"]
    leaving.terminate()
    assert leaving.wait(timeout=30) == 0, campaign.log("leaving")
    # Told by the agent on its way out, the scheduler does not wait for the grace.
    stream = the_stream(campaign)
    assert stream is not None and (stream["state"], stream["agent"]) == ("waiting", "")
    campaign.start_stream_agent("staying", *AGENT_OPTIONS)
    wait_until(recorded_by("staying"), "the second agent to record the stream")
    stopped = dlweb(campaign, "streams", "stop", radio.stream_url)
    assert stopped.returncode == 0, stopped.stderr
    answer = json.loads(stopped.stdout)
    assert (answer["state"], answer["agent"]) == ("stopped", "")

    def both_ended() -> bool:
        recordings = campaign.api(f"/api/streams/{found['id']}")["recordings"]
        return all(r["ended"] for r in recordings)

    wait_until(both_ended, "the second agent to report its recording ended")
    shown = campaign.api(f"/api/streams/{found['id']}")
    reasons = {r["agent"]: r["reason"] for r in shown["recordings"]}
    assert reasons == {"leaving": "the agent stopped", "staying": "stopped by the scheduler"}
    events = [(e["event"], e["agent"]) for e in shown["events"]]
    assert events == [
        ("found", ""),
        ("assigned", "leaving"),
        ("ended", "leaving"),
        ("assigned", "staying"),
        ("stopped", "staying"),
    ], events
    assert campaign.api("/api/status")["stream_agents"][-1]["streams"] == 0
    listed = dlweb(campaign, "streams", "list", "--state", "stopped", "--json")
    assert [s["url"] for s in json.loads(listed.stdout)["streams"]] == [radio.stream_url]


def test_a_scheduler_killed_and_restarted_leaves_the_stream_with_the_agent_recording_it(
    campaign: Campaign, radio: RadioSite
) -> None:
    # A grace long enough for the agent to reconnect: the stream must not change hands.
    options = (*SCHEDULER_OPTIONS, "--record-streams", "--agent-grace", "30")
    campaign.start_scheduler(*options)
    campaign.start_stream_agent("streamer", *AGENT_OPTIONS)
    found = crawl_the_site(campaign, radio)
    wait_until(
        lambda: (the_stream(campaign) or {}).get("last_recorded", 0) > 0,
        "the streaming agent to record the stream",
    )
    assert campaign.scheduler is not None
    campaign.scheduler.send_signal(signal.SIGKILL)
    campaign.scheduler.wait()
    campaign.start_scheduler(*options)
    restarted = time.time()

    def recording_on() -> bool:
        stream = the_stream(campaign)
        return stream is not None and stream["last_recorded"] > restarted

    wait_until(recording_on, "the agent's reports to reach the restarted scheduler")
    shown = campaign.api(f"/api/streams/{found['id']}")
    assert (shown["stream"]["state"], shown["stream"]["agent"]) == ("recording", "streamer")
    assert [r["agent"] for r in shown["recordings"]] == ["streamer"]  # one recording throughout
    assert shown["stream"]["gaps"] == 0
    assert [e["event"] for e in shown["events"]] == ["found", "assigned"]
    agents = campaign.api("/api/status")["stream_agents"]
    assert agents == [{"name": "streamer", "connected": True, "capacity": 16, "streams": 1}]
