"""One recording of live streams from real servers (Icecast fed by ffmpeg, ffmpeg's live HLS)
into a real cluster, shared by the tests of the recorder and of the playback: a radio whose titles
change, an encoder running 1% fast, a stream whose connection is cut halfway, and live HLS, all
recorded for a minute by one `dlweb stream`. The sources stop once it is done; the cluster stays
up for the playback.
"""

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive.cluster import ClusterClient
from archive.streams import ChunkLog, stream_logs
from archive.structure import Capture
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster, clusters_in
from deploy.testing.icecast import Icecast
from tests.stream_sources import HlsLive, Tap, strip_icy

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
    # time.time() - time.monotonic(): the taps time what they carry on the monotonic clock.
    clock_offset: float = field(default_factory=lambda: time.time() - time.monotonic())

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


@contextlib.contextmanager
def record_streams(folder: Path) -> Iterator[Recorded]:
    """Record the streams; the recording, its cluster still running."""
    (folder / "cluster").mkdir()
    with clusters_in(folder / "cluster") as make_cluster:
        cluster = make_cluster(nodes=1, replicas=1)
        recorded = _record(cluster, folder)
        asyncio.run(read_back(recorded))
        yield recorded


def _record(cluster: Cluster, folder: Path) -> Recorded:
    with (
        Icecast(folder / "icecast") as icecast,
        HlsLive(folder / "hls-live") as hls,
        Tap(("127.0.0.1", icecast.port)) as radio_tap,
        Tap(("127.0.0.1", icecast.port)) as drop_tap,
        Tap(("127.0.0.1", icecast.port)) as fast_tap,
        Tap(("127.0.0.1", icecast.port)) as aac_tap,
        Tap(("127.0.0.1", icecast.port)) as ogg_tap,
    ):
        icecast.feed("/radio.mp3", title="First song")
        icecast.feed("/fast.mp3", readrate=1.01)
        icecast.feed("/drop.mp3")
        icecast.feed("/radio.aac", codec="aac")
        icecast.feed("/radio.ogg", codec="ogg")
        taps = {"radio": radio_tap, "drop": drop_tap, "fast": fast_tap, "aac": aac_tap}
        taps["ogg"] = ogg_tap
        urls = {
            "radio": radio_tap.url("/radio.mp3"),
            "fast": fast_tap.url("/fast.mp3"),
            "drop": drop_tap.url("/drop.mp3"),
            "aac": aac_tap.url("/radio.aac"),
            "ogg": ogg_tap.url("/radio.ogg"),
            "hls": hls.master_url,
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "dlweb", "stream", *urls.values(),
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
        return Recorded(
            cluster, icecast, taps, hls,
            urls, started, titles_set, cut_at,
            {name: reports[url] for name, url in urls.items()}, output,
        )  # fmt: skip
