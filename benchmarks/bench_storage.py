"""Storage node throughput and latency, side by side with the raw disk limit measured in the same run.

One storage node runs as a subprocess; this process is the load generator (an aiohttp client on
uvloop, keep-alive connections, 16 concurrent requests), so on two cores the node and the client
each get about one. Phases, in order:

1. HTTP PUT then GET of unique random 4 KB and 1 MB objects (payloads and their SHA-256 made before
   timing; GET reads the objects just PUT, so the page cache is warm).
2. The raw limit on the same filesystem: SHA-256 + write + fsync + rename into place, and plain
   open+read+close of those files, sequential and with 16 threads; then node/raw ratios.
3. Multicast locate latency of held names (first answer) and of a name nobody holds.
4. Closest-capture lookups on structure files of 1, 1k, 100k and 1M records, in-process (with and
   without opening the file per lookup) and over HTTP for the 1-record and 1M-record files.

Run: python benchmarks/bench_storage.py [--quick] [--json FILE] [--dir DIR] [--py-spy DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import hashlib
import itertools
import json
import math
import os
import random
import resource
import secrets
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, is_dataclass
from functools import partial
from pathlib import Path
from types import FrameType, TracebackType
from typing import TypeVar

import aiohttp
import uvloop
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_tools import cpu_seconds  # noqa: E402

from archive.config import ClusterConfig, load_config  # noqa: E402
from archive.multicast import LookupClient  # noqa: E402
from archive.structure import (  # noqa: E402
    RECORD_SIZE,
    Capture,
    Mode,
    StructureFile,
    encode_file,
    encode_header,
)
from archive.urlkey import structure_name  # noqa: E402
from deploy.testing.ports import free_port  # noqa: E402

KB = 1024
MB = 1024 * 1024
SMALL, LARGE = 4 * KB, MB
CLIENTS = 16
RECORD_COUNTS = (1, 1_000, 100_000, 1_000_000)
FIRST_CAPTURE = 946_684_800_000_000  # 2000-01-01T00:00:00Z in microseconds
CAPTURE_SPAN = 20 * 365 * 86_400 * 1_000_000
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
WARM_UP_LOOKUPS = 200
_TIME = struct.Struct(">q")
_CRC = struct.Struct(">I")
_CONTENT = hashlib.sha256(b"benchmark content").hexdigest()
_HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()
T = TypeVar("T")


class BenchError(Exception):
    """Something the benchmark needs did not work: the figures would be meaningless."""


@dataclass(frozen=True)
class Sizes:
    """How much work each phase does (full run or --quick)."""

    small_objects: int
    large_objects: int
    raw_seconds: float
    lookups: int
    misses: int
    finds: int
    opens: int
    http_queries: int


FULL = Sizes(16_000, 1_000, 4.0, 2_000, 20, 20_000, 5_000, 2_000)
QUICK = Sizes(5_000, 300, 2.0, 500, 10, 5_000, 2_000, 500)


@dataclass(frozen=True)
class Payload:
    name: str
    data: bytes


@dataclass(frozen=True)
class Rate:
    """Objects moved in a timed phase, with the CPU each side used (in cores, 1.0 = one core)."""

    count: int
    nbytes: int
    seconds: float
    node_cpu: float | None = None
    client_cpu: float | None = None

    @property
    def per_s(self) -> float:
        return self.count / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.nbytes / self.seconds / MB


@dataclass(frozen=True)
class Latency:
    count: int
    mean_us: float
    p50_us: float
    p99_us: float

    @classmethod
    def of(cls, samples_ns: Sequence[int]) -> Latency:
        ordered = sorted(samples_ns)
        return cls(
            count=len(ordered),
            mean_us=statistics.fmean(ordered) / 1000,
            p50_us=_quantile(ordered, 0.50) / 1000,
            p99_us=_quantile(ordered, 0.99) / 1000,
        )


def _quantile(ordered: Sequence[int], q: float) -> float:
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


# -- the node under test -------------------------------------------------------------------------


def write_config(path: Path, rng: random.Random) -> ClusterConfig:
    """A cluster of one with its own secret, multicast groups and port, so runs never mix."""
    group_base = f"230.{rng.randrange(1, 255)}.{rng.randrange(0, 256)}.0"
    data = {
        "cluster": {"name": "bench", "secret": secrets.token_urlsafe(32)},
        "multicast": {"group_base": group_base, "port": free_port(socket.SOCK_DGRAM)},
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(data, out)
    return load_config(path)


class NodeProcess:
    """A storage node subprocess, stopped with SIGTERM (then killed if it hangs)."""

    def __init__(self, root: Path, config_path: Path, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        command = [
            sys.executable,
            "-m",
            "storage_node",
            "--root",
            str(root),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--config",
            str(config_path),
        ]
        self.process = subprocess.Popen(
            command, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self) -> None:
        """Poll /status until the node answers and its multicast responder joined all groups."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"storage node exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/status", timeout=1) as reply:
                    status = json.loads(reply.read())
                if status.get("groups_joined") == 256:
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.05)
        raise BenchError(f"storage node not ready after {READY_TIMEOUT:g}s")

    def cpu_seconds(self) -> float:
        """User + system CPU time the node used so far."""
        return cpu_seconds([self.pid])

    def tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        finally:
            self._log.close()


