"""The stream benchmark's radio: endless 128 kbit/s MP3 streams served as Icecast serves them, by
one process.

Encoding hundreds of live streams would take many cores (one ffmpeg MP3 encoder costs about 3% of
one), so the audio is one short MP3 encoded once (`encode_loop`: ffmpeg, 128 kbit/s CBR at
44.1 kHz, no bit reservoir, so that every frame decodes on its own, and no ID3 or Xing header),
repeated at frame boundaries for ever: the bytes stay a valid MP3 stream. Stream n is
`/radio/n` (any n from 1); each connection to it starts at its own place in the loop (frame
n * 97), so no two streams send the same bytes at once.

A listener gets what Icecast 2.4 sends: an `HTTP/1.0 200 OK` header block with `icy-br`,
`icy-name` and, when it asked with `Icy-MetaData: 1`, `icy-metaint` (16000); then 64 KB at once
(--burst, as Icecast's burst on connect), then the stream in real time, in pieces: every
--interval (0.1 s) each listener gets the audio due since its connection at the loop's byte rate
(16,000 bytes/s), computed from the clock, so that a late tick sends more and loses nothing.
Listeners are spread over 10 groups served one after the other (one every --interval / 10), as
mounts fed by different sources are. With metadata, a block follows every `metaint` bytes of
audio: the first names the current title, later ones are empty (a zero byte) until the title
changes, every --title-seconds (20) at a time of the stream's own. A listener whose unsent data
(the transport's buffer, what the kernel did not take) exceeds --queue-size (512 KB, Icecast's
default) is dropped, as Icecast drops a client that fell that far behind.

It counts, per stream: connections, audio bytes sent (metadata blocks left out), all bytes sent,
the pieces sent (fewer than one an interval when the farm fell behind), the largest backlog of a listener and the listeners dropped; and its own timeliness: how late each
tick ran against its schedule (mean, 99th percentile, max), the share of time spent in ticks, and
its CPU time. The same port answers the benchmark's control requests: `GET /__stats` (those
figures), `POST /__freeze` (send nothing more from now on, and answer the figures at that
instant: what every listener was sent, final), `POST /__reset` (close every listener, clear the
figures, send again).

Usage: python benchmarks/stream_farm.py --mp3 FILE --port-file FILE [--interval S]
       [--burst BYTES] [--metaint BYTES] [--title-seconds S] [--queue-size BYTES]
It writes {"port", "byte_rate", "loop_seconds", "frames"} to FILE (atomically) once it listens,
and serves until SIGTERM or SIGINT.
"""

import argparse
import asyncio
import email.utils
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

BITRATE_K = 128
SAMPLE_RATE = 44100
GROUPS = 10  # listeners are served in this many groups, one after the other in an interval
MAX_REQUEST = 8192
FRAME_STRIDE = 97  # stream n starts at frame n * FRAME_STRIDE of the loop
# MPEG-1 layer III bit rates (kbit/s) and sample rates by header index.
_BITRATES = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)
_RATES = (44100, 48000, 32000)


