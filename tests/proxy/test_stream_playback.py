"""Recorded live streams played back through the proxy from a date in the middle of the
recording (tests/stream_recording.py): byte-exact from the frame on air at the date, and played
by Chromium in an `<audio>` element and, for HLS, in a `<video>` player page."""

import asyncio
import json
import re
import urllib.request
from collections.abc import Callable
from email.message import Message
from pathlib import Path
from urllib.parse import quote

import pytest

from archive.timestamps import format_http_date, format_iso, parse_time
from crawler.stream.icy import IcyDemuxer
from deploy.testing.cluster import Cluster
from tests.browser import browse, net_log_exchanges
from tests.proxy.conftest import Proxy, Version, archive, header_block, put_setting
from tests.stream_recording import Recorded, icy_audio

INTO = 30  # seconds into the recording: the date played from
PLAYER = "http://player.example"


def date_of(recorded: Recorded) -> int:
    """The date played from, in whole seconds (Accept-Datetime has no finer unit)."""
    return int(recorded.started + INTO) * 1_000_000


def fetch(url: str, proxy: str, at: int) -> tuple[int, Message, bytes]:
    handler = urllib.request.ProxyHandler({"http": proxy})
    request = urllib.request.Request(url, headers={"Accept-Datetime": format_http_date(at)})
    with urllib.request.build_opener(handler).open(request, timeout=60) as answer:
        return answer.status, answer.headers, answer.read()


def audio_arrival(recorded: Recorded, tap: str, offset: int) -> float:
    """When the audio byte at `offset` of the first connection through the tap arrived there,
    as a `time.time()`."""
    pieces = recorded.taps[tap].pieces(0)
    header = b"".join(piece for _, piece in pieces).index(b"\r\n\r\n") + 4
    demuxer = IcyDemuxer(recorded.icecast.metaint)
    for arrived, piece in pieces:
        cut = min(header, len(piece))
        header -= cut
        demuxer.feed(piece[cut:])
        if demuxer.audio_bytes > offset:
            return arrived + recorded.clock_offset
    raise AssertionError(f"audio byte {offset} never arrived")


@pytest.fixture
def proxy(stream_recording: Recorded, proxy_factory: Callable[..., Proxy]) -> Proxy:
    return proxy_factory(stream_recording.cluster)


def test_an_icecast_recording_plays_from_the_frame_on_air_at_the_date(
    stream_recording: Recorded, proxy: Proxy
) -> None:
    at = date_of(stream_recording)
    status, headers, body = fetch(stream_recording.urls["radio"], proxy.url, at)
    assert status == 200
    assert headers["Content-Type"] == "audio/mpeg"
    assert "icy-metaint" not in headers  # the metadata blocks were taken out when recorded
    began = parse_time(headers["X-Dlweb-Stream-Start"])
    assert abs(began - at) <= 100_000, format_iso(began)  # within a frame or two of the date
    assert body[0] == 0xFF and body[1] & 0xE0 == 0xE0  # a decoder can start on the first byte
    # Byte-exact: what follows is the archived audio, through the chunks, to the recording's end.
    archived = stream_recording.chunks("radio")
    start = archived.find(body[:65536])
    assert start > 0 and body == archived[start:]
    # And it is what the server sent at the date, by an independent reading of its bytes.
    sent = icy_audio(stream_recording.taps["radio"], 0, stream_recording.icecast.metaint)
    assert sent[start : start + len(body)] == body
    arrived = audio_arrival(stream_recording, "radio", start)
    assert abs(arrived - at / 1e6) <= 1.0, arrived - at / 1e6


def test_an_hls_recording_plays_as_a_playlist_of_the_segments_from_the_date(
    stream_recording: Recorded, proxy: Proxy
) -> None:
    at = date_of(stream_recording)
    status, headers, body = fetch(stream_recording.urls["hls"], proxy.url, at)
    assert status == 200 and headers["Content-Type"] == "application/vnd.apple.mpegurl"
    text = body.decode()
    assert text.startswith("#EXTM3U") and text.rstrip().endswith("#EXT-X-ENDLIST")
    listed = re.findall(r"^(http://\S+)$", text, re.M)
    dates = [parse_time(d) for d in re.findall(r"#EXT-X-PROGRAM-DATE-TIME:(\S+)", text)]
    segments = {s.url: s for log in stream_recording.logs["hls"] for s in log.segments}
    first = segments[listed[0]]
    assert dates[0] <= at < dates[0] + round(first.duration * 1e6) + 1_000_000, text[:400]
    assert listed == sorted(listed, key=lambda url: segments[url].sequence)
    for url in listed[:2]:
        status, _, data = fetch(url, proxy.url, at)
        assert status == 200 and data == stream_recording.bodies[segments[url].content]


