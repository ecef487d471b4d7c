"""Streams that misbehave (tests/stream_sources.py BadStreams), recorded together by one
`dlweb stream`: each fault is logged with its kind, what was good is kept, and the gap marked."""

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from archive.cluster import ClusterClient
from archive.streams import ChunkLog, stream_logs
from deploy.testing.cluster import Cluster
from tests.stream_sources import BadStreams

SECONDS = 14
PATHS = ("/html", "/stall", "/badmeta", "/icy", "/stuck.m3u8", "/loop.m3u8", "/gap.m3u8", "/drop")


@dataclass
class Run:
    cluster: Cluster
    bad: BadStreams
    returncode: int
    output: str
    reports: dict[str, dict[str, Any]]
    logs: dict[str, list[ChunkLog]]
    bodies: dict[str, bytes]

    def audio(self, path: str, connection: int = 0) -> bytes:
        logs = self.logs[path]
        starts = sorted({log.connected for log in logs})
        return b"".join(
            self.bodies[log.chunk]
            for log in logs
            if log.chunk is not None and log.connected == starts[connection]
        )


async def read_back(
    cluster: Cluster, urls: dict[str, str]
) -> tuple[dict[str, Any], dict[str, bytes]]:
    logs, bodies = {}, {}
    async with ClusterClient(cluster.config) as client:
        for path, url in urls.items():
            logs[path] = await stream_logs(client, url)
            for log in logs[path]:
                if log.chunk is not None:
                    bodies[log.chunk] = await client.get_content(log.chunk)
    return logs, bodies


@pytest.fixture(scope="module")
def run(
    module_cluster_factory: Callable[..., Cluster], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    cluster = module_cluster_factory(nodes=1, replicas=1)
    with BadStreams(tmp_path_factory.mktemp("bad-streams")) as bad:
        urls = {path: bad.url(path) for path in PATHS}
        done = subprocess.run(
            [sys.executable, "-m", "dlweb", "stream", *urls.values(), "--duration", str(SECONDS),
             "--timeout", "3", "--chunk-seconds", "5", "--point-seconds", "1", "--json",
             "-c", str(cluster.config_path)],
            capture_output=True, text=True, timeout=SECONDS + 120,
        )  # fmt: skip
        reports = {}
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                report = json.loads(line)
                reports[report["url"].removeprefix(bad.base)] = report
        logs, bodies = asyncio.run(read_back(cluster, urls))
        yield Run(cluster, bad, done.returncode, done.stdout + done.stderr, reports, logs, bodies)


def test_a_page_instead_of_audio_is_logged_and_nothing_stored(run: Run) -> None:
    report = run.reports["/html"]
    assert report["errors"].get("not-a-stream", 0) >= 2, report  # tried again, with backoff
    assert report["chunks"] == 0 and run.logs["/html"] == []
    # The command fails for it; the others were kept.
    assert run.returncode == 1
    assert "Traceback" not in run.output


def test_the_command_says_which_stream_was_not_recorded_and_why(run: Run) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dlweb", "stream", run.bad.url("/html"), "--duration", "2",
         "-c", str(run.cluster.config_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"{run.bad.url('/html')}: NOT RECORDED (not-a-stream x" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr


def test_a_stalled_stream_keeps_what_came_and_marks_the_gap(run: Run) -> None:
    report = run.reports["/stall"]
    assert report["errors"].get("stalled", 0) >= 1, report
    assert report["gaps"] and report["gaps"][0][2] == "stalled"
    assert len(run.audio("/stall")) == BadStreams.STALL_BYTES  # every byte before the stall


def test_a_metadata_block_of_a_wrong_length_ends_the_connection_keeping_the_audio_before(
    run: Run,
) -> None:
    report = run.reports["/badmeta"]
    assert report["errors"].get("bad-metadata", 0) >= 1, report
    good = (BadStreams.BADMETA_GOOD_BLOCKS + 1) * BadStreams.METAINT
    assert run.audio("/badmeta") == run.bad.mp3[:good]
    assert [t for _, t in report["titles"]][:3] == ["Good 1", "Good 2", "Good 3"]


def test_a_shoutcast_icy_status_line_is_read_as_http(run: Run) -> None:
    report = run.reports["/icy"]
    assert report["protocol"] == "icy" and report["chunks"] >= 1, report
    assert run.audio("/icy") == run.bad.mp3[: BadStreams.ICY_BYTES]
    assert "Icy 1" in [t for _, t in report["titles"]]


def test_a_playlist_that_never_advances_is_a_stuck_stream(run: Run) -> None:
    report = run.reports["/stuck.m3u8"]
    assert report["errors"].get("playlist-stuck", 0) >= 1, report
    assert report["gaps"][0][2] == "playlist-stuck"


def test_a_playlist_that_goes_back_is_logged_and_no_segment_is_taken_twice(run: Run) -> None:
    report = run.reports["/loop.m3u8"]
    assert report["errors"].get("playlist-loop", 0) >= 1, report
    sequences = [s.sequence for log in run.logs["/loop.m3u8"] for s in log.segments]
    assert len(sequences) == len(set(sequences))


def test_a_segment_that_cannot_be_fetched_is_a_gap_and_the_others_are_kept(run: Run) -> None:
    report = run.reports["/gap.m3u8"]
    assert report["errors"].get("segment-status", 0) == 1, report
    kinds = [gap[2] for gap in report["gaps"]]
    assert "segment-status" in kinds
    kept = [s.sequence for log in run.logs["/gap.m3u8"] for s in log.segments]
    assert BadStreams.GAP_MISSING not in kept and len(kept) >= 3


def test_a_server_that_closes_the_stream_is_reconnected_to(run: Run) -> None:
    report = run.reports["/drop"]
    assert report["connections"] >= 2 and report["errors"].get("ended", 0) >= 1, report
    assert len(run.audio("/drop", 0)) == BadStreams.DROP_AFTER
    assert run.bad.connections("/drop") == report["connections"]


def test_no_recording_task_failed_unexpectedly(run: Run) -> None:
    assert all("internal" not in report["errors"] for report in run.reports.values())
    assert set(run.reports) == set(PATHS)
