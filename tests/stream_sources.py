"""Live-stream sources on loopback for the streaming agent's tests, and an independent capture to
compare its recordings with (Icecast, which the benchmarks use as well, is in
deploy/testing/icecast.py).

- `Tap`: a TCP relay in front of any HTTP server that records, per connection, every byte handed
  on to the client, and can cut every connection abruptly; `strip_icy` splits what it recorded
  into audio and ICY metadata blocks.
- `HlsLive`: ffmpeg writing a live HLS stream (two renditions and a master playlist, audio or
  audio and video) served by a small HTTP server that counts requests.
- `BadStreams`: one HTTP server whose paths misbehave as real streams do.

Every class is a context manager that starts on entry and stops everything it started on exit.
Its processes are started by `deploy.testing.spawn`, so a killed test run leaves no encoder
behind.

HlsLive and BadStreams answer from `http.server`, not from the tests' aiohttp server
(deploy/testing/web_server.py): they need the wire as it is, a status line without an HTTP
version (`ICY 200 OK`), HTTP/1.0 or 1.1 by server, a handler's thread held by a stalled or paced
stream.
"""

import contextlib
import http.server
import re
import selectors
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deploy.testing.icecast import SAMPLE_RATE, signal_source
from deploy.testing.spawn import Started, end, spawn, tail
from deploy.testing.waits import answers, wait_until

READY_TIMEOUT = 20.0


# -- ICY metadata ------------------------------------------------------------------------------


def strip_icy(body: bytes, metaint: int) -> tuple[bytes, list[bytes]]:
    """Split a response body with ICY metadata into its audio and its metadata blocks.

    The body is `metaint` bytes of audio, a length byte L, 16 * L bytes of metadata, then again
    audio, and so on. Each block is returned as sent, zero padding included; a length byte of 0
    gives an empty block. A body cut short ends with whatever part of audio or block it holds.
    """
    audio = bytearray()
    blocks: list[bytes] = []
    position = 0
    while position < len(body):
        audio += body[position : position + metaint]
        position += metaint
        if position >= len(body):
            break
        length = body[position] * 16
        position += 1
        blocks.append(body[position : position + length])
        position += length
    return bytes(audio), blocks


def icy_title(block: bytes) -> str | None:
    """The StreamTitle of a metadata block (read as Latin-1), or None if it has none."""
    match = re.search(rb"StreamTitle='(.*?)';", block, re.DOTALL)
    return None if match is None else match.group(1).decode("latin-1")


