"""Live streams: `dlweb stream` (one agent, many streams in one event loop) beside one ffmpeg per
stream.

N concurrent 128 kbit/s Icecast-style MP3 streams with ICY metadata, served in real time by one
process of the benchmark's own (benchmarks/stream_farm.py: one MP3 loop encoded once, sent to
each listener in pieces every --piece-seconds (0.1), a title change every 20 s), are recorded for
--seconds (60) in the same run by:

1. dlweb: `python -m dlweb stream URL... --duration D --chunk-seconds S --json`, pinned to one
   core, storing into a local cluster started with `dlweb up` (1 storage node, replica 1);
2. ffmpeg (the peer), the obvious alternative: one `ffmpeg -i URL -c copy -f mp3 FILE` per
   stream (with `-id3v2_version 0 -write_xing 0`, so that the file holds the stream's frames and
   nothing else), all pinned to the same core; at most --ffmpeg-max (200) at once, a larger step
   being compared with ffmpeg's figure at that number.

Everything else (the farm, the cluster, this process) runs on the other cores. Each side's CPU
(user + system, from /proc) is taken over the same window: from 5 s after every stream connected
until 5 s before the recording ends; so the figure is CPU per stream per minute of steady
recording, the agent's chunk inserts included (a chunk every --chunk-seconds, 10). The CPU of the
agent's whole run (start-up, connections, the last inserts, exit) is shown beside it.

Then the farm stops sending (the agent's window ends with this `freeze`): what each listener was
sent is final, and every audio byte (ICY metadata left out) must be in the recording. Per stream,
the agent's report must say exactly the bytes the farm sent, one connection, no gap, no error;
the chunk logs read back from the cluster must add up to the same bytes, and the chunks of
--verify streams (4) must be those bytes exactly. ffmpeg is stopped by one SIGINT while the
streams still flow (it writes its file 256 KB at a time, and waits for a next packet before it
ends: stopped on a silent stream it would need a second signal, which leaves the rest unwritten);
its file must hold what was sent but for the last second in flight, and the files of --verify
streams must be those bytes exactly. How far each side fell behind is sampled every 0.5 s: the
bytes waiting in its sockets' receive queues (/proc/net/tcp), in seconds of audio (a piece just
arrived counts). A configuration is held when nothing was lost, nothing reconnected and it never
fell more than 5 s behind.

With --ramp STEP, the agent alone then takes STEP more streams at a time while it holds. With
--icecast K (10), K mounts of Debian's icecast2, each fed the same MP3 by `ffmpeg -re -c copy` a
frame at a time, are recorded by the agent (a title set through the admin API half-way must
reach its report) and then by K ffmpegs: CPU per stream-minute against a real Icecast.

Usage: python benchmarks/bench_streams.py [--streams 50,100,200,300] [--seconds 60]
       [--rounds R] [--ffmpeg-max N] [--skip-ffmpeg] [--ramp STEP] [--piece-seconds S]
       [--chunk-seconds S] [--icecast K] [--verify K] [--py-spy DIR] [--dir DIR] [--keep]
       [--json FILE]
"""

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import (  # noqa: E402
    MB,
    BenchError,
    children_cpu,
    cluster_down,
    cluster_pids,
    cluster_up,
    cpu_seconds,
    dlweb,
    run_benchmark,
    stop,
)
from stream_farm import FRAME_STRIDE, encode_loop, mp3_frames  # noqa: E402

from archive.cluster import ClusterClient  # noqa: E402
from archive.config import load_config  # noqa: E402
from archive.streams.archived import stream_logs  # noqa: E402
from deploy.launcher import CONFIG_FILE  # noqa: E402
from deploy.processes import RUN_DIR  # noqa: E402
from deploy.testing.icecast import Icecast  # noqa: E402

FARM = Path(__file__).resolve().parent / "stream_farm.py"
LOOP_SECONDS = 30.0  # of audio in the farm's MP3 loop
READY_TIMEOUT = 60.0
CONNECT_TIMEOUT = 60.0  # for every stream to connect
STOP_TIMEOUT = 10.0
WARMUP = 5.0  # seconds after every stream connected before the CPU window opens
FREEZE_BEFORE = 5.0  # seconds before the recording's end when the farm stops sending
STORE_GRACE = 150.0  # seconds the agent may take after its duration (its own grace is 120 s)
SAMPLE_INTERVAL = 0.5
LAG_LIMIT = 5.0  # seconds of audio waiting unread, over which a side fell behind
SOURCE_PIECES = 0.9  # the least share of the pieces due a farm that keeps real time sends
FFMPEG_IN_FLIGHT = 1.0  # seconds of audio sent but unread when an ffmpeg stopped
TARGET_STREAMS = 200  # on one core, with no gap and nothing lost
TARGET_RATIO = 5.0  # ffmpeg CPU per stream / the agent's
DEFAULT_STEPS = (50, 100, 200, 300)
RAMP_MAX = 2000


# -- the farm ------------------------------------------------------------------------------------


