"""Range requests and a seeking video through the proxy.

A video made with ffmpeg (H.264 in MP4, over 1 MiB, so that the storage node streams it) and a
small text file (under 1 MiB, read in one piece), both archived with an ETag and a Last-Modified,
are imported from a WARC file; every byte range a client may ask for comes back as RFC 9110 says,
with the archived bytes, and Chromium seeks in the video and plays from the time sought.
"""

import hashlib
import io
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from deploy.testing.cluster import Cluster
from tests.browser import browse, net_log_exchanges
from tests.exchange.conftest import dlweb

from .conftest import Proxy

SITE = "http://media.example"
CAPTURED = "2024-05-01T12:00:00Z"
CAPTURED_HTTP = "Wed, 01 May 2024 12:00:00 GMT"
LAST_MODIFIED = "Wed, 01 May 2024 10:00:00 GMT"  # hours before: a strong validator
STREAMED = 1 << 20  # bodies larger than this come from the storage node as a stream
SEEK_TO = 6
PAGE = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>loading</title></head><body>
<video id="video" src="/video.mp4" muted preload="auto" width="320" height="240"></video>
<script>
const video = document.getElementById("video");
let sought = null;
video.addEventListener("loadedmetadata", () => {{ video.currentTime = {SEEK_TO}; }});
video.addEventListener("seeked", () => {{
  if (sought === null) {{
    sought = video.currentTime;
    video.play().catch((error) => {{ document.title = "play failed: " + error.message; }});
  }}
}});
video.addEventListener("timeupdate", () => {{
  if (sought !== null && video.currentTime > sought && !document.title.startsWith("seeked")) {{
    document.title = "seeked:" + sought.toFixed(1) + " played:" + video.played.start(0).toFixed(1);
  }}
}});
video.addEventListener("error", () => {{ document.title = "error: " + video.error.message; }});
</script></body></html>
""".encode()


@dataclass(frozen=True)
class Body:
    """An archived resource: its URL, content type and bytes, and its archived ETag."""

    url: str
    content_type: str
    data: bytes

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.data).hexdigest()[:20] + '"'

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Media:
    warc: Path
    video: Body
    notes: Body

    @property
    def bodies(self) -> tuple[Body, Body]:
        return self.video, self.notes


def make_video(path: Path) -> bytes:
    """Ten seconds of ffmpeg's test pattern, 320x240 at 25 frames a second, one key frame a
    second, H.264 at a constant 1.5 Mbit/s (about 1.9 MB), its index at the front."""
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg is not None, "ffmpeg is not installed (apt-get install ffmpeg)"
    encoders = subprocess.run(
        [ffmpeg, "-hide_banner", "-encoders"], capture_output=True, text=True, check=True
    ).stdout
    assert " libx264 " in encoders, "this ffmpeg cannot encode H.264 (libx264)"
    subprocess.run(
        [
            ffmpeg,
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=320x240:rate=25:duration=10",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-profile:v",
            "baseline",
            "-g",
            "25",
            "-b:v",
            "1500k",
            "-minrate",
            "1500k",
            "-maxrate",
            "1500k",
            "-bufsize",
            "500k",
            "-x264-params",
            "nal-hrd=cbr",
            "-movflags",
            "+faststart",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path.read_bytes()


def write_warc(path: Path, page: Body, *bodies: Body) -> None:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for body in (page, *bodies):
            fields = [
                ("Date", CAPTURED_HTTP),
                ("Content-Type", body.content_type),
                ("Content-Length", str(body.size)),
            ]
            if body is not page:
                fields += [("ETag", body.etag), ("Last-Modified", LAST_MODIFIED)]
            record = writer.create_warc_record(
                body.url,
                "response",
                payload=io.BytesIO(body.data),
                http_headers=StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": CAPTURED},
            )
            writer.write_record(record)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Media:
    folder = tmp_path_factory.mktemp("media")
    video = Body(f"{SITE}/video.mp4", "video/mp4", make_video(folder / "video.mp4"))
    assert video.size > STREAMED, video.size
    notes = Body(
        f"{SITE}/notes.txt",
        "text/plain; charset=utf-8",
        b"".join(b"line %06d of the curator's notes\n" % n for n in range(6000)),
    )
    assert notes.size < STREAMED, notes.size
    warc = folder / "media.warc.gz"
    write_warc(warc, Body(f"{SITE}/", "text/html; charset=utf-8", PAGE), video, notes)
    return Media(warc, video, notes)


def imported(media: Media, cluster_factory: Callable[..., Cluster]) -> Cluster:
    cluster = cluster_factory(nodes=1, replicas=1)
    done = dlweb("import", "-c", str(cluster.config_path), str(media.warc))
    assert done.returncode == 0, done.stderr
    return cluster


@pytest.fixture
def proxy(
    media: Media, cluster_factory: Callable[..., Cluster], proxy_factory: Callable[..., Proxy]
) -> Proxy:
    """A proxy on a cluster of its own that holds the media imported."""
    return proxy_factory(imported(media, cluster_factory))


def fetch(
    url: str, proxy: str | None, method: str = "GET", **headers: str
) -> tuple[int, Message, bytes]:
    """Status, headers and body of a request, through `proxy` when given; errors included."""
    handler = urllib.request.ProxyHandler({"http": proxy} if proxy else {})
    request = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.build_opener(handler).open(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as fault:
        return fault.code, fault.headers, fault.read()


def ranged(url: str, proxy: str, value: str, **headers: str) -> tuple[int, Message, bytes]:
    return fetch(url, proxy, Range=value, **headers)


def assert_partial(answer: tuple[int, Message, bytes], body: Body, first: int, last: int) -> None:
    """A 206 answer holding exactly bytes first..last (inclusive) of the body."""
    status, headers, data = answer
    where = f"{body.url} bytes {first}-{last}"
    assert status == 206, (where, status, data[:200])
    assert headers["Content-Range"] == f"bytes {first}-{last}/{body.size}", where
    assert headers["Content-Length"] == str(last - first + 1), where
    assert data == body.data[first : last + 1], where


def test_the_video_is_imported_whole_and_its_storage_node_answers_a_range(
    media: Media, cluster_factory: Callable[..., Cluster]
) -> None:
    cluster = imported(media, cluster_factory)
    (node,) = cluster.nodes.values()
    content = f"{node.url}/content/{hashlib.sha256(media.video.data).hexdigest()}"
    status, headers, data = fetch(content, None)
    assert status == 200 and data == media.video.data
    status, headers, data = fetch(content, None, Range="bytes=1000-1999")
    assert status == 206 and data == media.video.data[1000:2000]
    assert headers["Content-Range"] == f"bytes 1000-1999/{media.video.size}"


def test_a_plain_get_offers_byte_ranges_and_head_gives_the_length_without_a_body(
    media: Media, proxy: Proxy
) -> None:
    for body in media.bodies:
        status, headers, data = fetch(body.url, proxy.url)
        assert status == 200, body.url
        assert headers["Accept-Ranges"] == "bytes", body.url
        assert headers["Content-Length"] == str(body.size), body.url
        assert headers["ETag"] == body.etag and headers["Last-Modified"] == LAST_MODIFIED
        assert data == body.data, body.url
        status, headers, data = fetch(body.url, proxy.url, "HEAD")
        assert status == 200, body.url
        assert headers["Content-Length"] == str(body.size), body.url
        assert headers["Accept-Ranges"] == "bytes", body.url
        assert data == b"", body.url


def test_byte_ranges_are_answered_206_with_exactly_those_bytes(media: Media, proxy: Proxy) -> None:
    for body in media.bodies:
        size, middle = body.size, body.size // 2
        assert_partial(ranged(body.url, proxy.url, "bytes=0-0"), body, 0, 0)
        assert_partial(
            ranged(body.url, proxy.url, f"bytes={middle}-{middle + 65535}"),
            body,
            middle,
            middle + 65535,
        )
        assert_partial(ranged(body.url, proxy.url, "bytes=-1"), body, size - 1, size - 1)
        assert_partial(ranged(body.url, proxy.url, "bytes=-5000"), body, size - 5000, size - 1)
        assert_partial(ranged(body.url, proxy.url, f"bytes={middle}-"), body, middle, size - 1)
        # A last position past the end stops at the end.
        assert_partial(
            ranged(body.url, proxy.url, f"bytes={size - 10}-{size + 1000}"),
            body,
            size - 10,
            size - 1,
        )


def test_a_range_beyond_the_end_is_answered_416_with_the_size(media: Media, proxy: Proxy) -> None:
    for body in media.bodies:
        for value in (f"bytes={body.size}-", f"bytes={body.size + 100}-{body.size + 200}"):
            status, headers, _ = ranged(body.url, proxy.url, value)
            assert status == 416, (body.url, value, status)
            assert headers["Content-Range"] == f"bytes */{body.size}", (body.url, value)


def test_if_range_with_the_archived_validator_gives_the_range_and_another_gives_everything(
    media: Media, proxy: Proxy
) -> None:
    for body in media.bodies:
        for validator in (body.etag, LAST_MODIFIED):
            answer = ranged(body.url, proxy.url, "bytes=100-199", **{"If-Range": validator})
            assert_partial(answer, body, 100, 199)
        for validator in ('"another-version"', "Thu, 02 May 2024 10:00:00 GMT"):
            status, headers, data = ranged(
                body.url, proxy.url, "bytes=100-199", **{"If-Range": validator}
            )
            assert status == 200, (body.url, validator, status)
            assert "Content-Range" not in headers, (body.url, validator)
            assert data == body.data, (body.url, validator)


def test_chromium_seeks_the_archived_h264_video_and_plays_from_the_sought_time(
    media: Media, proxy: Proxy, tmp_path: Path
) -> None:
    net_log = tmp_path / "net-log.json"
    # A loaded machine decodes slowly while virtual time runs on: the budget leaves room for it.
    dom = browse(
        proxy.url,
        tmp_path / "profile",
        f"{SITE}/",
        "--dump-dom",
        f"--log-net-log={net_log}",
        budget_ms=30_000,
    )
    title = re.findall(r"<title>(.*?)</title>", dom)
    # Without byte ranges Chromium cannot seek: it falls back to 0.0 and plays from there.
    assert title == [f"seeked:{SEEK_TO}.0 played:{SEEK_TO}.0"], title
    # Chromium asked for the video by ranges, and the proxy answered each with that range.
    videos = [e for e in net_log_exchanges(net_log) if e.url == media.video.url]
    assert videos and all("range" in e.request for e in videos), videos
    for exchange in videos:
        first, _, last = exchange.request["range"].removeprefix("bytes=").partition("-")
        end = min(int(last), media.video.size - 1) if last else media.video.size - 1
        assert exchange.status == 206, exchange
        assert exchange.response["content-range"] == f"bytes {first}-{end}/{media.video.size}"
