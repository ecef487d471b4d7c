"""The live sources the streaming agent's tests record from behave as `deploy/testing/icecast.py`
and `tests/stream_sources.py` say: Icecast mounts with ICY titles, the tap's capture, ICY
splitting, live HLS, and the misbehaving streams."""

import http.client
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.testing.icecast import Icecast
from deploy.testing.waits import wait_until
from tests.stream_sources import BadStreams, HlsLive, Tap, icy_block, icy_title, strip_icy, with_icy

METAINT = 8000  # small, so that a title shows in a block within half a second of audio


@pytest.fixture(scope="module")
def icecast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Icecast]:
    with Icecast(tmp_path_factory.mktemp("icecast"), metaint=METAINT) as server:
        server.feed("/live.mp3", title="First title")
        server.feed("/live.aac", codec="aac", bitrate_k=64)
        server.feed("/live.ogg", codec="ogg", title="Ogg title")
        yield server


@pytest.fixture(scope="module")
def hls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HlsLive]:
    # Four times real time, so that the playlist slides within seconds.
    with HlsLive(tmp_path_factory.mktemp("hls"), readrate=4) as stream:
        yield stream


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BadStreams]:
    with BadStreams(tmp_path_factory.mktemp("bad"), rate=0) as server:
        yield server


def listen(port: int, path: str, icy: bool = True) -> socket.socket:
    """A raw HTTP/1.0 request for `path`, as a stream client sends it, asking for ICY metadata
    if `icy`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    request = f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n"
    if icy:
        request += "Icy-MetaData: 1\r\n"
    sock.sendall((request + "\r\n").encode())
    return sock


def read_until(sock: socket.socket, done: Callable[[bytes], bool], timeout: float = 10) -> bytes:
    """Read until `done` says what was read is enough."""
    data = b""
    deadline = time.monotonic() + timeout
    while not done(data):
        assert time.monotonic() < deadline, f"gave up after {len(data)} bytes"
        piece = sock.recv(65536)
        assert piece, f"the stream ended after {len(data)} bytes"
        data += piece
    return data


def read_all(sock: socket.socket) -> bytes:
    """Read until the server ends the connection."""
    data = b""
    while piece := sock.recv(65536):
        data += piece
    return data


def split_response(raw: bytes) -> tuple[dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


# -- Icecast -----------------------------------------------------------------------------------


def test_an_icecast_mp3_mount_answers_audio_mpeg_with_icy_metaint_when_asked(
    icecast: Icecast,
) -> None:
    with listen(icecast.port, "/live.mp3") as sock:
        headers, body = split_response(read_until(sock, lambda d: len(d) > 3 * METAINT))
    assert headers["content-type"] == "audio/mpeg"
    assert headers["icy-metaint"] == str(METAINT)
    audio, blocks = strip_icy(body, METAINT)
    assert b"\xff\xfb" in audio[:1000]  # MPEG-1 layer III frames (the burst starts anywhere)
    assert icy_title(blocks[0]) == "First title"
    with listen(icecast.port, "/live.mp3", icy=False) as sock:
        headers, _ = split_response(read_until(sock, lambda d: b"\r\n\r\n" in d))
    assert "icy-metaint" not in headers


def test_a_title_set_through_the_admin_api_reaches_a_listener_within_seconds(
    icecast: Icecast,
) -> None:
    with listen(icecast.port, "/live.mp3") as sock:
        burst = read_until(sock, lambda d: len(d) > icecast.burst_size)
        icecast.set_title("/live.mp3", "Second title é")
        asked = time.monotonic()
        raw = burst + read_until(
            sock,
            lambda d: (
                b"Second title" in b"".join(strip_icy(split_response(burst + d)[1], METAINT)[1])
            ),
        )
    assert time.monotonic() - asked < 5
    titles = [icy_title(block) for block in strip_icy(split_response(raw)[1], METAINT)[1]]
    assert titles[0] == "First title" and titles[-1] == "Second title é"
    assert set(titles[1:-1]) <= {None}  # a block repeats a title only when it changes
    wait_until(lambda: icecast.title("/live.mp3") == "Second title é", "the status title")


def test_an_aac_mount_serves_adts_with_icy_metadata(icecast: Icecast) -> None:
    with listen(icecast.port, "/live.aac") as sock:
        headers, body = split_response(read_until(sock, lambda d: len(d) > 2 * METAINT))
    assert (headers["content-type"], headers["icy-metaint"]) == ("audio/aac", str(METAINT))
    audio, _ = strip_icy(body, METAINT)
    assert b"\xff\xf1" in audio[:1000]  # ADTS frames (the burst starts anywhere)


def test_an_ogg_mount_carries_its_title_in_the_stream_and_a_new_one_as_a_chained_stream(
    icecast: Icecast,
) -> None:
    with listen(icecast.port, "/live.ogg") as sock:
        first = read_until(sock, lambda d: len(d) > 8000)
        headers, _ = split_response(first)
        assert "icy-metaint" not in headers and headers["content-type"] == "audio/ogg"
        assert b"title=Ogg title" in first
        icecast.set_title("/live.ogg", "Ogg second")
        rest = read_until(sock, lambda d: b"title=Ogg second" in d)
    # The new title comes in the comment header of a new logical stream (a new BOS page).
    beginnings = [m.start() for m in re.finditer(b"OggS\x00\x02", first + rest)]
    assert len(beginnings) == 2


def test_listeners_are_listed_and_dropped_server_side(icecast: Icecast) -> None:
    with listen(icecast.port, "/live.aac") as sock:
        read_until(sock, lambda d: len(d) > 1000)
        assert [listener.ip for listener in icecast.listeners("/live.aac")] == ["127.0.0.1"]
        assert icecast.kill_listeners("/live.aac") == 1
        read_all(sock)  # ends: Icecast closed the connection
    wait_until(lambda: icecast.listeners("/live.aac") == [], "no listeners")


# -- Tap -----------------------------------------------------------------------------------------


def test_the_tap_records_exactly_what_the_client_received(icecast: Icecast) -> None:
    with Tap(("127.0.0.1", icecast.port)) as tap:
        with listen(tap.port, "/live.mp3") as sock:
            received = read_until(sock, lambda d: len(d) > icecast.burst_size + 5000)
            icecast.kill_listeners("/live.mp3")
            received += read_all(sock)
        wait_until(lambda: not tap.is_open(0), "the tap to close the connection")
        assert tap.received(0) == received
        assert tap.request(0).startswith(b"GET /live.mp3 HTTP/1.0\r\n")
        times = [arrived for arrived, _ in tap.pieces(0)]
        assert times == sorted(times) and len(times) > 1


def test_a_cut_resets_every_connection_through_the_tap(icecast: Icecast) -> None:
    with Tap.before(icecast.base) as tap:
        one, two = listen(tap.port, "/live.mp3"), listen(tap.port, "/live.aac")
        tap.wait_for_bytes(0, 20000)
        tap.wait_for_bytes(1, 20000)
        assert tap.cut() == 2
        for index, sock in enumerate((one, two)):
            received = b""
            with pytest.raises(ConnectionResetError):
                while piece := sock.recv(65536):
                    received += piece
            assert tap.received(index) == received
            assert not tap.is_open(index)
            sock.close()


# -- ICY splitting -------------------------------------------------------------------------------


def test_strip_icy_returns_the_audio_and_the_blocks_a_server_interleaved() -> None:
    audio = bytes(range(256)) * 40  # 10240 bytes
    titles = [b"StreamTitle='One';", b"", b"StreamTitle='Two \xe9';StreamUrl='';"]
    body = with_icy(audio, 1000, lambda n: icy_block(titles[n % 3]))
    got_audio, blocks = strip_icy(body, 1000)
    assert got_audio == audio
    assert len(blocks) == 10
    assert [icy_title(block) for block in blocks[:3]] == ["One", None, "Two é"]
    assert blocks[1] == b"" and len(blocks[0]) == 32 and blocks[0].endswith(b"\0")


def test_strip_icy_keeps_what_a_body_cut_short_holds() -> None:
    body = b"a" * 10 + bytes([2]) + b"StreamTitle='x';".ljust(32, b"\0") + b"b" * 10
    assert strip_icy(body, 10) == (b"a" * 10 + b"b" * 10, [b"StreamTitle='x';".ljust(32, b"\0")])
    assert strip_icy(body[:20], 10) == (b"a" * 10, [body[11:20]])
    assert strip_icy(body[:5], 10) == (b"a" * 5, [])


# -- HLS -----------------------------------------------------------------------------------------


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read()
    except urllib.error.HTTPError as fault:
        return fault.code, fault.headers["Content-Type"], fault.read()


def media_sequence(playlist: str) -> int:
    match = re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", playlist)
    assert match, playlist
    return int(match[1])


def test_the_master_playlist_lists_two_renditions(hls: HlsLive) -> None:
    status, kind, body = get(hls.master_url)
    assert (status, kind) == (200, "application/vnd.apple.mpegurl")
    assert re.findall(r"^(\S+\.m3u8)$", body.decode(), re.MULTILINE) == [
        "64k/index.m3u8",
        "128k/index.m3u8",
    ]
    assert len(re.findall(r"#EXT-X-STREAM-INF:BANDWIDTH=\d+", body.decode())) == 2


def test_the_live_playlist_slides_dates_its_segments_and_never_ends(hls: HlsLive) -> None:
    hls.wait_for_segments(7)
    status, kind, body = get(hls.media_url("64k"))
    playlist = body.decode()
    assert (status, kind) == (200, "application/vnd.apple.mpegurl")
    assert media_sequence(playlist) >= 1  # segment 0 left the window of five
    assert len(re.findall(r"^seg_\d+\.ts$", playlist, re.MULTILINE)) == 5
    assert len(re.findall(r"^#EXT-X-PROGRAM-DATE-TIME:\d{4}-", playlist, re.MULTILINE)) == 5
    assert "#EXT-X-ENDLIST" not in playlist
    assert hls.segments("64k")[0].name == "seg_00000.ts"  # still on disk


def test_segments_are_served_once_listed_and_every_request_counted(hls: HlsLive) -> None:
    hls.wait_for_segments(2)
    segment = hls.segments("128k")[-1]
    path = f"/128k/{segment.name}"
    before = hls.requests(path)
    status, kind, body = get(hls.base + path)
    assert (status, kind, body) == (200, "video/mp2t", segment.read_bytes())
    assert body[0] == 0x47  # an MPEG-TS packet
    assert hls.requests(path) == before + 1
    unlisted = f"/128k/seg_{int(segment.stem[4:]) + 50:05d}.ts"
    assert get(hls.base + unlisted)[0] == 404


def test_a_stopped_encoder_leaves_a_playlist_that_no_longer_advances(
    tmp_path: Path,
) -> None:
    with HlsLive(tmp_path, audio_k=(64,), readrate=8) as stream:
        stream.wait_for_segments(2)
        stream.stop()
        frozen = stream.playlist("64k")
        time.sleep(0.6)  # more than a segment's time at this rate
        assert get(stream.media_url("64k"))[2].decode() == frozen
        assert "#EXT-X-ENDLIST" not in frozen


def test_hls_with_video_carries_h264_and_aac(tmp_path: Path) -> None:
    with HlsLive(tmp_path, video=True, readrate=4) as stream:
        master = get(stream.master_url)[2].decode()
        assert master.count("RESOLUTION=320x180") == 2
        segment = stream.segments("128k")[0]
        probe = subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0"]
            + [str(segment)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert set(probe.stdout.split()) == {"aac", "h264"}


# -- misbehaving streams -------------------------------------------------------------------------


def test_html_answers_a_page_instead_of_audio(bad: BadStreams) -> None:
    status, kind, body = get(bad.url("/html"))
    assert (status, kind) == (200, "text/html; charset=utf-8") and body.startswith(b"<!doctype")


def test_stall_sends_some_mp3_then_holds_the_connection_silent(bad: BadStreams) -> None:
    with listen(bad.port, "/stall") as sock:
        raw = read_until(sock, lambda d: len(split_response(d)[1]) >= bad.STALL_BYTES + 2 * 17)
        headers, body = split_response(raw)
        assert headers["content-type"] == "audio/mpeg" and headers["icy-metaint"] == "8000"
        audio, blocks = strip_icy(body, bad.METAINT)
        assert audio == bad.mp3[: bad.STALL_BYTES] and icy_title(blocks[0]) == "Stall"
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(1)


def test_badmeta_sends_good_blocks_then_one_announcing_more_than_it_holds(
    bad: BadStreams,
) -> None:
    with listen(bad.port, "/badmeta") as sock:
        headers, body = split_response(read_all(sock))
    metaint = int(headers["icy-metaint"])
    good = bad.BADMETA_GOOD_BLOCKS
    _, blocks = strip_icy(body, metaint)
    assert [icy_title(block) for block in blocks[:good]] == ["Good 1", "Good 2", "Good 3"]
    bad_at = (good + 1) * metaint + sum(1 + len(block) for block in blocks[:good])
    assert body[bad_at] == 255  # 4080 bytes announced
    audio_again = bad_at + 1 + len(bad.BADMETA_GARBAGE)
    assert body[bad_at + 1 : audio_again] == bad.BADMETA_GARBAGE
    resumed = bad.mp3[(good + 1) * metaint : (good + 3) * metaint]
    assert body[audio_again:] == resumed  # the audio goes on right after a few bytes


def test_icy_answers_a_shoutcast_v1_status_line(bad: BadStreams) -> None:
    with listen(bad.port, "/icy") as sock:
        raw = read_all(sock)
    assert raw.startswith(b"ICY 200 OK\r\n")
    headers, body = split_response(raw)
    audio, blocks = strip_icy(body, int(headers["icy-metaint"]))
    assert audio == bad.mp3[: bad.ICY_BYTES] and icy_title(blocks[1]) == "Icy 2"


def test_stuck_playlist_never_advances_and_never_ends(bad: BadStreams) -> None:
    first = get(bad.url("/stuck.m3u8"))[2]
    time.sleep(1.2)
    assert get(bad.url("/stuck.m3u8"))[2] == first
    assert b"#EXT-X-ENDLIST" not in first and media_sequence(first.decode()) == 0
    assert get(bad.url(bad.segment_path("stuck", 0)))[:2] == (200, "video/mp2t")


def test_loop_playlist_media_sequence_goes_back(bad: BadStreams) -> None:
    sequences = [media_sequence(get(bad.url("/loop.m3u8"))[2].decode()) for _ in range(5)]
    assert sequences == [10, 11, 12, 10, 11]


def test_gap_playlist_lists_a_segment_that_is_missing(bad: BadStreams) -> None:
    playlist = get(bad.url("/gap.m3u8"))[2].decode()
    assert "#EXT-X-ENDLIST" not in playlist
    listed = re.findall(r"^(seg/\S+)$", playlist, re.MULTILINE)
    statuses = [get(bad.url("/" + path))[0] for path in listed]
    assert bad.segment_path("gap", bad.GAP_MISSING).lstrip("/") in listed
    assert statuses.count(404) == 1 and statuses.count(200) == 2


def test_drop_closes_after_n_bytes_and_serves_again_on_reconnect(bad: BadStreams) -> None:
    before = bad.connections("/drop")
    bodies = []
    for _ in range(2):
        connection = http.client.HTTPConnection("127.0.0.1", bad.port, timeout=10)
        connection.request("GET", "/drop")
        answer = connection.getresponse()
        assert answer.headers["Content-Type"] == "audio/mpeg"
        bodies.append(answer.read())
        connection.close()
    assert [len(body) for body in bodies] == [bad.DROP_AFTER] * 2
    assert bodies[0] + bodies[1] in bad.mp3 + bad.mp3  # the second goes on from the first
    assert bad.connections("/drop") == before + 2