def icy_block(text: bytes) -> bytes:
    """A metadata block as a server sends it: its length byte, then `text` padded with zeros."""
    length = -(-len(text) // 16)
    if length > 255:
        raise ValueError("ICY metadata is at most 4080 bytes")
    return bytes([length]) + text.ljust(length * 16, b"\0")


def with_icy(audio: bytes, metaint: int, blocks: Callable[[int], bytes]) -> bytes:
    """`audio` with the block `blocks(n)` (made by `icy_block`) after each whole interval of
    `metaint` bytes, n counting the intervals from 0."""
    out = bytearray()
    for number, start in enumerate(range(0, len(audio), metaint)):
        out += audio[start : start + metaint]
        if start + metaint <= len(audio):
            out += blocks(number)
    return bytes(out)


# -- Tap -----------------------------------------------------------------------------------------

TAP_CHUNK = 64 * 1024
TAP_BUFFER = 1024 * 1024  # bytes held for a slow side before the other is no longer read


@dataclass
class _Link:
    client: socket.socket
    upstream: socket.socket
    pieces: list[tuple[float, bytes]] = field(default_factory=list)
    request: bytearray = field(default_factory=bytearray)
    to_client: deque[tuple[float, bytes]] = field(default_factory=deque)
    to_upstream: bytearray = field(default_factory=bytearray)
    upstream_done: bool = False
    client_done: bool = False
    closed: bool = False

    def pending(self) -> int:
        return sum(len(data) for _, data in self.to_client)


class Tap(Started):
    """A TCP relay in front of a server at `target` that records what each connection through
    it carried: `received(i)` is every byte of connection i (in accept order) handed on to the
    client, response header block included, in order; `pieces(i)` has them as they came from
    the server, each with the `time.monotonic()` of its arrival. `cut()` ends every open
    connection abruptly, as a network that drops them would."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._calls: deque[Callable[[], None]] = deque()
        self._thread = threading.Thread(target=self._run, name="tap", daemon=True)

    @classmethod
    def before(cls, url: str) -> "Tap":
        """A tap in front of the server of an http:// URL."""
        parts = urllib.parse.urlsplit(url)
        return cls((parts.hostname or "127.0.0.1", parts.port or 80))

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            self._in_loop(self._stop)
            self._thread.join()

    # what was carried

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._links)

    def received(self, index: int) -> bytes:
        with self._lock:
            return b"".join(data for _, data in self._links[index].pieces)

    def pieces(self, index: int) -> list[tuple[float, bytes]]:
        with self._lock:
            return list(self._links[index].pieces)

    def request(self, index: int) -> bytes:
        """What the client sent on connection `index`."""
        with self._lock:
            return bytes(self._links[index].request)

    def is_open(self, index: int) -> bool:
        with self._lock:
            return not self._links[index].closed

    def wait_for_connections(self, count: int, timeout: float = READY_TIMEOUT) -> None:
        wait_until(lambda: self.connections >= count, f"{count} connections", timeout)

    def wait_for_bytes(self, index: int, count: int, timeout: float = READY_TIMEOUT) -> bytes:
        """What connection `index` received, once it is at least `count` bytes."""
        self.wait_for_connections(index + 1, timeout)
        wait_until(lambda: len(self.received(index)) >= count, f"{count} bytes", timeout)
        return self.received(index)

    def cut(self, *, reset: bool = True) -> int:
        """End every open connection at once, both sides, with a TCP reset (or, with
        `reset=False`, a plain close); bytes not yet handed on are lost. How many it ended."""
        ended: list[int] = []

        def cut_all() -> None:
            for link in self._links:
                if not link.closed:
                    self._close(link, reset=reset)
                    ended.append(1)

        self._in_loop(cut_all)
        return len(ended)

    # the loop: one thread, every socket non-blocking

    def _in_loop(self, call: Callable[[], None]) -> None:
        """Run `call` in the loop's thread and return once it ran."""
        done = threading.Event()

        def run() -> None:
            try:
                call()
            finally:
                done.set()

        if not self._thread.is_alive():
            raise RuntimeError("the tap is not running")
        self._calls.append(run)
        self._wake_write.send(b"x")
        while not done.wait(0.1):
            if not self._thread.is_alive():
                raise RuntimeError("the tap stopped")

    def _stop(self) -> None:
        for link in self._links:
            if not link.closed:
                self._close(link, reset=False)
        raise _StopLoop

    def _run(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        try:
            while True:
                for key, mask in self._selector.select():
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_read:
                        self._wake_read.recv(4096)
                        while self._calls:
                            self._calls.popleft()()
                    else:
                        link: _Link = key.data
                        if not link.closed:
                            self._service(link, key.fileobj is link.upstream, mask)
        except _StopLoop:
            pass
        finally:
            self._selector.close()
            self._listener.close()
            self._wake_read.close()
            self._wake_write.close()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _abort(client)
            return
        link = _Link(client, upstream)
        for sock in (client, upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._links.append(link)
        self._update(link)

    def _service(self, link: _Link, is_upstream: bool, mask: int) -> None:
        try:
            if mask & selectors.EVENT_READ:
                if is_upstream:
                    data = link.upstream.recv(TAP_CHUNK)
                    if data:
                        link.to_client.append((time.monotonic(), data))
                    else:
                        link.upstream_done = True
                else:
                    data = link.client.recv(TAP_CHUNK)
                    if data:
                        with self._lock:
                            link.request += data
                        link.to_upstream += data
                    else:
                        link.client_done = True
            self._flush(link)
        except OSError:
            # One side reset or failed: the other is ended the same way.
            self._close(link, reset=True)
            return
        self._update(link)

    def _flush(self, link: _Link) -> None:
        while link.to_client:
            arrived, data = link.to_client[0]
            try:
                sent = link.client.send(data)
            except BlockingIOError:
                break
            with self._lock:
                link.pieces.append((arrived, data[:sent]))
            if sent < len(data):
                link.to_client[0] = (arrived, data[sent:])
                break
            link.to_client.popleft()
        if link.to_upstream:
            with contextlib.suppress(BlockingIOError):
                del link.to_upstream[: link.upstream.send(link.to_upstream)]
        if link.upstream_done and not link.to_client:
            with contextlib.suppress(OSError):
                link.client.shutdown(socket.SHUT_WR)
        if link.client_done and not link.to_upstream:
            with contextlib.suppress(OSError):
                link.upstream.shutdown(socket.SHUT_WR)

    def _update(self, link: _Link) -> None:
        """Watch each side for what it can do next; close the link once both sides ended."""
        if link.upstream_done and link.client_done and not link.to_client and not link.to_upstream:
            self._close(link, reset=False)
            return
        client = upstream = 0
        if not link.client_done and len(link.to_upstream) < TAP_BUFFER:
            client |= selectors.EVENT_READ
        if link.to_client:
            client |= selectors.EVENT_WRITE
        if not link.upstream_done and link.pending() < TAP_BUFFER:
            upstream |= selectors.EVENT_READ
        if link.to_upstream:
            upstream |= selectors.EVENT_WRITE
        for sock, events in ((link.client, client), (link.upstream, upstream)):
            try:
                registered = self._selector.get_key(sock).events
            except KeyError:
                registered = 0
            if events == registered:
                continue
            if events == 0:
                self._selector.unregister(sock)
            elif registered == 0:
                self._selector.register(sock, events, link)
            else:
                self._selector.modify(sock, events, link)

    def _close(self, link: _Link, *, reset: bool) -> None:
        for sock in (link.client, link.upstream):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)
            if reset:
                _abort(sock)
            else:
                sock.close()
        with self._lock:
            link.closed = True


class _StopLoop(Exception):
    pass


def _abort(sock: socket.socket) -> None:
    """Close with a TCP reset rather than an orderly end."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# -- HTTP servers ------------------------------------------------------------------------------

CONTENT_TYPES = {
    ".m3u8": "application/vnd.apple.mpegurl",
    ".ts": "video/mp2t",
    ".aac": "audio/aac",
    ".mp3": "audio/mpeg",
    ".m4s": "video/iso.segment",
    ".mp4": "video/mp4",
}


class _Closing(Exception):
    """The server is closing: a handler waiting or pacing its output gives up."""


class _Server:
    """A threaded http.server on 127.0.0.1 and a free port that counts requests per path and
    hands each GET to `respond`; HTTP/1.1 with keep-alive if `keep_alive`, else HTTP/1.0 and a
    connection per request."""

    def __init__(
        self, respond: Callable[["_Handler"], None], name: str, keep_alive: bool = False
    ) -> None:
        self.closing = threading.Event()
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(_Handler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_GET(self) -> None:
                with server._lock:
                    server._counts[self.path.split("?")[0]] += 1
                try:
                    respond(self)
                except (_Closing, ConnectionError, TimeoutError):
                    self.close_connection = True

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=name, daemon=True
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.closing.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def requests(self, path: str) -> int:
        with self._lock:
            return self._counts[path]

    def request_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def reply(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)


# -- HLS ---------------------------------------------------------------------------------------


class HlsLive(Started):
    """ffmpeg writing a live HLS stream in real time (`readrate` times it) into `directory`,
    served on a free loopback port.

    One rendition per bitrate in `audio_k` (named "64k", "128k", ...), each AAC in MPEG-TS
    segments of `segment_seconds` (with `video`, also H.264 320x180 with a keyframe at every
    segment start), listed `list_size` at a time in `NAME/index.m3u8`, each with its
    `#EXT-X-PROGRAM-DATE-TIME` (written as `2026-01-31T12:00:00.000+0000`), and a master
    playlist `master.m3u8` naming them all. Every segment stays on disk. The server (HTTP/1.1,
    keep-alive) answers a segment only once its playlist has listed it, so never a part of one.
    """

    def __init__(
        self,
        directory: Path,
        *,
        audio_k: tuple[int, ...] = (64, 128),
        video: bool = False,
        readrate: float = 1.0,
        segment_seconds: int = 2,
        list_size: int = 5,
        seed: int = 0,
    ) -> None:
        self.directory = directory
        self.root = directory / "hls"
        self.audio_k = audio_k
        self.video = video
        self.readrate = readrate
        self.segment_seconds = segment_seconds
        self.list_size = list_size
        self.seed = seed
        self.renditions = [f"{k}k" for k in audio_k]
        self.log = directory / "hls-ffmpeg.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._server = _Server(self._respond, "hls", keep_alive=True)
        self.port = self._server.port

    @property
    def base(self) -> str:
        return self._server.base

    @property
    def master_url(self) -> str:
        return f"{self.base}/master.m3u8"

    def media_url(self, rendition: str) -> str:
        return f"{self.base}/{rendition}/index.m3u8"

    def start(self) -> None:
        """Start the encoder and the server; return once the first segment of every rendition
        is listed."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._process = spawn(self._command(), self.log, cwd=self.root)
        self._server.start()
        self.wait_for_segments(1)

    def _command(self) -> list[str]:
        rate = ["-readrate", str(self.readrate)]
        command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "warning"]
        command += [*rate, "-f", "lavfi", "-i", signal_source(self.seed)]
        fps = 25
        if self.video:
            command += [*rate, "-f", "lavfi", "-i", f"testsrc=size=320x180:rate={fps}"]
        streams = []
        for index, k in enumerate(self.audio_k):
            if self.video:
                command += ["-map", "1:v"]
            command += ["-map", "0:a", f"-b:a:{index}", f"{k}k"]
            if self.video:
                command += [f"-b:v:{index}", f"{200 * (index + 1)}k"]
                streams.append(f"v:{index},a:{index},name:{k}k")
            else:
                streams.append(f"a:{index},name:{k}k")
        command += ["-c:a", "aac", "-ar", str(SAMPLE_RATE), "-ac", "2"]
        if self.video:
            gop = str(fps * self.segment_seconds)
            command += ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency"]
            command += ["-pix_fmt", "yuv420p", "-g", gop, "-keyint_min", gop, "-sc_threshold", "0"]
        command += ["-f", "hls", "-hls_time", str(self.segment_seconds)]
        command += ["-hls_list_size", str(self.list_size), "-hls_segment_type", "mpegts"]
        command += ["-hls_flags", "program_date_time+independent_segments"]
        command += ["-master_pl_name", "master.m3u8", "-var_stream_map", " ".join(streams)]
        command += ["-hls_segment_filename", "%v/seg_%05d.ts", "%v/index.m3u8"]
        return command

    def stop(self, *, end_list: bool = False) -> None:
        """Stop the encoder: the playlists stop advancing and are still served. With
        `end_list`, ffmpeg ends them with `#EXT-X-ENDLIST` as a stream that ends does; without,
        they stay as they were, as a stream whose encoder died."""
        if self._process is not None:
            end(self._process, signal.SIGINT if end_list else signal.SIGKILL)
            self._process = None

    def close(self) -> None:
        self.stop()
        self._server.close()

    # what is on disk

    def playlist(self, rendition: str) -> str:
        """The rendition's media playlist as now written ("" before the first)."""
        try:
            return (self.root / rendition / "index.m3u8").read_text()
        except FileNotFoundError:
            return ""

    def _last_listed(self, rendition: str) -> int:
        numbers = re.findall(r"^seg_(\d+)\.ts$", self.playlist(rendition), re.MULTILINE)
        return max((int(n) for n in numbers), default=-1)

    def segments(self, rendition: str) -> list[Path]:
        """The rendition's complete segments on disk, oldest first: those its playlist listed
        at some point (the playlist slides; the files stay)."""
        last = self._last_listed(rendition)
        found = []
        for path in (self.root / rendition).glob("seg_*.ts"):
            number = int(path.stem.removeprefix("seg_"))
            if number <= last:
                found.append((number, path))
        return [path for _, path in sorted(found)]

    def wait_for_segments(self, count: int, timeout: float | None = None) -> None:
        """Return once every rendition has `count` complete segments."""
        if timeout is None:
            timeout = READY_TIMEOUT + count * self.segment_seconds / self.readrate

        wait_until(
            lambda: all(len(self.segments(r)) >= count for r in self.renditions),
            f"{count} segments of each rendition",
            timeout,
            process=self._process,
            details=lambda: tail(self.log),
        )

    def requests(self, path: str) -> int:
        """How many times `path` (such as "/64k/seg_00003.ts") was asked for."""
        return self._server.requests(path)

    def request_counts(self) -> dict[str, int]:
        return self._server.request_counts()

    # serving

    def _respond(self, handler: _Handler) -> None:
        relative = urllib.parse.unquote(handler.path.split("?")[0]).lstrip("/")
        path = (self.root / relative).resolve()
        served = path.is_relative_to(self.root.resolve()) and path.is_file()
        body = b""
        if served and path.suffix == ".m3u8":
            body = _whole_playlist(path)
            served = bool(body)
        elif served:
            match = re.fullmatch(r"([^/]+)/seg_(\d+)\.ts", relative)
            served = match is not None and int(match[2]) <= self._last_listed(match[1])
            if served:
                body = path.read_bytes()
        if not served:
            handler.reply(404, "text/plain", b"not found\n")
            return
        content_type = CONTENT_TYPES.get(path.suffix, "application/octet-stream")
        handler.reply(200, content_type, body)