def encode_loop(path: Path, seconds: float) -> None:
    """Encode `seconds` of a signal to an MP3 at 128 kbit/s that can be repeated at its frame
    boundaries (no bit reservoir, no ID3 or Xing header): a tone whose pitch wanders, with a
    little noise, so that the audio is not silence that an encoder squeezes."""
    tone = "sin(2*PI*(330*t-120*cos(0.9*t)))"
    source = f"aevalsrc=exprs='0.3*{tone}+0.05*(2*random(0)-1)':s={SAMPLE_RATE}:d={seconds}"
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
    command += ["-f", "lavfi", "-i", source + ",aformat=channel_layouts=stereo"]
    command += ["-c:a", "libmp3lame", "-b:a", f"{BITRATE_K}k", "-reservoir", "0"]
    command += ["-id3v2_version", "0", "-write_xing", "0", "-map_metadata", "-1"]
    command += ["-f", "mp3", str(path)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ffmpeg could not encode the loop: {done.stderr.strip()[-2000:]}")


def mp3_frames(data: bytes) -> list[int]:
    """The offsets of the MPEG-1 layer III frames that follow each other from the start of
    `data`, the end of the last whole one appended; ValueError if it is not such a stream."""
    offsets = []
    at = 0
    while at + 4 <= len(data):
        b1, b2 = data[at + 1], data[at + 2]
        if data[at] != 0xFF or b1 & 0xFE != 0xFA:
            raise ValueError(f"no MPEG-1 layer III frame header at byte {at}")
        bitrate, rate = _BITRATES[b2 >> 4] * 1000, _RATES[(b2 >> 2) & 3]
        length = 144 * bitrate // rate + ((b2 >> 1) & 1)
        if not bitrate or at + length > len(data):
            break
        offsets.append(at)
        at += length
    offsets.append(at)
    if len(offsets) < 2:
        raise ValueError("no whole frame")
    return offsets


@dataclass
class StreamCounts:
    connections: int = 0
    audio: int = 0  # audio bytes sent, metadata blocks left out
    sent: int = 0  # every byte of the bodies sent
    pieces: int = 0  # writes (the burst is one)
    max_backlog: int = 0  # bytes a listener's transport held unsent, at most
    dropped: int = 0  # listeners dropped for a backlog over the queue size


@dataclass
class Ticks:
    """How late the farm's ticks ran against their schedule, and how long they took."""

    count: int = 0
    late_sum: float = 0.0
    late_max: float = 0.0
    busy: float = 0.0
    lates: list[float] = field(default_factory=list)
    since: float = field(default_factory=time.monotonic)
    cpu_since: float = 0.0

    def report(self) -> dict[str, Any]:
        lates = sorted(self.lates)
        p99 = lates[min(len(lates) - 1, int(len(lates) * 0.99))] if lates else 0.0
        elapsed = max(time.monotonic() - self.since, 1e-9)
        return {
            "ticks": self.count,
            "late_mean_ms": self.late_sum / max(self.count, 1) * 1000,
            "late_p99_ms": p99 * 1000,
            "late_max_ms": self.late_max * 1000,
            "busy": self.busy / elapsed,
            "seconds": elapsed,
            "cpu_s": own_cpu() - self.cpu_since,
        }


def own_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class Radio:
    def __init__(self, loop_audio: bytes, frames: list[int], args: argparse.Namespace) -> None:
        self.audio = loop_audio
        self.view = memoryview(loop_audio)
        self.frames = frames
        self.seconds = (len(frames) - 1) * 1152 / SAMPLE_RATE
        self.byte_rate = len(loop_audio) / self.seconds
        self.interval = args.interval
        self.burst = args.burst
        self.metaint = args.metaint
        self.title_seconds = args.title_seconds
        self.queue_size = args.queue_size
        self.started = time.monotonic()
        self.listeners: set[Listener] = set()
        self.groups: list[set[Listener]] = [set() for _ in range(GROUPS)]
        self.counts: dict[str, StreamCounts] = {}
        self.ticks = Ticks(cpu_since=own_cpu())
        self.frozen = False
        self.next_id = 0

    def title(self, stream: int, now: float) -> str:
        song = int((now - self.started) / self.title_seconds + stream * 0.37)
        return f"Bench Radio {stream} - Song {song}"

    def stats(self) -> dict[str, Any]:
        return {
            "streams": {path: vars(counts) for path, counts in self.counts.items()},
            "listeners": len(self.listeners),
            "frozen": self.frozen,
            "farm": self.ticks.report(),
        }

    def reset(self) -> None:
        for listener in list(self.listeners):
            listener.transport.close()
        self.listeners.clear()
        for group in self.groups:
            group.clear()
        self.counts.clear()
        self.ticks = Ticks(cpu_since=own_cpu())
        self.frozen = False

    async def run_ticks(self) -> None:
        step = self.interval / GROUPS
        number = 0
        scheduled = time.monotonic()
        while True:
            now = time.monotonic()
            if scheduled > now:
                await asyncio.sleep(scheduled - now)
                now = time.monotonic()
            late = now - scheduled
            self.ticks.count += 1
            self.ticks.late_sum += late
            self.ticks.late_max = max(self.ticks.late_max, late)
            self.ticks.lates.append(late)
            if not self.frozen:
                for listener in list(self.groups[number % GROUPS]):
                    listener.send(now)
            self.ticks.busy += time.monotonic() - now
            number += 1
            scheduled += step
            if scheduled < time.monotonic() - self.interval:
                scheduled = time.monotonic()  # far behind: start the schedule again from now


class Listener(asyncio.Protocol):
    """One HTTP connection: a request, then a stream (or a control answer)."""

    def __init__(self, radio: Radio) -> None:
        self.radio = radio
        self.request = b""
        self.transport: asyncio.Transport
        self.group = 0
        self.counts = StreamCounts()
        self.stream = 0
        self.position = 0  # offset in the loop of the next audio byte
        self.metaint = 0
        self.until_meta = 0
        self.last_title: str | None = None
        self.connected = 0.0
        self.audio_sent = 0
        self.streaming = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # (uvloop's is no subclass)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self.streaming:
            return  # a listener says nothing more
        self.request += data
        end = self.request.find(b"\r\n\r\n")
        if end < 0:
            if len(self.request) > MAX_REQUEST:
                self.transport.close()
            return
        lines = self.request[:end].decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.partition(" ")[0]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.route(method, path, headers)

    def answer(self, status: str, body: bytes, kind: str = "application/json") -> None:
        head = f"HTTP/1.0 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        self.transport.write(head.encode() + b"Connection: close\r\n\r\n" + body)
        self.transport.close()

    def route(self, method: str, path: str, headers: dict[str, str]) -> None:
        radio = self.radio
        if path == "/__stats":
            self.answer("200 OK", json.dumps(radio.stats()).encode())
            return
        if path == "/__freeze" and method == "POST":
            radio.frozen = True
            self.answer("200 OK", json.dumps(radio.stats()).encode())
            return
        if path == "/__reset" and method == "POST":
            radio.reset()
            self.answer("200 OK", b'{"reset": true}')
            return
        name = path.removeprefix("/radio/").removesuffix(".mp3")
        if method != "GET" or not path.startswith("/radio/") or not name.isdigit() or name == "0":
            self.answer("404 Not Found", b"no such stream\n", "text/plain")
            return
        self.start(int(name), path, headers.get("icy-metadata") == "1")

    def start(self, stream: int, path: str, metadata: bool) -> None:
        radio = self.radio
        self.stream = stream
        self.counts = radio.counts.setdefault(path, StreamCounts())
        self.counts.connections += 1
        self.group = radio.next_id % GROUPS
        radio.next_id += 1
        frames = radio.frames
        self.position = frames[(stream * FRAME_STRIDE) % (len(frames) - 1)]
        head = [
            "HTTP/1.0 200 OK",
            "Server: Icecast 2.4.4",
            f"Date: {email.utils.formatdate(usegmt=True)}",
            "Content-Type: audio/mpeg",
            "Cache-Control: no-cache, no-store",
            "Expires: Mon, 26 Jul 1997 05:00:00 GMT",
            "Pragma: no-cache",
            f"icy-br:{BITRATE_K}",
            f"icy-name:Bench Radio {stream}",
            "icy-pub:0",
        ]
        if metadata:
            self.metaint = self.until_meta = radio.metaint
            head.append(f"icy-metaint:{radio.metaint}")
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode())
        self.connected = time.monotonic()
        self.streaming = True
        radio.listeners.add(self)
        radio.groups[self.group].add(self)
        if not radio.frozen:
            self.send(self.connected)

    def send(self, now: float) -> None:
        radio = self.radio
        due = radio.burst + int((now - self.connected) * radio.byte_rate) - self.audio_sent
        if due <= 0:
            return
        view, size = radio.view, len(radio.audio)
        pieces: list[bytes | memoryview] = []
        audio = 0
        while due > 0:
            take = min(due, size - self.position)
            if self.metaint:
                take = min(take, self.until_meta)
            pieces.append(view[self.position : self.position + take])
            self.position = (self.position + take) % size
            due -= take
            audio += take
            if self.metaint:
                self.until_meta -= take
                if not self.until_meta:
                    pieces.append(self.block(now))
                    self.until_meta = self.metaint
        data = b"".join(pieces)
        self.audio_sent += audio
        self.counts.audio += audio
        self.counts.sent += len(data)
        self.counts.pieces += 1
        self.transport.write(data)
        backlog = self.transport.get_write_buffer_size()
        if backlog > self.counts.max_backlog:
            self.counts.max_backlog = backlog
        if backlog > radio.queue_size:
            self.counts.dropped += 1
            self.transport.abort()

    def block(self, now: float) -> bytes:
        title = self.radio.title(self.stream, now)
        if title == self.last_title:
            return b"\0"
        self.last_title = title
        text = f"StreamTitle='{title}';StreamUrl='';".encode()
        length = -(-len(text) // 16)
        return bytes([length]) + text.ljust(length * 16, b"\0")

    def connection_lost(self, exc: Exception | None) -> None:
        self.radio.listeners.discard(self)
        self.radio.groups[self.group].discard(self)


async def serve(args: argparse.Namespace) -> None:
    data = args.mp3.read_bytes()
    frames = mp3_frames(data)
    radio = Radio(data[: frames[-1]], frames, args)
    loop = asyncio.get_running_loop()
    sock = socket.create_server(("127.0.0.1", args.port), backlog=2048)
    server = await loop.create_server(lambda: Listener(radio), sock=sock)
    ticker = asyncio.create_task(radio.run_ticks())
    written = args.port_file.with_name(args.port_file.name + ".part")
    facts = {
        "port": sock.getsockname()[1],
        "byte_rate": radio.byte_rate,
        "loop_seconds": radio.seconds,
        "frames": len(frames) - 1,
    }
    written.write_text(json.dumps(facts))
    os.replace(written, args.port_file)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        ticker.cancel()
        radio.reset()
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mp3", type=Path, required=True, help="the MP3 loop (encode_loop)")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: free)")
    parser.add_argument(
        "--interval", type=float, default=0.1, help="seconds between two pieces of a stream"
    )
    parser.add_argument(
        "--burst", type=int, default=65536, help="bytes of audio sent at once on connection"
    )
    parser.add_argument("--metaint", type=int, default=16000, help="icy-metaint")
    parser.add_argument(
        "--title-seconds", type=float, default=20.0, help="seconds between title changes"
    )
    parser.add_argument(
        "--queue-size",
        type=int,
        default=512 * 1024,
        help="unsent bytes over which a listener is dropped",
    )
    args = parser.parse_args()
    if args.interval <= 0 or args.metaint <= 0 or args.burst < 0 or args.title_seconds <= 0:
        parser.error("--interval, --metaint and --title-seconds must be positive, --burst >= 0")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