@dataclass
class Farm:
    port: int
    byte_rate: float
    pid: int
    loop: bytes  # the MP3 loop, whole frames
    frames: list[int]  # offsets of its frames, and its end

    def url(self, stream: int) -> str:
        return f"http://127.0.0.1:{self.port}/radio/{stream}"

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            result: dict[str, Any] = json.load(answer)
            return result

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/__stats")

    def freeze(self) -> dict[str, Any]:
        """Stop sending; what each listener was sent until now, final."""
        return self._call("POST", "/__freeze")

    def reset(self) -> None:
        self._call("POST", "/__reset")

    def audio(self, stream: int, size: int) -> bytes:
        """The first `size` audio bytes the farm sends on a connection to stream `stream`."""
        count = len(self.frames) - 1
        start = self.frames[(stream * FRAME_STRIDE) % count]
        repeats = -(-(start + size) // len(self.loop))
        return (self.loop * repeats)[start : start + size]


@contextmanager
def running_farm(work: Path, piece_seconds: float) -> Iterator[Farm]:
    loop_path = work / "loop.mp3"
    encode_loop(loop_path, LOOP_SECONDS)
    data = loop_path.read_bytes()
    frames = mp3_frames(data)
    port_file = work / "farm.json"
    log_path = work / "farm.log"
    port_file.unlink(missing_ok=True)
    command = [sys.executable, str(FARM), "--mp3", str(loop_path), "--port-file", str(port_file)]
    command += ["--interval", f"{piece_seconds:g}"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the farm did not start:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.05)
        facts = json.loads(port_file.read_text())
        yield Farm(facts["port"], facts["byte_rate"], process.pid, data[: frames[-1]], frames)
    finally:
        stop(process)


# -- sampling ------------------------------------------------------------------------------------


def receive_queues(port: int) -> list[int]:
    """Bytes waiting unread in each established client socket connected to `port`."""
    queues: list[int] = []
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return queues
    for line in lines:
        fields = line.split()
        if len(fields) < 5 or fields[3] != "01" or int(fields[2].rpartition(":")[2], 16) != port:
            continue
        queues.append(int(fields[4].partition(":")[2], 16))
    return queues


@dataclass
class Lag:
    """The most audio waiting unread in the recorder's sockets, in one socket and in all."""

    byte_rate: float
    max_bytes: int = 0
    max_total: int = 0
    samples: int = 0

    def sample(self, port: int) -> None:
        queues = receive_queues(port)
        self.samples += 1
        if queues:
            self.max_bytes = max(self.max_bytes, max(queues))
            self.max_total = max(self.max_total, sum(queues))

    @property
    def seconds(self) -> float:
        return self.max_bytes / self.byte_rate


def pinned(core: int) -> Callable[[], None]:
    def pin() -> None:
        os.sched_setaffinity(0, {core})

    return pin


def pss_mb(pids: list[int]) -> float:
    """The proportional set size of the processes, summed (pages they share divided among them)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total * 1024 / MB


class Window:
    """The steady part of a recording: wait until `n` listeners connected, sample the lag, take
    the CPU of `pids` from WARMUP later until the freeze, then freeze the farm."""

    def __init__(
        self, farm: Farm, n: int, seconds: float, pids: list[int], piece_seconds: float
    ) -> None:
        self.farm, self.n, self.seconds, self.pids = farm, n, seconds, pids
        self.piece_seconds = piece_seconds
        self.streamed = 0.0  # seconds from the last connection to the freeze
        self.lag = Lag(farm.byte_rate)
        self.cpu = 0.0
        self.window = 0.0
        self.connect_s = 0.0
        self.memory_mb = 0.0
        self.sent: dict[str, Any] = {}

    def run(
        self,
        started: float,
        alive: Callable[[], bool],
        profile: "Profiler | None" = None,
        stop: Callable[[], None] | None = None,
    ) -> None:
        """Sample until the window closes, then stop the farm sending (`freeze`), or first
        call `stop` (which stops the recorders) and then take the farm's final figures."""
        deadline = time.monotonic() + CONNECT_TIMEOUT
        while self.farm.stats()["listeners"] < self.n:
            if not alive():
                raise BenchError("a recorder exited before every stream connected")
            if time.monotonic() > deadline:
                listening = self.farm.stats()["listeners"]
                raise BenchError(
                    f"{listening} of {self.n} streams connected in {CONNECT_TIMEOUT} s"
                )
            time.sleep(0.1)
        connected = time.monotonic()
        self.connect_s = connected - started
        opens, freezes = connected + WARMUP, connected + self.seconds - FREEZE_BEFORE
        self._sample_until(opens, alive)
        self.lag = Lag(self.farm.byte_rate)  # not the bursts on connection
        cpu, opened = cpu_seconds(self.pids), time.monotonic()
        if profile is not None:
            profile.start()
        try:
            self._sample_until(freezes, alive)
        finally:
            if profile is not None:
                profile.stop()
        self.cpu = cpu_seconds(self.pids) - cpu
        self.window = time.monotonic() - opened
        self.memory_mb = pss_mb(self.pids)
        self.streamed = time.monotonic() - connected
        if stop is None:
            self.sent = self.farm.freeze()
            self.lag.sample(self.farm.port)
        else:
            self.lag.sample(self.farm.port)
            stop()
            time.sleep(SAMPLE_INTERVAL)  # the farm meets the closed connections
            self.sent = self.farm.freeze()

    def _sample_until(self, moment: float, alive: Callable[[], bool]) -> None:
        while time.monotonic() < moment:
            if not alive():
                raise BenchError("a recorder exited before the end of the recording")
            self.lag.sample(self.farm.port)
            time.sleep(min(SAMPLE_INTERVAL, max(0.0, moment - time.monotonic())))

    def figures(self) -> dict[str, Any]:
        farm = self.sent["farm"]
        streams = self.sent["streams"].values()
        pieces = sum(s["pieces"] for s in streams) / self.n / self.streamed
        return {
            "pieces_per_s": pieces,
            # the farm kept real time, in pieces of the size asked
            "source_ok": pieces >= SOURCE_PIECES / self.piece_seconds,
            "window_s": self.window,
            "cpu_s": self.cpu,
            "core_share": self.cpu / self.window,
            "ms_per_stream_min": self.cpu * 1000 / self.n / (self.window / 60),
            "connect_s": self.connect_s,
            "lag_s": self.lag.seconds,
            "lag_total_mb": self.lag.max_total / MB,
            "pss_mb": self.memory_mb,
            "farm": {
                "cpu_share": farm["cpu_s"] / farm["seconds"],
                "busy": farm["busy"],
                "late_p99_ms": farm["late_p99_ms"],
                "late_max_ms": farm["late_max_ms"],
                "max_backlog": max((s["max_backlog"] for s in streams), default=0),
                "dropped": sum(s["dropped"] for s in streams),
            },
        }


# -- profiling -----------------------------------------------------------------------------------


class Profiler:
    """py-spy recording of the agent during the window, as collapsed stacks."""

    def __init__(self, pid: int, output: Path) -> None:
        self.pid, self.output = pid, output
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        command = ["py-spy", "record", "--pid", str(self.pid), "--format", "raw", "--nolineno"]
        # Not stopping the agent for each sample: each stop would wake its event loop.
        command += ["--gil", "--nonblocking", "--rate", "100", "--output", str(self.output)]
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if "Sampling" in line:
                return
        raise BenchError(f"py-spy did not start sampling: exit {self._process.wait()}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            self._process.communicate(timeout=STOP_TIMEOUT)


# Where the agent's time goes, by the files that stand for each part (the first that matches,
# walking a stack from its leaf; code in C, such as SHA-256, counts in the Python that called it).
PROFILE_PARTS = (
    ("frame scanning (archive/streams/frames.py)", ("streams/frames.py",)),
    ("ICY demuxing (crawler/stream/icy.py)", ("stream/icy.py",)),
    ("HTTP body parsing (h11)", ("h11/",)),
    (
        "inserts into the cluster (store, cluster client, aiohttp, HIP)",
        (
            "stream/store.py",
            "archive/cluster/",
            "archive/hip/",
            "archive/pack.py",
            "archive/insert_calls.py",
            "archive/jsonwire.py",
            "aiohttp/",
            "yarl/",
            "multidict/",
        ),
    ),
    ("logging", ("logging/",)),
    (
        "chunks, points, titles, SHA-256, logs (crawler/stream/recorder.py)",
        ("stream/recorder.py", "streams/log.py"),
    ),
    (
        "socket reads, event loop (crawler/stream/http.py, link.py, asyncio, uvloop)",
        ("stream/http.py", "stream/link.py", "asyncio/", "selectors.py", "uvloop"),
    ),
)


def profile_summary(path: Path, count: int = 15) -> dict[str, Any]:
    """Own time by function, and time by part of the agent (each sample counted once, in the
    part of the innermost frame that names one), as shares of the samples."""
    own: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        samples = int(number)
        total += samples
        frames = stack.split(";")
        own[frames[-1]] += samples
        for frame in reversed(frames):
            part = next((name for name, keys in PROFILE_PARTS if any(k in frame for k in keys)), "")
            if part:
                parts[part] += samples
                break
        else:
            parts["other"] += samples
    total = total or 1
    return {
        "samples": total,
        "own": [(frame, n / total) for frame, n in own.most_common(count)],
        "parts": [(name, n / total) for name, n in parts.most_common()],
    }


# -- dlweb ---------------------------------------------------------------------------------------


def reports_of(path: Path) -> dict[str, dict[str, Any]]:
    reports = {}
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            reports[report["url"]] = report
    return reports


async def read_back(
    config: Path, urls: list[str], farm: Farm | None = None, verify: int = 0
) -> tuple[dict[str, int], int]:
    """What the cluster holds of each stream (the sizes its chunk logs add up to), and how many
    of the first `verify` streams' chunks are, end to end, the bytes the farm sent."""
    stored: dict[str, int] = {}
    exact = 0
    async with ClusterClient(load_config(config), "bench-streams") as client:
        for number, url in enumerate(urls, 1):
            logs = await stream_logs(client, url)
            stored[url] = sum(log.size for log in logs)
            if farm is None or number > verify:
                continue
            pieces = [await client.get_content(log.chunk) for log in logs if log.chunk]
            recorded = b"".join(pieces)
            if recorded == farm.audio(number, len(recorded)):
                exact += 1
    return stored, exact


def bench_agent(
    work: Path, farm: Farm, n: int, args: argparse.Namespace, core: int, tag: str
) -> dict[str, Any]:
    data = work / f"cluster-{tag}"
    config = data / CONFIG_FILE
    urls = [farm.url(i) for i in range(1, n + 1)]
    out, log = work / f"agent-{tag}.jsonl", work / f"agent-{tag}.log"
    try:
        cluster_up(data, 1, 1)
        cluster = list(cluster_pids(data / RUN_DIR).values())
        farm.reset()
        command = dlweb("stream", *urls, "--duration", f"{args.seconds:g}", "--json")
        command += ["--chunk-seconds", f"{args.chunk_seconds:g}", "-c", str(config)]
        before, cluster_cpu = children_cpu(), cpu_seconds(cluster)
        started = time.monotonic()
        with out.open("wb") as stdout, log.open("wb") as stderr:
            process = subprocess.Popen(
                command, stdout=stdout, stderr=stderr, preexec_fn=pinned(core)
            )
        profile = None
        if args.py_spy is not None:
            profile = Profiler(process.pid, args.py_spy / f"agent-{tag}.txt")
        window = Window(farm, n, args.seconds, [process.pid], args.piece_seconds)
        try:
            window.run(started, lambda: process.poll() is None, profile)
            try:
                process.wait(args.seconds + STORE_GRACE)
            except subprocess.TimeoutExpired:
                raise BenchError(f"dlweb stream did not exit:\n{log.read_text()[-4000:]}") from None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        whole_s, whole_cpu = time.monotonic() - started, children_cpu() - before
        cluster_cpu = cpu_seconds(cluster) - cluster_cpu
        reports = reports_of(out)
        stored, exact = asyncio.run(read_back(config, urls, farm, min(args.verify, n)))
    finally:
        cluster_down(data)
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
    figures = window.figures()
    streams = window.sent["streams"]
    sent = {url: streams.get(f"/radio/{i}", {}) for i, url in enumerate(urls, 1)}
    lost, extra, stored_short, gaps, errors, reconnects = [], 0, 0, 0, Counter[str](), 0
    for url in urls:
        report, audio = reports.get(url), sent[url].get("audio", 0)
        if report is None:
            errors["no report"] += 1
            lost.append(audio)
            continue
        lost.append(max(0, audio - report["bytes"]))
        extra += max(0, report["bytes"] - audio)
        stored_short += max(0, report["bytes"] - stored.get(url, 0))
        gaps += len(report["gaps"])
        errors.update(report["errors"])
        reconnects += max(0, report["connections"] - 1) + max(
            0, sent[url].get("connections", 0) - 1
        )
    stderr_text = log.read_text(errors="replace")
    store_failures = stderr_text.count("insert failed") + stderr_text.count("not stored")
    figures.update(
        n=n,
        exit=process.returncode,
        whole_s=whole_s,
        whole_cpu_s=whole_cpu,
        whole_ms_per_stream_min=whole_cpu * 1000 / n / (args.seconds / 60),
        cluster_cpu_s=cluster_cpu,
        recorded_mb=sum(r["bytes"] for r in reports.values()) / MB,
        lost_bytes=sum(lost),
        lost_streams=sum(1 for b in lost if b),
        extra_bytes=extra,
        stored_short_bytes=stored_short,
        verified=exact,
        verify=min(args.verify, n),
        gaps=gaps,
        errors=dict(errors),
        reconnects=reconnects,
        store_failures=store_failures,
    )
    problems = []
    if process.returncode != 0:
        problems.append(f"exit {process.returncode}")
    if figures["lost_bytes"]:
        problems.append(
            f"{figures['lost_bytes']:,} bytes lost on {figures['lost_streams']} streams"
        )
    if extra:
        problems.append(f"{extra:,} bytes more than sent")
    if stored_short:
        problems.append(f"{stored_short:,} bytes recorded but not in the cluster")
    if exact < figures["verify"]:
        problems.append(f"{figures['verify'] - exact} verified streams differ from what was sent")
    if gaps or errors or reconnects:
        problems.append(f"{gaps} gaps, errors {dict(errors)}, {reconnects} reconnections")
    if figures["lag_s"] > LAG_LIMIT:
        problems.append(f"fell {figures['lag_s']:.1f} s behind")
    if figures["farm"]["dropped"]:
        problems.append(f"the farm dropped {figures['farm']['dropped']} listeners")
    if not figures["source_ok"]:
        problems.append(source_late(figures, args))
    if profile is not None:
        figures["profile"] = profile_summary(profile.output)
    figures["problems"] = problems
    figures["held"] = not problems
    if problems:
        figures["log_tail"] = stderr_text[-3000:]
    return figures


def source_late(figures: dict[str, Any], args: argparse.Namespace) -> str:
    return (
        f"the farm fell behind real time ({figures['pieces_per_s']:.1f} pieces a second per"
        f" stream, not {1 / args.piece_seconds:g}; ticks late by"
        f" {figures['farm']['late_p99_ms']:.0f} ms at p99): no measurement at this piece size"
    )


# -- ffmpeg --------------------------------------------------------------------------------------


def bench_ffmpeg(
    work: Path, farm: Farm, n: int, args: argparse.Namespace, core: int, tag: str
) -> dict[str, Any]:
    folder = work / f"ffmpeg-{tag}"
    folder.mkdir()
    farm.reset()
    processes: list[subprocess.Popen[bytes]] = []

    def stop_all() -> None:
        """One SIGINT while the streams flow: each ffmpeg ends its file at its next packet and
        exits. (ffmpeg writes its file 256 KB at a time: stopped once its source fell silent,
        it waits for a packet that never comes, and a second signal leaves the rest unwritten.)"""
        for process in processes:
            process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in processes:
            with suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))

    before = children_cpu()
    started = time.monotonic()
    try:
        for stream in range(1, n + 1):
            command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"]
            command += ["-i", farm.url(stream), "-c", "copy", "-f", "mp3"]
            command += ["-id3v2_version", "0", "-write_xing", "0", str(folder / f"{stream}.mp3")]
            with (folder / f"{stream}.log").open("wb") as log:
                processes.append(
                    subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        preexec_fn=pinned(core),
                    )
                )
        window = Window(farm, n, args.seconds, [p.pid for p in processes], args.piece_seconds)
        window.run(started, lambda: all(p.poll() is None for p in processes), stop=stop_all)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    whole_s, whole_cpu = time.monotonic() - started, children_cpu() - before
    figures = window.figures()
    lost, in_flight, errors, exact = [], 0, 0, 0
    allowance = int(farm.byte_rate * FFMPEG_IN_FLIGHT)
    for stream in range(1, n + 1):
        sent = window.sent["streams"].get(f"/radio/{stream}", {})
        path = folder / f"{stream}.mp3"
        recorded = path.read_bytes() if path.exists() else b""
        missing = sent.get("audio", 0) - len(recorded)
        if missing > allowance:
            lost.append(missing)
        elif missing > 0:
            in_flight += missing
        if stream <= args.verify and recorded == farm.audio(stream, len(recorded)):
            exact += 1
        if (folder / f"{stream}.log").read_bytes().strip():
            errors += 1
    reconnects = sum(max(0, s["connections"] - 1) for s in window.sent["streams"].values())
    verify = min(args.verify, n)
    figures.update(
        n=n,
        whole_s=whole_s,
        whole_cpu_s=whole_cpu,
        whole_ms_per_stream_min=whole_cpu * 1000 / n / (args.seconds / 60),
        lost_bytes=sum(lost),
        lost_streams=len(lost),
        in_flight_bytes=in_flight,
        verified=exact,
        verify=verify,
        logged_errors=errors,
        reconnects=reconnects,
        exits=dict(Counter(p.returncode for p in processes)),
    )
    problems = []
    if lost:
        problems.append(f"{sum(lost):,} bytes lost on {len(lost)} streams")
    if exact < verify:
        problems.append(f"{verify - exact} verified files differ from what was sent")
    if reconnects:
        problems.append(f"{reconnects} reconnections")
    if figures["lag_s"] > LAG_LIMIT:
        problems.append(f"fell {figures['lag_s']:.1f} s behind")
    if figures["farm"]["dropped"]:
        problems.append(f"the farm dropped {figures['farm']['dropped']} listeners")
    if not figures["source_ok"]:
        problems.append(source_late(figures, args))
    if errors:
        first = next(p for p in sorted(folder.glob("*.log")) if p.read_bytes().strip())
        problems.append(f"{errors} ffmpegs logged errors, e.g. {first.read_text()[:300]!r}")
    figures["problems"] = problems
    figures["held"] = not problems
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return figures