def _whole_playlist(path: Path) -> bytes:
    """A playlist's text once it is whole. ffmpeg renames media playlists into place; this
    also guards against a playlist caught while being written in place."""
    for _ in range(50):
        body = path.read_bytes()
        if body.startswith(b"#EXTM3U") and body.endswith(b"\n"):
            return body
        time.sleep(0.02)
    return b""


# -- misbehaving streams -----------------------------------------------------------------------


def make_mp3(path: Path, seconds: float = 8.0, seed: int = 0) -> bytes:
    """An MP3 stream of the generated signal, 128 kbit/s, bare frames (no ID3, no Xing)."""
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
        + ["-f", "lavfi", "-i", signal_source(seed), "-t", str(seconds)]
        + ["-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0"]
        + ["-map_metadata", "-1", "-f", "mp3", str(path)],
        check=True,
    )
    return path.read_bytes()


def make_ts_segments(directory: Path, count: int = 4, seed: int = 0) -> list[bytes]:
    """`count` MPEG-TS segments of about one second of AAC audio each, in sequence."""
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
        + ["-f", "lavfi", "-i", signal_source(seed), "-t", str(count)]
        + ["-c:a", "aac", "-b:a", "64k", "-f", "hls", "-hls_time", "1"]
        + ["-hls_playlist_type", "vod", "-hls_segment_filename", "seg_%d.ts", "vod.m3u8"],
        cwd=directory,
        check=True,
    )
    return [(directory / f"seg_{n}.ts").read_bytes() for n in range(count)]