Profile = list[tuple[str, float]]


class Profiler:
    """py-spy recording of the node during one phase, as collapsed stacks (own time per leaf)."""

    def __init__(self, pid: int, output: Path) -> None:
        self.pid = pid
        self.output = output
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Profiler:
        command = [
            "py-spy",
            "record",
            "--pid",
            str(self.pid),
            "--format",
            "raw",
            "--nolineno",
            "--gil",
        ]
        command += ["--rate", "200", "--output", str(self.output)]
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if "Sampling" in line:
                return self
        raise BenchError(f"py-spy did not start sampling: exit {self._process.wait()}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGINT)
            self._process.communicate(timeout=STOP_TIMEOUT)

    def top(self, count: int = 10) -> Profile:
        """The functions the node spent most samples in, with their share of all samples."""
        own: Counter[str] = Counter()
        for line in self.output.read_text().splitlines():
            stack, _, samples = line.rpartition(" ")
            own[stack.rpartition(";")[2]] += int(samples)
        total = sum(own.values()) or 1
        return [(frame, n / total) for frame, n in own.most_common(count)]


# -- HTTP load -----------------------------------------------------------------------------------


def make_payloads(count: int, size: int, rng: random.Random) -> list[Payload]:
    payloads = []
    for _ in range(count):
        data = rng.randbytes(size)
        payloads.append(Payload(hashlib.sha256(data).hexdigest(), data))
    return payloads


async def timed_requests(
    node: NodeProcess, jobs: Sequence[T], send: Callable[[T], Awaitable[None]], nbytes: int
) -> Rate:
    """Run `send` over every job with CLIENTS concurrent workers; time it and count CPU."""
    pending = iter(jobs)

    async def worker() -> None:
        for job in pending:
            await send(job)

    node_cpu, client_cpu = node.cpu_seconds(), _own_cpu_seconds()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    seconds = time.perf_counter() - started
    return Rate(
        count=len(jobs),
        nbytes=nbytes,
        seconds=seconds,
        node_cpu=(node.cpu_seconds() - node_cpu) / seconds,
        client_cpu=(_own_cpu_seconds() - client_cpu) / seconds,
    )


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class HttpBench:
    """PUT and GET of contents over keep-alive connections to the node."""

    def __init__(self, node: NodeProcess, session: aiohttp.ClientSession, token: str) -> None:
        self.node = node
        self.session = session
        self.auth = {"Authorization": f"Bearer {token}"}

    async def put(self, payload: Payload) -> None:
        url = f"{self.node.url}/content/{payload.name}"
        async with self.session.put(url, data=payload.data, headers=self.auth) as reply:
            if reply.status != 201:
                raise BenchError(f"PUT {payload.name}: {reply.status} {await reply.text()}")
            await reply.read()

    async def get(self, payload: Payload) -> None:
        async with self.session.get(f"{self.node.url}/content/{payload.name}") as reply:
            body = await reply.read()
            if reply.status != 200 or len(body) != len(payload.data):
                raise BenchError(f"GET {payload.name}: {reply.status}, {len(body)} bytes")

    async def warm_up(self) -> None:
        """Open every keep-alive connection before the first timed phase."""

        async def status() -> None:
            async with self.session.get(f"{self.node.url}/status") as reply:
                await reply.read()

        await asyncio.gather(*(status() for _ in range(CLIENTS)))

    async def run(
        self, payloads: Sequence[Payload], profile: Path | None
    ) -> tuple[Rate, Rate, dict[str, Profile]]:
        """PUT then GET of the payloads, each recorded with py-spy into `profile` when given."""
        nbytes = sum(len(p.data) for p in payloads)
        rates, tops = [], {}
        for method, send in (("PUT", self.put), ("GET", self.get)):
            if profile is None:
                rates.append(await timed_requests(self.node, payloads, send, nbytes))
                continue
            size = f"{len(payloads[0].data) // KB}kb"
            with Profiler(self.node.pid, profile / f"{method.lower()}-{size}.txt") as profiler:
                rates.append(await timed_requests(self.node, payloads, send, nbytes))
            tops[method] = profiler.top()
        return rates[0], rates[1], tops


# -- raw disk limit ------------------------------------------------------------------------------


def fan_out_path(root: Path, name: str) -> Path:
    """The node's layout, <ab>/<cd>/<name>, so the raw run creates the same folders."""
    return root / name[:2] / name[2:4] / name


def raw_write(root: Path, payload: Payload) -> None:
    """What a durable content write costs at least: hash, write, fsync, rename into place."""
    name = hashlib.sha256(payload.data).hexdigest()
    temp = root / ".tmp" / f"{name}.part"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(payload.data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    final = fan_out_path(root, name)
    try:
        os.rename(temp, final)
    except FileNotFoundError:
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(temp, final)


def raw_read(root: Path, payload: Payload) -> None:
    with open(fan_out_path(root, payload.name), "rb", buffering=0) as source:
        if len(source.read()) != len(payload.data):
            raise BenchError(f"raw read of {payload.name} came back short")


def timed_pool(
    jobs: Iterator[Payload], work: Callable[[Payload], None], threads: int, budget: float
) -> Rate:
    """Run `work` over the jobs in order until they run out or `budget` seconds passed.

    Jobs are taken in order, so the ones done are always the first `count` of them.
    """
    lock = threading.Lock()
    done = [0] * threads
    nbytes = [0] * threads
    started = time.perf_counter()
    deadline = started + budget

    def worker(slot: int) -> None:
        while time.perf_counter() < deadline:
            with lock:
                payload = next(jobs, None)
            if payload is None:
                return
            work(payload)
            done[slot] += 1
            nbytes[slot] += len(payload.data)

    if threads == 1:
        worker(0)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(worker, range(threads)))
    return Rate(sum(done), sum(nbytes), time.perf_counter() - started)


RawLimits = dict[str, tuple[Rate, Rate]]


def raw_limits(work: Path, payloads: Sequence[Payload], budget: float) -> RawLimits:
    """(write, read) rates for one object size, sequential and with CLIENTS threads: writes of
    the payloads for at most `budget` seconds (starting with nothing left to write back), then
    reads of the files written, round and round, for half of it."""
    results = {}
    for label, threads in (("sequential", 1), (f"{CLIENTS} threads", CLIENTS)):
        root = work / f"raw-{len(payloads[0].data)}-{threads}"
        (root / ".tmp").mkdir(parents=True)
        os.sync()
        write = timed_pool(iter(payloads), partial(raw_write, root), threads, budget)
        written = itertools.cycle(payloads[: write.count])
        read = timed_pool(written, partial(raw_read, root), threads, budget / 2)
        results[label] = (write, read)
    return results


# -- multicast -----------------------------------------------------------------------------------


async def lookup_latency(
    node: NodeProcess, config: ClusterConfig, held: Sequence[str], misses: int
) -> tuple[Latency, Latency]:
    """Sequential locates of held names (first answer), then of names nobody holds."""
    client = LookupClient(config.multicast, config.secret)
    await client.start()
    try:
        hits = []
        for name in held:
            started = time.perf_counter_ns()
            answers = await client.locate("content", name, first=True)
            hits.append(time.perf_counter_ns() - started)
            if [a.address for a in answers] != [node.url]:
                raise BenchError(f"multicast lookup of a held name answered {answers}")
        missed = []
        for _ in range(misses):
            name = secrets.token_hex(32)
            started = time.perf_counter_ns()
            if await client.locate("content", name, first=True):
                raise BenchError("a name nobody holds was found by multicast")
            missed.append(time.perf_counter_ns() - started)
    finally:
        await client.close()
    return Latency.of(hits), Latency.of(missed)


# -- structure files -----------------------------------------------------------------------------


def capture_times(count: int, rng: random.Random) -> list[int]:
    """Sorted unique capture times spread over twenty years."""
    step = CAPTURE_SPAN // count
    return [FIRST_CAPTURE + i * step + rng.randrange(step) for i in range(count)]


def structure_bytes(url: str, times: Sequence[int]) -> bytes:
    """A structure file written in bulk: one packed record reused with each time and its CRC.

    The layout (time first, CRC of the rest last) is checked against encode_file in main().
    """
    template = Capture(0, _CONTENT, _HEADER, 200).pack()
    middle = template[_TIME.size : RECORD_SIZE - _CRC.size]
    parts = [encode_header(url)]
    for moment in times:
        body = _TIME.pack(moment) + middle
        parts.append(body + _CRC.pack(zlib.crc32(body)))
    return b"".join(parts)


def closest_reference(times: Sequence[int], moment: int) -> int:
    """The closest-capture index by bisect over the times in memory, to check the file search."""
    after = bisect.bisect_left(times, moment)
    if after == 0:
        return 0
    if after == len(times):
        return len(times) - 1
    return after - 1 if moment - times[after - 1] <= times[after] - moment else after


def query_times(times: Sequence[int], count: int, rng: random.Random) -> list[int]:
    margin = CAPTURE_SPAN // len(times)
    return [rng.randrange(times[0] - margin, times[-1] + margin) for _ in range(count)]


@dataclass(frozen=True)
class FindTimes:
    records: int
    with_open: Latency
    open_reader: Latency


def time_finds(path: Path, times: Sequence[int], sizes: Sizes, rng: random.Random) -> FindTimes:
    """Closest lookups opening the file each time (as the node does per request), then on one
    open reader. Untimed lookups first warm the code and the file's pages; they are checked
    against a bisect of the times in memory."""
    for moment in query_times(times, WARM_UP_LOOKUPS, rng):
        with StructureFile(path) as sfile:
            if sfile.reader.find(Mode.CLOSEST, moment) != closest_reference(times, moment):
                raise BenchError(f"{path.name}: closest lookup disagrees with bisect at {moment}")
    opened = []
    for moment in query_times(times, sizes.opens, rng):
        started = time.perf_counter_ns()
        with StructureFile(path) as sfile:
            sfile.reader.find(Mode.CLOSEST, moment)
        opened.append(time.perf_counter_ns() - started)
    found = []
    with StructureFile(path) as sfile:
        reader = sfile.reader
        for moment in query_times(times, sizes.finds, rng):
            started = time.perf_counter_ns()
            reader.find(Mode.CLOSEST, moment)
            found.append(time.perf_counter_ns() - started)
    return FindTimes(len(times), Latency.of(opened), Latency.of(found))


@dataclass(frozen=True)
class StructureHttp:
    records: int
    latency: Latency
    concurrent: Rate


async def structure_over_http(
    bench: HttpBench,
    url: str,
    data: bytes,
    times: Sequence[int],
    sizes: Sizes,
    rng: random.Random,
) -> StructureHttp:
    """Copy a structure file into the node, then time closest queries one at a time and with
    CLIENTS concurrent; the first answers are checked against a bisect of the times."""
    name = structure_name(url)
    target = f"{bench.node.url}/structure/{name}"
    async with bench.session.put(target, data=data, headers=bench.auth) as reply:
        if reply.status != 201:
            raise BenchError(f"PUT structure {name}: {reply.status} {await reply.text()}")

    async def query(moment: int, check: bool = False) -> None:
        async with bench.session.get(target, params={"mode": "closest", "at": str(moment)}) as r:
            if r.status != 200:
                raise BenchError(f"closest query on {name}: {r.status} {await r.text()}")
            if check:
                answer = await r.json()
                if answer["records"][0]["index"] != closest_reference(times, moment):
                    raise BenchError(f"closest query on {name} at {moment}: wrong record")
            else:
                await r.read()

    for moment in query_times(times, 50, rng):
        await query(moment, check=True)
    samples = []
    for moment in query_times(times, sizes.http_queries, rng):
        started = time.perf_counter_ns()
        await query(moment)
        samples.append(time.perf_counter_ns() - started)
    moments = query_times(times, 2 * sizes.http_queries, rng)
    concurrent = await timed_requests(bench.node, moments, query, 0)
    return StructureHttp(len(times), Latency.of(samples), concurrent)


# -- phases --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpResults:
    rates: dict[str, Rate]
    profile: dict[str, Profile]
    lookup_hit: Latency
    lookup_miss: Latency
    lookup_wait_ms: float


async def http_phases(
    node: NodeProcess,
    config: ClusterConfig,
    small: Sequence[Payload],
    large: Sequence[Payload],
    sizes: Sizes,
    profile: Path | None,
) -> HttpResults:
    connector = aiohttp.TCPConnector(limit=CLIENTS)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        bench = HttpBench(node, session, config.write_token)
        await bench.warm_up()
        put_small, get_small, tops = await bench.run(small, profile)
        put_large, get_large, _ = await bench.run(large, None)
    held = [p.name for p in small[: sizes.lookups]]
    hit, miss = await lookup_latency(node, config, held, sizes.misses)
    rates = {"PUT 4 KB": put_small, "GET 4 KB": get_small}
    rates |= {"PUT 1 MB": put_large, "GET 1 MB": get_large}
    return HttpResults(rates, tops, hit, miss, config.multicast.wait * 1000)


StructureData = dict[int, tuple[str, bytes, list[int]]]


def build_structures(work: Path, rng: random.Random) -> StructureData:
    """Structure files of every size in RECORD_COUNTS, written under `work`, with their URL,
    bytes and capture times; the bulk writer is checked to produce exactly what encode_file does."""
    files = {}
    for count in RECORD_COUNTS:
        url = f"http://bench.example/{count}-records"
        times = capture_times(count, rng)
        data = structure_bytes(url, times)
        if count <= 1000:
            captures = [Capture(t, _CONTENT, _HEADER, 200) for t in times]
            if data != encode_file(url, captures):
                raise BenchError("bulk-written structure file differs from encode_file")
        (work / f"{count}.structure").write_bytes(data)
        files[count] = (url, data, times)
    return files


async def structure_http_phase(
    node: NodeProcess, config: ClusterConfig, files: StructureData, sizes: Sizes, rng: random.Random
) -> list[StructureHttp]:
    """Closest queries over HTTP on the smallest and the largest structure file."""
    connector = aiohttp.TCPConnector(limit=CLIENTS)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        bench = HttpBench(node, session, config.write_token)
        results = []
        for count in (RECORD_COUNTS[0], RECORD_COUNTS[-1]):
            url, data, times = files[count]
            results.append(await structure_over_http(bench, url, data, times, sizes, rng))
        return results


@dataclass(frozen=True)
class Report:
    mode: str
    sizes: Sizes
    http: HttpResults
    raw: dict[str, RawLimits]
    ratios: dict[str, float]
    finds: list[FindTimes]
    structure_http: list[StructureHttp]


def node_to_raw(http: HttpResults, raw: dict[str, RawLimits]) -> dict[str, float]:
    """Node rate over the best raw rate: PUT against raw writes, GET against raw reads."""
    ratios = {}
    for size, cases in raw.items():
        best_write = max(write.per_s for write, _ in cases.values())
        best_read = max(read.per_s for _, read in cases.values())
        ratios[f"PUT {size}"] = http.rates[f"PUT {size}"].per_s / best_write
        ratios[f"GET {size}"] = http.rates[f"GET {size}"].per_s / best_read
    return ratios


def run(args: argparse.Namespace) -> Report:
    sizes = QUICK if args.quick else FULL
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="dlweb-bench-", dir=args.dir) as temp:
        work = Path(temp)
        config = write_config(work / "cluster.yaml", random.Random())
        node = NodeProcess(work / "node", work / "cluster.yaml", work / "node.log")
        try:
            node.wait_ready()
            print(f"storage node pid {node.pid} at {node.url}, files under {work}")
            print(
                f"multicast {config.multicast.group_base}/24 port {config.multicast.port};"
                f" {CLIENTS} concurrent clients; preparing payloads"
            )
            small = make_payloads(sizes.small_objects, SMALL, rng)
            large = make_payloads(sizes.large_objects, LARGE, rng)
            http = uvloop.run(http_phases(node, config, small, large, sizes, args.py_spy))
            print_http(http)
            raw = {"4 KB": raw_limits(work, small, sizes.raw_seconds)}
            raw["1 MB"] = raw_limits(work, large, sizes.raw_seconds)
            ratios = node_to_raw(http, raw)
            print_raw(raw, ratios)
            files = build_structures(work, rng)
            os.sync()
            finds = [time_finds(work / f"{n}.structure", files[n][2], sizes, rng) for n in files]
            print_finds(finds)
            structure_http = uvloop.run(structure_http_phase(node, config, files, sizes, rng))
            print_structure_http(structure_http)
        except Exception:
            print(f"\nstorage node log, last lines:\n{node.tail()}", file=sys.stderr)
            raise
        finally:
            node.stop()
    mode = "quick" if args.quick else "full"
    return Report(mode, sizes, http, raw, ratios, finds, structure_http)