def test_a_date_before_the_recording_plays_from_its_start(
    stream_recording: Recorded, proxy: Proxy
) -> None:
    at = int(stream_recording.started - 3600) * 1_000_000
    status, headers, body = fetch(stream_recording.urls["radio"], proxy.url, at)
    assert status == 200
    first = stream_recording.logs["radio"][0].points[0]  # the first frame boundary recorded
    assert body == stream_recording.chunks("radio")[first.offset :]


AUDIO_PAGE = """<!doctype html><html><head><title>waiting</title></head><body>
<audio id="player" src="{src}" autoplay muted></audio>
<script>
const player = document.getElementById("player");
// Playing: the element has the data and its clock runs (under virtual time, on a loaded machine,
// it may not get far before the budget is spent).
player.addEventListener("playing", () => {{
  if (!document.title.startsWith("played")) {{
    document.title = "played:" + player.currentTime.toFixed(1);
  }}
}});
player.addEventListener("error", () => {{ document.title = "error: " + player.error.message; }});
</script></body></html>"""


def player_pages(recorded: Recorded, cluster: Cluster) -> None:
    """Archive the pages that hold the players (an audio element, a video element for HLS)."""
    html = header_block(200, "OK", ("Content-Type", "text/html; charset=utf-8"))
    day = format_iso(int(recorded.started) * 1_000_000)
    pages = [
        Version(f"{PLAYER}/{name}.html", day, 200, html, AUDIO_PAGE.format(src=src).encode())
        for name, src in (("radio", recorded.urls["radio"]), ("hls", recorded.urls["hls"]))
    ]
    pages[1] = Version(
        pages[1].url,
        day,
        200,
        html,
        AUDIO_PAGE.format(src=recorded.urls["hls"]).replace("<audio", "<video").encode(),
    )
    asyncio.run(archive(cluster, pages))


@pytest.mark.parametrize("name", ["radio", "hls"])
def test_chromium_plays_the_recording_from_the_date(
    stream_recording: Recorded, proxy: Proxy, tmp_path: Path, name: str
) -> None:
    player_pages(stream_recording, stream_recording.cluster)
    at = date_of(stream_recording)
    assert put_setting(proxy, date=str(at))[0] == 200
    net_log = tmp_path / "net-log.json"
    dom = browse(
        proxy.url,
        tmp_path / "profile",
        f"{PLAYER}/{name}.html",
        "--dump-dom",
        f"--log-net-log={net_log}",
        budget_ms=30_000,
    )
    title = re.findall(r"<title>(.*?)</title>", dom)
    assert title and title[0].startswith("played:"), title
    played = [e for e in net_log_exchanges(net_log) if e.url == stream_recording.urls[name]]
    assert played and played[0].status == 200, played
    if name == "radio":
        began = parse_time(played[0].response["x-dlweb-stream-start"])
        assert abs(began - at) <= 100_000
    else:
        segments = [e for e in net_log_exchanges(net_log) if e.url.endswith(".ts")]
        on_air = {s.url: s for log in stream_recording.logs["hls"] for s in log.segments}
        first = on_air[segments[0].url]
        assert first.program_time is not None
        assert first.program_time <= at < first.program_time + round(first.duration * 1e6) + 1e6


def test_the_streams_harbor_lists_each_recording_with_its_gaps_titles_and_drift(
    stream_recording: Recorded, proxy: Proxy
) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    with opener.open("http://streams.dlweb/?format=json", timeout=30) as answer:
        listed = {s["url"]: s for s in json.load(answer)["streams"]}
    urls = stream_recording.urls
    assert set(listed) == set(urls.values())
    radio, drop, fast = listed[urls["radio"]], listed[urls["drop"]], listed[urls["fast"]]
    assert [t["title"] for t in radio["titles"]] == ["First song", "Second song", "Third song"]
    assert radio["gaps"] == [] and len(radio["spans"]) == 1
    (gap,) = drop["gaps"]
    assert gap["kind"] == "dropped" and len(drop["spans"]) == 2
    assert fast["drift_text"].startswith("the stream runs ") and fast["drift"] > 0.005
    assert listed[urls["hls"]]["protocol"] == "hls"
    with opener.open(f"http://streams.dlweb/?url={quote(urls['radio'], safe='')}") as answer:
        page = answer.read().decode()
    # Each title links to the date harbor, which sets its date and opens the player.
    assert page.count("http://date.dlweb/set?at=") == 1 + 3
    assert "Second song" in page and quote("http://streams.dlweb/play?kind=audio", safe="") in page
    with opener.open(f"http://streams.dlweb/play?url={quote(urls['radio'], safe='')}") as answer:
        assert f'<audio id="player" src="{urls["radio"]}"' in answer.read().decode()