# -- Icecast -------------------------------------------------------------------------------------

ICECAST_BURST = 65536  # Icecast's burst on connect, bytes
ICECAST_METAINT = 16000


@contextmanager
def running_icecast(work: Path, loop_path: Path, count: int) -> Iterator[tuple[Icecast, list[str]]]:
    """Debian's icecast2 on loopback (deploy/testing/icecast.py), one mount per feeder relaying
    the farm's MP3 loop as it is, as a live encoder sends; and the mounts."""
    mounts = [f"/bench{n}.mp3" for n in range(1, count + 1)]
    icecast = Icecast(
        work / "icecast",
        burst_size=ICECAST_BURST,
        metaint=ICECAST_METAINT,
        queue_size=524288,
        max_sources=count + 2,
        max_clients=count * 4 + 10,
    )
    try:
        with icecast:
            for mount in mounts:
                icecast.relay(mount, loop_path)
            time.sleep(ICECAST_BURST / 16000)  # each mount holds a whole burst for a new listener
            yield icecast, mounts
    except RuntimeError as exc:
        raise BenchError(str(exc)) from None


def bench_icecast(
    work: Path, icecast: Icecast, mounts: list[str], args: argparse.Namespace, core: int
) -> dict[str, Any]:
    """The agent, then as many ffmpegs, recording every mount for --seconds: CPU per
    stream-minute over the same kind of window, and what they recorded."""
    urls = [icecast.url(mount) for mount in mounts]
    n = len(urls)
    data = work / "cluster-icecast"
    config = data / CONFIG_FILE
    figures: dict[str, Any] = {"n": n}
    try:
        cluster_up(data, 1, 1)
        command = dlweb("stream", *urls, "--duration", f"{args.seconds:g}", "--json")
        command += ["--chunk-seconds", f"{args.chunk_seconds:g}", "-c", str(config)]
        out, log = work / "agent-icecast.jsonl", work / "agent-icecast.log"
        with out.open("wb") as stdout, log.open("wb") as stderr:
            process = subprocess.Popen(
                command, stdout=stdout, stderr=stderr, preexec_fn=pinned(core)
            )
        title = f"Bench title {secrets.token_hex(3)}"

        def set_titles() -> None:
            for mount in mounts:
                icecast.set_title(mount, title)

        try:
            cpu, window = timed_window([process.pid], args.seconds, set_titles)
            process.wait(args.seconds + STORE_GRACE)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        reports = reports_of(out)
        stored, _ = asyncio.run(read_back(config, urls))
    finally:
        cluster_down(data)
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)
    expected = (ICECAST_BURST + 16000 * args.seconds) / 16000
    problems = []
    seconds = []
    for url in urls:
        report = reports.get(url)
        if report is None:
            problems.append(f"{url}: no report")
            continue
        seconds.append(report["bytes"] / 16000)
        if report["gaps"] or report["errors"] or report["connections"] != 1:
            problems.append(
                f"{url}: {len(report['gaps'])} gaps, errors {report['errors']},"
                f" {report['connections']} connections"
            )
        if title not in [t for _, t in report["titles"]]:
            problems.append(f"{url}: the title set mid-way is not in the report")
        if stored.get(url) != report["bytes"]:
            problems.append(
                f"{url}: {stored.get(url)} bytes in the cluster, {report['bytes']} recorded"
            )
    if seconds and not expected - 3 <= min(seconds) <= max(seconds) <= expected + 1:
        problems.append(
            f"recorded {min(seconds):.1f}-{max(seconds):.1f} s of audio, expected about {expected:.1f}"
        )
    figures["agent"] = {
        "ms_per_stream_min": cpu * 1000 / n / (window / 60),
        "core_share": cpu / window,
        "audio_seconds": seconds,
        "exit": process.returncode,
        "problems": problems,
        "held": not problems and process.returncode == 0,
    }
    if not args.skip_ffmpeg:
        figures["ffmpeg"] = icecast_ffmpeg(work, urls, args, core)
    return figures