# -- output --------------------------------------------------------------------------------------


def print_rates(title: str, rows: Sequence[tuple[str, Rate]]) -> None:
    print(f"\n{title}")
    print(f"  {'':28}{'objects/s':>11}{'MB/s':>10}{'objects':>9}{'node cpu':>10}{'client':>8}")
    for label, rate in rows:
        cpu = ""
        if rate.node_cpu is not None and rate.client_cpu is not None:
            cpu = f"{rate.node_cpu:>10.2f}{rate.client_cpu:>8.2f}"
        print(f"  {label:28}{rate.per_s:>11,.0f}{rate.mb_per_s:>10,.1f}{rate.count:>9,}{cpu}")


def print_latency(label: str, latency: Latency) -> None:
    print(
        f"  {label:30}mean {latency.mean_us:>8,.1f} us  p50 {latency.p50_us:>8,.1f} us"
        f"  p99 {latency.p99_us:>8,.1f} us  (n={latency.count:,})"
    )


def print_http(http: HttpResults) -> None:
    print_rates(
        f"Storage node over HTTP, {CLIENTS} concurrent keep-alive clients"
        " (GET: page cache warm; cpu in cores)",
        list(http.rates.items()),
    )
    for method, top in http.profile.items():
        print(f"\nNode during {method} 4 KB, py-spy: own time, share of GIL-holding samples")
        print("  (the node was slowed by sampling during this phase)")
        for frame, share in top:
            print(f"  {share:>6.1%}  {frame}")
    print("\nMulticast locate (LookupClient, first answer, one lookup at a time)")
    print_latency("held name", http.lookup_hit)
    print_latency("name nobody holds", http.lookup_miss)
    print(f"  (a miss returns after the configured wait of {http.lookup_wait_ms:g} ms)")