class BadStreams(Started):
    """One HTTP server on loopback whose paths misbehave as streams do:

    - `/html`: 200 text/html, a page instead of audio;
    - `/stall`: audio/mpeg with ICY headers, `STALL_BYTES` of MP3 at once (with ICY metadata
      every `METAINT` bytes if asked), then nothing while holding the connection open;
    - `/badmeta`: audio/mpeg with `icy-metaint: METAINT` whether asked or not:
      `BADMETA_GOOD_BLOCKS` good blocks (titles "Good 1", ...), then after the next interval a
      length byte announcing 4080 bytes followed by only `BADMETA_GARBAGE` before the audio goes
      on (`2 * METAINT` bytes more, then the end): a reader that trusts the length byte takes
      audio for metadata and loses the framing;
    - `/icy`: a SHOUTcast v1 answer, status line `ICY 200 OK`, otherwise a sound stream of
      `ICY_BYTES` with titles "Icy 1", ... when asked;
    - `/stuck.m3u8`: a live media playlist (no ENDLIST) that never advances;
    - `/loop.m3u8`: a live media playlist whose media sequence goes 10, 11, 12, then back to 10,
      one step per request;
    - `/gap.m3u8`: a live media playlist of three one-second segments that slides one segment a
      second from its first request; segment `GAP_MISSING` answers 404;
    - `/drop`: an MP3 stream that closes after `DROP_AFTER` bytes, each connection going on
      where the last stopped (at any byte, not at a frame); `connections("/drop")` counts them.

    Audio goes out at `rate` bytes a second (128 kbit/s by default; 0 for at once), playlist
    segments at once.
    """

    METAINT = 8000
    STALL_BYTES = 16000
    BADMETA_GOOD_BLOCKS = 3
    BADMETA_GARBAGE = b"\xde\xad\xbe\xefStreamTi"
    ICY_BYTES = 48000
    DROP_AFTER = 24000
    GAP_MISSING = 1
    LOOP_SEQUENCES = (10, 11, 12)
    SEGMENT_SECONDS = 1

    def __init__(self, directory: Path, *, rate: int = 16000) -> None:
        self.directory = directory
        self.rate = rate
        self.mp3 = b""
        self.segments: list[bytes] = []
        self._server = _Server(self._respond, "bad-streams")
        self.port = self._server.port
        self._lock = threading.Lock()
        self._drop_position = 0
        self._gap_started: float | None = None

    @property
    def base(self) -> str:
        return self._server.base

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.mp3 = make_mp3(self.directory / "bad.mp3")
        self.segments = make_ts_segments(self.directory / "bad-ts")
        self._server.start()
        wait_until(lambda: answers(self.url("/html")), "the bad streams to answer")

    def close(self) -> None:
        """Stop serving; stalled connections are released and closed."""
        self._server.close()

    def requests(self, path: str) -> int:
        return self._server.requests(path)

    def connections(self, path: str) -> int:
        """How many connections asked for `path` (one request each: the server never keeps a
        connection for another)."""
        return self._server.requests(path)

    def segment_path(self, playlist: str, number: int) -> str:
        """The path of segment `number` of a playlist ("stuck", "loop" or "gap")."""
        return f"/seg/{playlist}/{number}.ts"

    # responses

    def _respond(self, handler: _Handler) -> None:
        path = handler.path.split("?")[0]
        wants_icy = handler.headers.get("Icy-MetaData", "").strip() == "1"
        if path == "/html":
            page = b"<!doctype html><title>Radio</title><p>Listen to our stream in the app.</p>\n"
            handler.reply(200, "text/html; charset=utf-8", page)
        elif path == "/stall":
            self._stall(handler, wants_icy)
        elif path == "/badmeta":
            self._badmeta(handler)
        elif path == "/icy":
            self._icy(handler, wants_icy)
        elif path == "/drop":
            self._drop(handler)
        elif path in ("/stuck.m3u8", "/loop.m3u8", "/gap.m3u8"):
            handler.reply(200, CONTENT_TYPES[".m3u8"], self._playlist(path).encode())
        elif match := re.fullmatch(r"/seg/(stuck|loop|gap)/(\d+)\.ts", path):
            number = int(match[2])
            if match[1] == "gap" and number == self.GAP_MISSING:
                handler.reply(404, "text/plain", b"not found\n")
            else:
                handler.reply(200, "video/mp2t", self.segments[number % len(self.segments)])
        else:
            handler.reply(404, "text/plain", b"not found\n")

    def _stream_head(self, handler: _Handler, name: str, metaint: int | None) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "audio/mpeg")
        handler.send_header("icy-name", name)
        handler.send_header("icy-br", "128")
        handler.send_header("icy-pub", "0")
        if metaint is not None:
            handler.send_header("icy-metaint", str(metaint))
        handler.end_headers()

    def _stall(self, handler: _Handler, wants_icy: bool) -> None:
        audio = self.mp3[: self.STALL_BYTES]
        self._stream_head(handler, "Stalling stream", self.METAINT if wants_icy else None)
        if wants_icy:
            audio = with_icy(audio, self.METAINT, lambda n: icy_block(b"StreamTitle='Stall';"))
        handler.wfile.write(audio)
        handler.wfile.flush()
        self._server.closing.wait()

    def _badmeta(self, handler: _Handler) -> None:
        self._stream_head(handler, "Bad metadata", self.METAINT)
        good = self.BADMETA_GOOD_BLOCKS
        out = with_icy(
            self.mp3[: good * self.METAINT],
            self.METAINT,
            lambda n: icy_block(f"StreamTitle='Good {n + 1}';".encode()),
        )
        # The next interval of audio, then a block announcing 4080 bytes that holds a few.
        out += self.mp3[good * self.METAINT : (good + 1) * self.METAINT]
        out += bytes([255]) + self.BADMETA_GARBAGE
        out += self.mp3[(good + 1) * self.METAINT : (good + 3) * self.METAINT]
        self._send(handler, out)

    def _icy(self, handler: _Handler, wants_icy: bool) -> None:
        # SHOUTcast v1 answers with a status line of its own and no HTTP version.
        handler.wfile.write(b"ICY 200 OK\r\nicy-name:Shoutcast v1\r\ncontent-type:audio/mpeg\r\n")
        handler.wfile.write(b"icy-br:128\r\nicy-pub:0\r\n")
        audio = self.mp3[: self.ICY_BYTES]
        if wants_icy:
            handler.wfile.write(f"icy-metaint:{self.METAINT}\r\n".encode())
            audio = with_icy(
                audio, self.METAINT, lambda n: icy_block(f"StreamTitle='Icy {n + 1}';".encode())
            )
        handler.wfile.write(b"\r\n")
        handler.close_connection = True
        self._send(handler, audio)

    def _drop(self, handler: _Handler) -> None:
        with self._lock:
            start = self._drop_position
            self._drop_position = (start + self.DROP_AFTER) % len(self.mp3)
        looped = self.mp3 + self.mp3
        self._stream_head(handler, "Dropping stream", None)
        self._send(handler, looped[start : start + self.DROP_AFTER])

    def _send(self, handler: _Handler, data: bytes) -> None:
        """Write `data` at the audio rate, giving up if the server closes."""
        step = max(1, self.rate // 8) if self.rate else len(data)
        began = time.monotonic()
        for offset in range(0, len(data), step):
            if self.rate:
                delay = began + offset / self.rate - time.monotonic()
                if self._server.closing.wait(max(0.0, delay)):
                    raise _Closing
            handler.wfile.write(data[offset : offset + step])
            handler.wfile.flush()

    def _playlist(self, path: str) -> str:
        name = path.removeprefix("/").removesuffix(".m3u8")
        with self._lock:
            if name == "stuck":
                sequence = 0
            elif name == "loop":
                count = self._server.requests(path) - 1
                sequence = self.LOOP_SEQUENCES[count % len(self.LOOP_SEQUENCES)]
            else:
                if self._gap_started is None:
                    self._gap_started = time.monotonic()
                sequence = int((time.monotonic() - self._gap_started) / self.SEGMENT_SECONDS)
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", f"#EXT-X-TARGETDURATION:{self.SEGMENT_SECONDS}"]
        lines.append(f"#EXT-X-MEDIA-SEQUENCE:{sequence}")
        for number in range(sequence, sequence + 3):
            lines += [f"#EXTINF:{self.SEGMENT_SECONDS}.000,", f"seg/{name}/{number}.ts"]
        return "\n".join(lines) + "\n"
