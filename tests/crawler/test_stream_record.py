"""`dlweb stream`: live streams from real servers (Icecast fed by ffmpeg, ffmpeg's live HLS)
recorded for a minute into a real cluster, and checked against what the servers sent.

One recording of several streams at once serves every test of the module: a radio whose titles
change, an encoder running 1% fast, a stream whose connection is cut halfway, and live HLS.
"""

import asyncio
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from archive.cluster import ClusterClient
from archive.streams import ChunkLog, drift_of, scanner_for, stream_logs
from archive.structure import Capture, RecordKind
from archive.urlkey import structure_name
from tests.master.conftest import Cluster
from tests.stream_sources import HlsLive, Icecast, Tap, strip_icy

SECONDS = 60
CHUNK_SECONDS = 20
POINT_SECONDS = 5
TITLES = ((12.0, "Second song"), (35.0, "Third song"))
CUT_AT = 25.0
# Bytes the agent may not have read yet when it stops: what the kernel and the relay hold.
IN_FLIGHT = 256 * 1024


@dataclass
class Recorded:
    cluster: Cluster
    icecast: Icecast
    taps: dict[str, Tap]
    hls: HlsLive
    urls: dict[str, str]
    started: float  # time.time() when the recording began
    titles_set: list[tuple[float, str]]
    cut_at: float
    reports: dict[str, dict[str, Any]]
    output: str
    logs: dict[str, list[ChunkLog]] = field(default_factory=dict)
    records: dict[str, list[Capture]] = field(default_factory=dict)
    bodies: dict[str, bytes] = field(default_factory=dict)

    def chunks(self, name: str, connection: int | None = None) -> bytes:
        """The archived bytes of a stream (of one connection), in order."""
        logs = self.logs[name]
        starts = sorted({log.connected for log in logs})
        return b"".join(
            self.bodies[log.chunk]
            for log in logs
            if log.chunk is not None and (connection is None or log.connected == starts[connection])
        )


def icy_audio(tap: Tap, index: int, metaint: int) -> bytes:
    """What the server sent on a connection through the tap, header block and ICY metadata
    taken out: an independent reading of the same bytes."""
    received = tap.received(index)
    _, _, body = received.partition(b"\r\n\r\n")
    return strip_icy(body, metaint)[0]


async def read_back(recorded: Recorded) -> None:
    async with ClusterClient(recorded.cluster.config) as client:
        for name, url in recorded.urls.items():
            recorded.logs[name] = await stream_logs(client, url)
            _, recorded.records[name] = await client.read_structure(structure_name(url), url)
            wanted = [log.chunk for log in recorded.logs[name] if log.chunk is not None]
            wanted += [s.content for log in recorded.logs[name] for s in log.segments]
            for content in wanted:
                if content not in recorded.bodies:
                    recorded.bodies[content] = await client.get_content(content)


def at(started: float, seconds: float) -> None:
    """Wait until `seconds` after the recording began."""
    time.sleep(max(0.0, started + seconds - time.time()))