def print_raw(raw: dict[str, RawLimits], ratios: dict[str, float]) -> None:
    rows = []
    for size, cases in raw.items():
        for label, (write, read) in cases.items():
            rows += [(f"write {size} {label}", write), (f"read {size} {label}", read)]
    print_rates(
        "Raw limit, same filesystem (write = SHA-256 + write + fsync + rename;"
        " read = open + read + close, page cache warm)",
        rows,
    )
    print("\nNode / best raw figure")
    for label, ratio in ratios.items():
        print(f"  {label:28}{ratio:>8.3f}")


def print_finds(finds: Sequence[FindTimes]) -> None:
    base = finds[0]
    print("\nClosest-capture lookup inside the node (in-process, page cache warm), microseconds")
    print(
        f"  {'records':>9}{'log2 n':>7} | {'open+find':>10}{'p99':>8}{'x 1 rec':>8}"
        f" | {'find':>7}{'p99':>8}{'x 1 rec':>8}{'us/log2 n':>10}"
    )
    for row in finds:
        log_n = math.log2(row.records)
        extra = row.open_reader.mean_us - base.open_reader.mean_us
        per_step = f"{extra / log_n:>10.2f}" if row.records > 1 else ""
        print(
            f"  {row.records:>9,}{log_n:>7.1f} | {row.with_open.mean_us:>10.1f}"
            f"{row.with_open.p99_us:>8.1f}{row.with_open.mean_us / base.with_open.mean_us:>8.2f}"
            f" | {row.open_reader.mean_us:>7.2f}{row.open_reader.p99_us:>8.2f}"
            f"{row.open_reader.mean_us / base.open_reader.mean_us:>8.2f}{per_step}"
        )
    print("  (open+find: open and read the header per lookup, as the node does per request;")
    print("   find: on an open reader; us/log2 n: time over the 1-record file per search step)")