def icecast_ffmpeg(
    work: Path, urls: list[str], args: argparse.Namespace, core: int
) -> dict[str, Any]:
    folder = work / "ffmpeg-icecast"
    folder.mkdir()
    processes = []
    for number, url in enumerate(urls, 1):
        command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", url]
        command += ["-c", "copy", "-f", "mp3", "-id3v2_version", "0", "-write_xing", "0"]
        with (folder / f"{number}.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [*command, str(folder / f"{number}.mp3")],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=pinned(core),
                )
            )
    try:
        cpu, window = timed_window([p.pid for p in processes], args.seconds, lambda: None)
        for process in processes:
            process.send_signal(signal.SIGINT)  # the mounts still flow: each ends its file
        for process in processes:
            process.wait(STOP_TIMEOUT)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    seconds = [(folder / f"{n}.mp3").stat().st_size / 16000 for n in range(1, len(urls) + 1)]
    errors = sum(1 for path in folder.glob("*.log") if path.read_bytes().strip())
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "ms_per_stream_min": cpu * 1000 / len(urls) / (window / 60),
        "core_share": cpu / window,
        "audio_seconds": seconds,
        "logged_errors": errors,
    }


def timed_window(
    pids: list[int], seconds: float, midway: Callable[[], None]
) -> tuple[float, float]:
    """CPU seconds `pids` used from WARMUP after their start until FREEZE_BEFORE before
    `seconds` are over, and that window's length; `midway` is called half-way through."""
    started = time.monotonic()
    time.sleep(WARMUP)
    cpu, opened = cpu_seconds(pids), time.monotonic()
    time.sleep(max(0.0, started + seconds / 2 - time.monotonic()))
    midway()
    time.sleep(max(0.0, started + seconds - FREEZE_BEFORE - time.monotonic()))
    return cpu_seconds(pids) - cpu, time.monotonic() - opened