@pytest.fixture(scope="module")
def recorded(
    module_cluster_factory: Callable[..., Cluster], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recorded]:
    cluster = module_cluster_factory(nodes=1, replicas=1)
    folder = tmp_path_factory.mktemp("streams")
    with (
        Icecast(folder / "icecast") as icecast,
        HlsLive(folder / "hls-live") as hls,
        Tap(("127.0.0.1", icecast.port)) as radio_tap,
        Tap(("127.0.0.1", icecast.port)) as drop_tap,
    ):
        icecast.feed("/radio.mp3", title="First song")
        icecast.feed("/fast.mp3", readrate=1.01)
        icecast.feed("/drop.mp3")
        urls = {
            "radio": radio_tap.url("/radio.mp3"),
            "fast": icecast.url("/fast.mp3"),
            "drop": drop_tap.url("/drop.mp3"),
            "hls": hls.master_url,
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "archive", "stream", *urls.values(),
             "--duration", str(SECONDS), "--chunk-seconds", str(CHUNK_SECONDS),
             "--point-seconds", str(POINT_SECONDS), "--rendition", "lowest", "--json",
             "-c", str(cluster.config_path)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        started = time.time()
        titles_set, cut_at = [], 0.0
        try:
            for seconds, title in sorted([*TITLES, (CUT_AT, None)]):
                at(started, seconds)
                if title is None:
                    drop_tap.cut()
                    cut_at = time.time()
                else:
                    icecast.set_title("/radio.mp3", title)
                    titles_set.append((time.time(), title))
            output, _ = process.communicate(timeout=SECONDS + 180)
        finally:
            process.kill()
        reports = {}
        for line in output.splitlines():
            if line.startswith("{"):
                report = json.loads(line)
                reports[report["url"]] = report
        assert process.returncode == 0, output
        recorded = Recorded(
            cluster, icecast, {"radio": radio_tap, "drop": drop_tap}, hls,
            urls, started, titles_set, cut_at,
            {name: reports[url] for name, url in urls.items()}, output,
        )  # fmt: skip
        asyncio.run(read_back(recorded))
        yield recorded


def test_the_archived_audio_is_the_audio_the_server_sent(recorded: Recorded) -> None:
    sent = icy_audio(recorded.taps["radio"], 0, recorded.icecast.metaint)
    archived = recorded.chunks("radio")
    assert len(archived) > SECONDS * 15_000  # a minute at 128 kbit/s
    assert sent.startswith(archived)
    assert len(sent) - len(archived) <= IN_FLIGHT
    assert recorded.reports["radio"]["protocol"] == "icy"
    assert recorded.reports["radio"]["gaps"] == []


def test_the_chunks_are_cut_at_frame_boundaries_with_a_point_every_few_seconds(
    recorded: Recorded,
) -> None:
    logs = recorded.logs["radio"]
    assert len(logs) == SECONDS // CHUNK_SECONDS
    segments = [r for r in recorded.records["radio"] if r.kind is RecordKind.STREAM_SEGMENT]
    assert len(segments) == sum(len(log.points) for log in logs)
    for log in logs:
        assert log.codec == "mpeg-audio" and log.sample_rate == 44_100
        data = recorded.bodies[log.chunk or ""]
        assert hashlib.sha256(data).hexdigest() == log.chunk and len(data) == log.size
        gaps = [b.time - a.time for a, b in zip(log.points, log.points[1:], strict=False)]
        assert all(POINT_SECONDS * 0.9e6 <= gap <= POINT_SECONDS * 1.3e6 for gap in gaps), gaps
        for point in log.points[1:]:
            # A frame header starts at each point: a decoder can start there.
            assert data[point.offset] == 0xFF and data[point.offset + 1] & 0xE0 == 0xE0
    # Every chunk after the first starts on a frame: the cut is at a boundary.
    for log in logs[1:]:
        scanner = scanner_for("audio/mpeg")
        assert scanner is not None
        scanner.feed(recorded.bodies[log.chunk or ""][:8192])
        assert scanner.junk == 0


def test_titles_are_logged_with_the_time_they_came_on_air(recorded: Recorded) -> None:
    titles = [(time / 1e6, title) for time, title in recorded.reports["radio"]["titles"]]
    assert [t for _, t in titles] == ["First song", "Second song", "Third song"], titles
    for (set_at, title), (logged_at, logged) in zip(recorded.titles_set, titles[1:], strict=True):
        assert logged == title
        # Icecast passes a title on with the next audio it relays, about 2.5 s later.
        assert set_at <= logged_at <= set_at + 6, (title, logged_at - set_at)
    stored = [t.title for log in recorded.logs["radio"] for t in log.titles]
    assert stored == ["First song", "Second song", "Third song"]


def test_the_drift_of_an_encoder_running_fast_is_measured_within_a_fifth_of_a_percent(
    recorded: Recorded,
) -> None:
    fast = drift_of(recorded.logs["fast"])
    steady = drift_of(recorded.logs["radio"])
    assert 0.008 <= fast.ratio <= 0.012, fast
    assert abs(steady.ratio) <= 0.002, steady
    assert fast.seconds >= SECONDS - 5
    assert recorded.reports["fast"]["drift_text"].startswith("the stream runs 1.")


def test_a_dropped_connection_leaves_a_gap_and_the_recording_resumes(
    recorded: Recorded,
) -> None:
    report = recorded.reports["drop"]
    assert report["connections"] == 2, report
    (gap,) = report["gaps"]
    start, end, kind, _ = gap
    assert kind == "dropped", gap
    assert abs(start / 1e6 - recorded.cut_at) < 1.0
    assert 0 < end - start < 5e6  # reconnected after the first backoff
    tap, metaint = recorded.taps["drop"], recorded.icecast.metaint
    before = icy_audio(tap, 0, metaint)
    assert recorded.chunks("drop", 0) == before  # all that came before the cut is kept
    after = icy_audio(tap, 1, metaint)
    archived_after = recorded.chunks("drop", 1)
    assert after.startswith(archived_after) and len(after) - len(archived_after) <= IN_FLIGHT
    logs = recorded.logs["drop"]
    resumed = next(log for log in logs if log.connected == max(g.connected for g in logs))
    assert resumed.gap is not None and resumed.gap.kind == "dropped"


def test_live_hls_segments_are_fetched_once_each_and_archived_as_served(
    recorded: Recorded,
) -> None:
    report = recorded.reports["hls"]
    assert report["protocol"] == "hls" and report["gaps"] == [], report
    segments = [s for log in recorded.logs["hls"] for s in log.segments]
    assert len(segments) >= SECONDS / recorded.hls.segment_seconds - 3
    on_disk = {f"/64k/{path.name}": path for path in recorded.hls.segments("64k")}
    for segment in segments:
        path = "/" + segment.url.split("/", 3)[3]
        assert path in on_disk, segment.url  # the lowest rendition, as asked
        assert recorded.hls.requests(path) == 1
        assert hashlib.sha256(on_disk[path].read_bytes()).hexdigest() == segment.content
        assert recorded.bodies[segment.content] == on_disk[path].read_bytes()
        assert segment.program_time is not None
    numbers = [s.sequence for s in segments]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    # Each segment is a stream segment at its program date-time in the stream URL's file.
    marks = {r.time for r in recorded.records["hls"] if r.kind is RecordKind.STREAM_SEGMENT}
    assert {s.program_time for s in segments} <= marks
    assert not recorded.hls.requests("/128k/index.m3u8")