def print_structure_http(rows: Sequence[StructureHttp]) -> None:
    print("\nClosest-capture query over HTTP (GET /structure/<name>?mode=closest&at=...)")
    for row in rows:
        print_latency(f"{row.records:,} records, sequential", row.latency)
        print(f"  {row.records:,} records, {CLIENTS} concurrent: {row.concurrent.per_s:,.0f}/s")


def targets(report: Report) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for the goals the storage node is held to."""
    rates = report.http.rates
    put_small, get_small = rates["PUT 4 KB"], rates["GET 4 KB"]
    large_ratio = report.ratios["PUT 1 MB"]
    largest = report.finds[-1]
    return [
        ("4 KB PUT >= 2,000/s", f"{put_small.per_s:,.0f}/s", put_small.per_s >= 2000),
        ("4 KB GET >= 5,000/s", f"{get_small.per_s:,.0f}/s", get_small.per_s >= 5000),
        (
            "1 MB PUT >= 25% of raw write",
            f"{large_ratio:.0%} ({rates['PUT 1 MB'].mb_per_s:,.0f} MB/s)",
            large_ratio >= 0.25,
        ),
        (
            f"closest, {largest.records:,} records < 0.2 ms",
            f"{largest.with_open.mean_us / 1000:.3f} ms (open+find, mean)",
            largest.with_open.mean_us < 200,
        ),
    ]


def print_targets(rows: Sequence[tuple[str, str, bool]]) -> None:
    print(f"\n{'target':36}{'measured':36}result")
    for target, measured, met in rows:
        print(f"{target:36}{measured:36}{'PASS' if met else 'MISS'}")


def to_json(value: object) -> object:
    """Results as plain JSON values; rates also carry their per-second figures."""
    if is_dataclass(value) and not isinstance(value, type):
        data = {f.name: to_json(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, Rate):
            data |= {"per_s": value.per_s, "mb_per_s": value.mb_per_s}
        return data
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM takes the same way out as Ctrl-C, through every cleanup."""
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about one minute instead of five")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--dir", type=Path, help="where to make the temporary directory")
    parser.add_argument("--seed", type=int, default=1, help="seed of the payloads and queries")
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="DIR",
        help="record the node with py-spy during PUT and GET 4 KB, collapsed stacks into DIR",
    )
    args = parser.parse_args()
    if args.py_spy is not None:
        if shutil.which("py-spy") is None:
            parser.error("--py-spy needs py-spy on the PATH (pip install py-spy)")
        args.py_spy.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    try:
        report = run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; node stopped and files removed", file=sys.stderr)
        return 130
    except (BenchError, OSError, aiohttp.ClientError) as exc:
        print(f"\nbenchmark failed: {exc}", file=sys.stderr)
        return 1
    rows = targets(report)
    print_targets(rows)
    print(f"\n{report.mode} run took {time.monotonic() - started:.0f} s")
    if args.json is not None:
        goals = [{"target": t, "measured": m, "met": ok} for t, m, ok in rows]
        document = {"report": to_json(report), "targets": goals}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