# -- the run -------------------------------------------------------------------------------------


def cores() -> tuple[int, set[int]]:
    """The core the recorders are pinned to, and the cores for everything else."""
    available = sorted(os.sched_getaffinity(0))
    recorder = available[0]
    others = set(available[1:]) or {recorder}
    return recorder, others


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A configuration's figures over its rounds: medians of the CPU, the worst of the rest."""
    return {
        "rounds": len(runs),
        "n": runs[0]["n"],
        "ms_per_stream_min": statistics.median(r["ms_per_stream_min"] for r in runs),
        "ms_per_stream_min_all": [r["ms_per_stream_min"] for r in runs],
        "core_share": statistics.median(r["core_share"] for r in runs),
        "whole_ms_per_stream_min": statistics.median(r["whole_ms_per_stream_min"] for r in runs),
        "lag_s": max(r["lag_s"] for r in runs),
        "lost_bytes": sum(r["lost_bytes"] for r in runs),
        "gaps": sum(r.get("gaps", 0) for r in runs),
        "pss_mb": max(r["pss_mb"] for r in runs),
        "farm_late_max_ms": max(r["farm"]["late_max_ms"] for r in runs),
        "farm_cpu_share": max(r["farm"]["cpu_share"] for r in runs),
        "held": all(r["held"] for r in runs),
        "problems": [p for r in runs for p in r["problems"]],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    core, others = cores()
    os.sched_setaffinity(0, others)  # the farm, the cluster and py-spy start from here
    work = Path(tempfile.mkdtemp(prefix="dlweb-bench-streams-", dir=args.dir))
    steps = sorted(set(args.streams))
    ffmpeg_steps = sorted({min(n, args.ffmpeg_max) for n in steps})
    report: dict[str, Any] = {
        "seconds": args.seconds,
        "chunk_seconds": args.chunk_seconds,
        "piece_seconds": args.piece_seconds,
        "core": core,
        "other_cores": sorted(others),
        "cpus": os.cpu_count(),
        "steps": steps,
        "ffmpeg_steps": [] if args.skip_ffmpeg else ffmpeg_steps,
        "agent_runs": {},
        "ffmpeg_runs": {},
    }
    agent_runs: dict[int, list[dict[str, Any]]] = {}
    ffmpeg_runs: dict[int, list[dict[str, Any]]] = {}
    try:
        with running_farm(work, args.piece_seconds) as farm:
            report["byte_rate"] = farm.byte_rate
            print(
                f"farm: port {farm.port}, {farm.byte_rate * 8 / 1000:.1f} kbit/s MP3 loop of"
                f" {LOOP_SECONDS:g} s, a piece every {args.piece_seconds:g} s; recorders pinned"
                f" to core {core}, the rest on {sorted(others)}"
            )
            for number in range(args.rounds):
                print(f"round {number + 1} of {args.rounds}")
                peers_done: set[int] = set()
                for n in steps:
                    sides = ["agent", "ffmpeg"]
                    if number % 2:
                        sides.reverse()
                    peer_n = min(n, args.ffmpeg_max)
                    for side in sides:
                        if side == "agent":
                            figures = run_agent(work, farm, n, args, core, f"{number + 1}-{n}")
                            agent_runs.setdefault(n, []).append(figures)
                        elif not args.skip_ffmpeg and peer_n not in peers_done:
                            tag = f"{number + 1}-{peer_n}"
                            figures = run_ffmpeg(work, farm, peer_n, args, core, tag)
                            ffmpeg_runs.setdefault(peer_n, []).append(figures)
                            peers_done.add(peer_n)
            if args.ramp:
                n = steps[-1]
                while all(r["held"] for r in agent_runs[n]) and n + args.ramp <= RAMP_MAX:
                    n += args.ramp
                    print(f"ramp: {n} streams")
                    agent_runs[n] = [run_agent(work, farm, n, args, core, f"ramp-{n}")]
        if args.icecast and shutil.which("icecast2") is None:
            print("icecast2 is not installed: no recording of real Icecast mounts")
        elif args.icecast:
            print(
                f"Icecast: {args.icecast} mounts fed by ffmpeg -re -c copy, recorded"
                f" {args.seconds:g} s by the agent, then by as many ffmpegs ..."
            )
            with running_icecast(work, work / "loop.mp3", args.icecast) as (icecast, mounts):
                report["icecast"] = bench_icecast(work, icecast, mounts, args, core)
            print(f"  {icecast_line(report['icecast'])}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report["agent_runs"] = {str(n): runs for n, runs in agent_runs.items()}
    report["ffmpeg_runs"] = {str(n): runs for n, runs in ffmpeg_runs.items()}
    agent = {n: median_figures(runs) for n, runs in sorted(agent_runs.items())}
    ffmpeg = {n: median_figures(runs) for n, runs in sorted(ffmpeg_runs.items())}
    rows: list[dict[str, Any]] = []
    for n, ours in agent.items():
        peer_n = min(n, args.ffmpeg_max)
        peer = ffmpeg.get(peer_n)
        ratio = peer["ms_per_stream_min"] / ours["ms_per_stream_min"] if peer else None
        rows.append({"n": n, "agent": ours, "ffmpeg_n": peer_n if peer else None, "ratio": ratio})
    report["rows"] = rows
    held = [row["n"] for row in rows if row["agent"]["held"]]
    report["max_held"] = max(held, default=0)
    ffmpeg_held = [n for n, figures in ffmpeg.items() if figures["held"]]
    report["ffmpeg_max_held"] = max(ffmpeg_held, default=0)
    # The ratio is judged where both sides ran as many streams, the most of those the agent held
    # (or else where ffmpeg ran fewer).
    judged = [row for row in rows if row["ratio"] is not None and row["agent"]["held"]]
    same = [row for row in judged if row["ffmpeg_n"] == row["n"]] or judged
    at = max(same, key=lambda row: row["n"]) if same else None
    report["ratio_at"] = at["n"] if at else None
    report["targets"] = {
        "streams": report["max_held"] >= TARGET_STREAMS,
        "cpu_ratio": None if at is None else at["ratio"] >= TARGET_RATIO,
    }
    return report


def run_agent(
    work: Path, farm: Farm, n: int, args: argparse.Namespace, core: int, tag: str
) -> dict[str, Any]:
    print(f"  dlweb stream, {n} streams, {args.seconds:g} s ...", flush=True)
    figures = bench_agent(work, farm, n, args, core, tag)
    print(
        f"    {figures['ms_per_stream_min']:.1f} ms CPU per stream-minute"
        f" ({figures['core_share']:.1%} of a core), lag {figures['lag_s']:.2f} s,"
        f" {figures['recorded_mb']:.1f} MB recorded, {figures['gaps']} gaps,"
        f" {figures['lost_bytes']:,} bytes lost; {'held' if figures['held'] else 'NOT HELD: '}"
        + "; ".join(figures["problems"]),
        flush=True,
    )
    return figures


def run_ffmpeg(
    work: Path, farm: Farm, n: int, args: argparse.Namespace, core: int, tag: str
) -> dict[str, Any]:
    print(f"  ffmpeg -c copy x {n}, {args.seconds:g} s ...", flush=True)
    figures = bench_ffmpeg(work, farm, n, args, core, tag)
    print(
        f"    {figures['ms_per_stream_min']:.1f} ms CPU per stream-minute"
        f" ({figures['core_share']:.1%} of a core), lag {figures['lag_s']:.2f} s,"
        f" {figures['lost_bytes']:,} bytes lost; {'held' if figures['held'] else 'NOT HELD: '}"
        + "; ".join(figures["problems"]),
        flush=True,
    )
    return figures


# -- the report ----------------------------------------------------------------------------------


def verdict(met: bool | None) -> str:
    return "n/a" if met is None else "PASS" if met else "MISS"


def show(report: dict[str, Any]) -> None:
    print()
    print(
        f"{report['seconds']:g} s recordings of N concurrent {report['byte_rate'] * 8 / 1000:.0f}"
        f" kbit/s ICY streams, each side pinned to core {report['core']}; CPU over the steady"
        f" window\n(a piece every {report['piece_seconds']:g} s, chunks of"
        f" {report['chunk_seconds']:g} s), medians of"
        f" {max(len(r) for r in report['agent_runs'].values())} round(s)"
    )
    print(
        f"  {'N':>5}{'agent % core':>13}{'ms/stream-min':>14}{'whole':>7}{'lag s':>7}"
        f"{'gaps':>6}{'lost B':>8}{'PSS MB':>8}  {'ffmpeg N':>8}{'ms/stream-min':>14}"
        f"{'lost B':>8}{'PSS MB':>8}{'ratio':>7}"
    )
    ffmpeg_runs = report["ffmpeg_runs"]
    for row in report["rows"]:
        ours = row["agent"]
        line = (
            f"  {row['n']:>5}{ours['core_share']:>13.1%}{ours['ms_per_stream_min']:>14.1f}"
            f"{ours['whole_ms_per_stream_min']:>7.1f}{ours['lag_s']:>7.2f}{ours['gaps']:>6}"
            f"{ours['lost_bytes']:>8,}{ours['pss_mb']:>8.1f}"
        )
        if row["ffmpeg_n"] is not None:
            peer = median_figures(ffmpeg_runs[str(row["ffmpeg_n"])])
            line += (
                f"  {row['ffmpeg_n']:>8}{peer['ms_per_stream_min']:>14.1f}"
                f"{peer['lost_bytes']:>8,}{peer['pss_mb']:>8.1f}{row['ratio']:>7.1f}"
            )
        print(line + ("" if ours["held"] else "  NOT HELD"))
    print(
        "  ms/stream-min: CPU milliseconds per stream per minute of recording, over the window;"
        "\n  whole: the same over the agent's whole run (start-up, connections, last inserts);"
        "\n  lag: most audio a socket held unread; lost B: bytes sent and not recorded;"
        "\n  PSS MB: memory of the agent, of all the ffmpegs together; ratio: ffmpeg / agent"
    )
    for n, runs in report["ffmpeg_runs"].items():
        for figures in runs:
            if not figures["held"]:
                print(f"  ffmpeg x {n} NOT HELD: " + "; ".join(figures["problems"]))
    for n, runs in report["agent_runs"].items():
        for figures in runs:
            for problem in figures["problems"]:
                print(f"  agent x {n}: {problem}")
    every = [r for runs in report["agent_runs"].values() for r in runs]
    every += [r for runs in report["ffmpeg_runs"].values() for r in runs]
    farm_late = max(r["farm"]["late_max_ms"] for r in every)
    farm_cpu = max(r["farm"]["cpu_share"] for r in every)
    backlog = max(r["farm"]["max_backlog"] for r in every)
    pieces = min(r["pieces_per_s"] for r in every)
    print(
        f"  the farm: at most {farm_cpu:.1%} of a core; ticks late by {farm_late:.0f} ms at most"
        " (a late tick sends more,\n  loses nothing), at least"
        f" {pieces:.1f} pieces a second per stream (asked: {1 / report['piece_seconds']:g}),"
        f" at most {backlog:,} bytes left unsent"
    )
    biggest = max(report["agent_runs"], key=int)
    last = report["agent_runs"][biggest][-1]
    print(
        f"  at {biggest} streams: cluster CPU {last['cluster_cpu_s']:.1f} s over the run,"
        f" {last['verified']} of {last['verify']} streams' chunks read back byte for byte"
    )
    if "icecast" in report:
        print(
            f"  Icecast 2.4, {report['icecast']['n']} mounts, each fed a frame at a time by"
            f" ffmpeg -re -c copy:\n    {icecast_line(report['icecast'])}"
        )
    for n, runs in report["agent_runs"].items():
        profiled = [figures["profile"] for figures in runs if "profile" in figures]
        if profiled:
            show_profile(int(n), profiled[-1])  # the last round's
    print()
    capped = [n for n in report["steps"] if n > max(report["ffmpeg_steps"] or [n])]
    if capped and report["ffmpeg_steps"]:
        print(
            f"ffmpeg ran at most {max(report['ffmpeg_steps'])} at once (--ffmpeg-max): the"
            f" ratio at {', '.join(map(str, capped))} streams uses its figure at that N"
        )
    print(f"most streams held on one core without loss: {report['max_held']}")
    if report["ffmpeg_steps"]:
        print(f"most ffmpegs held on one core without loss: {report['ffmpeg_max_held']}")
    targets = report["targets"]
    print(
        f"target: >= {TARGET_STREAMS} concurrent streams on one core, no gaps, nothing lost:"
        f" {verdict(targets['streams'])}"
    )
    at = report["ratio_at"]
    where = f" (at {at} streams)" if at else ""
    print(
        f"target: >= {TARGET_RATIO:g}x less CPU per stream than ffmpeg{where}:"
        f" {verdict(targets['cpu_ratio'])}"
    )


def icecast_line(figures: dict[str, Any]) -> str:
    ours = figures["agent"]
    line = (
        f"agent {ours['ms_per_stream_min']:.1f} ms CPU per stream-minute"
        f" ({ours['core_share']:.1%} of a core)"
    )
    if "ffmpeg" in figures:
        peer = figures["ffmpeg"]
        ratio = peer["ms_per_stream_min"] / ours["ms_per_stream_min"]
        line += f", ffmpeg {peer['ms_per_stream_min']:.1f}, ratio {ratio:.1f}"
    seconds = ours["audio_seconds"]
    if seconds:
        line += f"; {min(seconds):.1f}-{max(seconds):.1f} s of audio each"
    return line + ("" if ours["held"] else "; NOT HELD: " + "; ".join(ours["problems"]))


def show_profile(n: int, profile: dict[str, Any]) -> None:
    print(
        f"\n  agent at {n} streams, py-spy ({profile['samples']:,} samples holding the GIL;"
        " sampling slowed\n  the agent: take its CPU figures from a run without --py-spy):"
    )
    for name, share in profile["parts"]:
        print(f"    {share:>6.1%}  {name}")
    print("  own time by function:")
    for frame, share in profile["own"]:
        print(f"    {share:>6.1%}  {frame}")


def stream_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("stream counts must be 1 or more")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--streams",
        type=stream_counts,
        default=list(DEFAULT_STEPS),
        help="numbers of concurrent streams to try, comma-separated (default %(default)s)",
    )
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="seconds each recording lasts (20 or more)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds, sides alternating")
    parser.add_argument(
        "--ffmpeg-max",
        type=int,
        default=200,
        help="most ffmpeg processes at once; larger steps use this figure (default 200)",
    )
    parser.add_argument("--skip-ffmpeg", action="store_true", help="run the agent only")
    parser.add_argument(
        "--ramp",
        type=int,
        default=0,
        help="then add this many streams at a time while the agent holds (agent only)",
    )
    parser.add_argument(
        "--chunk-seconds",
        type=float,
        default=10.0,
        help="the agent's --chunk-seconds (default 10: inserts fall within the window)",
    )
    parser.add_argument(
        "--piece-seconds",
        type=float,
        default=0.1,
        help="seconds between two pieces the farm sends a listener (default %(default)g)",
    )
    parser.add_argument(
        "--verify", type=int, default=4, help="streams whose chunks are read back and compared"
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        help="record the agent with py-spy during each window, collapsed stacks into DIR",
    )
    parser.add_argument(
        "--icecast",
        type=int,
        default=10,
        help="then record this many mounts of a real icecast2 with both sides (0: none)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary dir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    if (
        args.seconds < 20
        or args.rounds < 1
        or args.ffmpeg_max < 1
        or min(args.ramp, args.icecast) < 0
    ):
        parser.error("--seconds must be 20 or more, --rounds and --ffmpeg-max 1 or more")
    if args.chunk_seconds <= 0 or args.piece_seconds <= 0 or args.verify < 0:
        parser.error("--chunk-seconds and --piece-seconds must be positive, --verify 0 or more")
    for program in ("ffmpeg", *(("py-spy",) if args.py_spy else ())):
        if shutil.which(program) is None:
            parser.error(f"{program} is not on the PATH")
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    outcome = run_benchmark(args, run, show, "recorders, farm and cluster stopped, files removed")
    return outcome if isinstance(outcome, int) else 0


if __name__ == "__main__":
    sys.exit(main())
