"""Replay through a proxy: dlweb's consultation proxy beside pywb's proxy mode and a bare mitmproxy.

Writes two WARCs (seeded): 200 pages (HTML of 5-30 KB, about 20% images) of bench.example, each
over http and https and at two dates; and N captures (100,000; 20,000 with --quick) of one URL,
an hour apart, with one tiny payload. Both are imported into dlweb (`dlweb up`: 1 storage node,
replica 1, and its proxy) and into pywb (`wb-manager add`). Then, in the same run, with the three
proxies up side by side:

1. throughput: 16 keep-alive clients fetch the pages' latest captures in a loop through each
   proxy in turn, over HTTP then HTTPS (trusting each proxy's CA), after a warm-up; best of 2
   rounds: dlweb's proxy, pywb in proxy mode without content rewriting, and a bare mitmproxy
   answering from a dict in memory (the ceiling of any mitmproxy-based proxy); req/s, p50 and
   p99 latency, and every wrong answer (status, body length) counted;
2. closest-capture lookup among the N captures of one URL: single requests with Accept-Datetime,
   one at a time, each at another date, through dlweb's proxy and pywb's; median latency, and
   the capture served checked by its Memento-Datetime;
3. identity replay without a proxy: the same clients fetch the pages' latest captures over HTTP
   at their archival URLs, `{timestamp}id_/{url}`, from dlweb's direct front (the proxy's
   `--direct`, which `dlweb up` starts) and from pywb's `/coll/` (the same wayback process);
   req/s, latency and wrong answers as in 1.

Then media, in the same cluster: a capture of 1 GiB (streamed by the proxy from its storage node)
beside one of 4 KB, each comparison's sides taking turns for several rounds (min, median, max):

4. throughput of a whole GET through dlweb's proxy and straight from the storage node;
5. time to the first byte of the 1 GiB capture and of the 4 KB one through the proxy: the first
   request, then repeated, then each at another date (which the proxy has no answer kept for);
6. random 64 KiB Range requests over the 1 GiB capture, on 1 and on 4 keep-alive connections,
   through the proxy and straight from the node.

And the captures harbor on a URL of N captures (one content, an hour apart, inserted through the
cluster client): its page (histogram per year, calendar of a month) asked for one request at a
time through the proxy, the latest month then others; p50 and p99 latency, goal under 200 ms.

Usage: python benchmarks/bench_replay.py [--quick] [--seconds S] [--captures N] [--json FILE]
       [--skip-pages] [--skip-media] [--skip-calendar]
"""

import argparse
import asyncio
import functools
import hashlib
import io
import itertools
import random
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import uvloop
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import (  # noqa: E402
    MB,
    WORDS,
    BenchError,
    checked,
    cluster_pids,
    cpu_seconds,
    dlweb,
    run_benchmark,
    work_directory,
)

from archive.cluster import ClusterClient, LargeContent, NewCapture  # noqa: E402
from archive.config import load_config  # noqa: E402
from archive.reading import STREAMED_OVER  # noqa: E402
from archive.timestamps import parse_time  # noqa: E402
from deploy.launcher import CONFIG_FILE, read_record  # noqa: E402
from deploy.processes import RUN_DIR  # noqa: E402
from deploy.testing.ports import free_port  # noqa: E402
from deploy.testing.pywb import PYWB_VERSION, pywb_bin  # noqa: E402
from deploy.testing.spawn import end, spawn, tail  # noqa: E402
from deploy.testing.waits import NotReady, wait_until  # noqa: E402

NAN = float("nan")
HOST = "bench.example"
PAGES = 200
SCHEMES = ("http", "https")
IMAGES = 0.2
TEXT_SIZES = (5_000, 30_000)
IMAGE_SIZES = (5_000, 60_000)
DATES = (datetime(2023, 3, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC))
CONCURRENCY = 16
CA_FILE = "mitmproxy-ca-cert.pem"
MANY_URL = f"http://{HOST}/many.html"
MANY_START = datetime(2000, 1, 1, tzinfo=UTC)
MANY_STEP = timedelta(hours=1)
MANY_BODY = b"<!doctype html><html><body>one of many captures</body></html>\n"
# Each asked date is another (dlweb's proxy keeps an answer a few seconds), 20 minutes after a
# capture, so that the closest one is never in doubt.
LOOKUPS = 15
LOOKUP_OFFSET = timedelta(minutes=20)
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
REQUEST_TIMEOUT = 120.0
# As browsers send it: pywb keeps a CONNECT tunnel open for another request only when asked so.
KEEP_ALIVE = {"Connection": "keep-alive"}
TARGETS = {"http": 2.5, "https": 4.0, "lookup": 1000.0, "ceiling": 0.8, "direct": 5.0}
FILM_URL = "http://media.example/film.mp4"
STILL_URL = "http://media.example/still.jpg"
MISSING_URL = "http://media.example/never-captured.html"
FILM_SIZE = 2**30
STILL_SIZE = 4096
MEDIA_AT = datetime(2024, 1, 1, tzinfo=UTC)
PIECE = 2**20  # of the file written, and of each client read
SEEK = 64 * 1024
SEEK_CONNECTIONS = (1, 4)
FIRST_BYTES = 20  # requests of each size, for each way of asking but the first
MEDIA_LABELS = {"film": "1 GiB", "still": "4 KB", "node": "1 GiB straight from the node"}
WAYS = {"cold": "first request", "warm": "repeated", "dated": "another date each"}
CALENDAR_URL = f"http://{HOST}/calendar.html"
CALENDAR_START = datetime(2010, 1, 1, tzinfo=UTC)
CALENDAR_REQUESTS = 100
CALENDAR_GOAL_MS = 200.0
MEDIA_GOALS = {
    "throughput": (">=", 0.5),
    "first_byte warm": ("<=", 2.0),
    "first_byte dated": ("<=", 2.0),
}

# The ceiling: mitmproxy set up by proxy/server.py's own lean_master, with an addon answering from the
# latest response of each URL in the WARC, held in a dict; no archive, no cluster.
CEILING = """
import asyncio
import signal
import sys

from mitmproxy import http, options
from warcio.archiveiterator import ArchiveIterator

from proxy.server import lean_master

NOT_REPLAYED = {"transfer-encoding", "connection", "keep-alive", "content-length"}


def latest(path):
    pages = {}
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            date = record.rec_headers.get_header("WARC-Date")
            if url in pages and pages[url][0] >= date:
                continue
            fields = [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in record.http_headers.headers
                if k.lower() not in NOT_REPLAYED
            ]
            pages[url] = (date, fields, record.content_stream().read())
    return {url: (fields, body) for url, (_, fields, body) in pages.items()}


class Answer:
    def __init__(self, pages):
        self.pages = pages

    def request(self, flow):
        page = self.pages.get(flow.request.pretty_url)
        if page is None:
            flow.response = http.Response.make(404, b"not archived\\n")
            return
        fields, body = page
        response = http.Response.make(200, b"", http.Headers(fields))
        response.raw_content = body
        response.headers["Content-Length"] = str(len(body))
        flow.response = response


async def main(port, confdir, warc):
    mitm = options.Options(listen_host="127.0.0.1", listen_port=port, confdir=confdir)
    master = lean_master(mitm)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, master.shutdown)
    master.addons.add(Answer(latest(warc)))
    await master.run()


asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
"""


def timed(command: list[str], what: str, cwd: Path | None = None) -> float:
    started = time.monotonic()
    checked(command, what, cwd)
    return time.monotonic() - started


# -- the WARCs -----------------------------------------------------------------------------------


def warc_date(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_response(
    writer: WARCWriter, url: str, when: datetime, content_type: str, body: bytes
) -> None:
    headers = StatusAndHeaders(
        "200 OK",
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "max-age=3600"),
        ],
        protocol="HTTP/1.1",
    )
    record = writer.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        http_headers=headers,
        warc_headers_dict={"WARC-Date": warc_date(when)},
    )
    writer.write_record(record)


def payload(rng: random.Random, kind: str, title: str) -> tuple[str, bytes]:
    """An image, or a page of HTML-like text; with its content type."""
    if kind == "jpg":
        return "image/jpeg", rng.randbytes(rng.randint(*IMAGE_SIZES))
    size = rng.randint(*TEXT_SIZES)
    parts = [f"<!doctype html><html><head><title>{title}</title></head><body>\n"]
    length = len(parts[0])
    while length < size:
        words = " ".join(rng.choices(WORDS, k=rng.randint(20, 120)))
        parts.append(f'<p>{words} <a href="/html/{rng.randrange(PAGES)}.html">more</a></p>\n')
        length += len(parts[-1])
    return "text/html; charset=utf-8", ("".join(parts) + "</body></html>\n").encode()


def make_pages_warc(path: Path, rng: random.Random) -> list[tuple[str, int]]:
    """Write every page at both dates over both schemes; return each URL with the length of
    its latest payload, what a proxy serves when no date is asked."""
    latest: list[tuple[str, int]] = []
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for i in range(PAGES):
            kind = "jpg" if rng.random() < IMAGES else "html"
            urls = [f"{scheme}://{HOST}/{kind}/{i}.{kind}" for scheme in SCHEMES]
            for date in DATES:
                content_type, body = payload(rng, kind, f"page {i} of {date.year}")
                for url in urls:
                    write_response(writer, url, date + timedelta(seconds=i), content_type, body)
            latest.extend((url, len(body)) for url in urls)
    return latest


def make_many_warc(path: Path, captures: int) -> None:
    """Write `captures` responses of one URL, an hour apart, all with the same payload."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for i in range(captures):
            write_response(writer, MANY_URL, MANY_START + i * MANY_STEP, "text/html", MANY_BODY)


def lookup_dates(captures: int) -> list[tuple[str, str]]:
    """(Accept-Datetime, the Memento-Datetime of the closest capture) at LOOKUPS + 1 spots
    spread over the captures, the first for an untimed request."""
    dates = []
    for spot in range(LOOKUPS + 1):
        capture = MANY_START + (captures * spot // (LOOKUPS + 1)) * MANY_STEP
        asked = capture + LOOKUP_OFFSET
        dates.append((format_datetime(asked, usegmt=True), format_datetime(capture, usegmt=True)))
    return dates


# -- the proxies ---------------------------------------------------------------------------------


def answers(proxy: str, url: str) -> bool:
    """Whether `proxy` serves `url` (over HTTP): ready, and holding the pages."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    try:
        with opener.open(url, timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:  # refused, or an HTTP error status
        return False


@contextmanager
def running(command: list[str], log: Path, proxy: str, probe: str, cwd: Path) -> Iterator[None]:
    """A proxy process, ready once it serves `probe`; stopped (SIGTERM, then wait) on exit."""
    process = spawn(command, log, cwd)
    try:
        try:
            wait_until(
                lambda: answers(proxy, probe),
                f"{command[0]} to serve {probe} via {proxy}",
                READY_TIMEOUT,
                interval=0.2,
                process=process,
                details=lambda: tail(log),
            )
        except NotReady as exc:
            raise BenchError(str(exc)) from None
        yield
    finally:
        end(process, timeout=STOP_TIMEOUT)


@contextmanager
def dlweb_cluster(data: Path) -> Iterator[Path]:
    """A local cluster with its proxy (`dlweb up`); yields its configuration file."""
    try:
        checked(
            dlweb(
                "up", "--data", str(data), "--nodes", "1", "--replicas", "1", "--proxy-port", "0"
            ),
            "dlweb up",
        )
        yield data / CONFIG_FILE
    finally:
        subprocess.run(dlweb("down", "--data", str(data)), capture_output=True)


def pywb_config(workdir: Path) -> Path:
    """Proxy mode on the collection, archived bytes as they are (no rewriting, no banner),
    Memento headers on so that the capture served can be checked; returns the CA's file."""
    ca = workdir / "proxy-certs" / "pywb-ca.pem"
    (workdir / "config.yaml").write_text(
        "enable_memento: true\n"
        "proxy:\n"
        "  coll: coll\n"
        "  ca_name: pywb bench CA\n"
        f"  ca_file_cache: {ca}\n"
        "  enable_content_rewrite: false\n"
    )
    return ca


# -- the load ------------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: list[float]
    errors: int = 0
    first_error: str = ""

    def fail(self, problem: str) -> None:
        self.errors += 1
        self.first_error = self.first_error or problem

    async def timed(
        self, what: str, answer: Awaitable[tuple[int, bytes, str]]
    ) -> tuple[int, bytes, str] | None:
        """A request's answer, its latency counted; None, counted as a failure about `what`,
        when it could not be made."""
        began = time.perf_counter()
        try:
            got = await answer
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.fail(f"{what}: {exc!r}")
            return None
        self.latencies.append(time.perf_counter() - began)
        return got


def quantile(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else NAN


async def fetch(
    session: aiohttp.ClientSession,
    proxy: str | None,
    url: str,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes, str]:
    """Status, raw body and Memento-Datetime of one request through `proxy` (None: straight)."""
    sent = {**KEEP_ALIVE, **(headers or {})}
    async with session.get(url, proxy=proxy, headers=sent, allow_redirects=False) as r:
        return r.status, await r.read(), r.headers.get("Memento-Datetime", "")


def client_session(cafile: Path | None, limit: int) -> aiohttp.ClientSession:
    """Keep-alive connections trusting the proxy's CA; bodies as sent, not decoded."""
    context = ssl.create_default_context(cafile=str(cafile) if cafile else None)
    connector = aiohttp.TCPConnector(limit=limit, ssl=context)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False)


async def load(
    proxy: str | None,
    pages: list[tuple[str, int]],
    seconds: float,
    warmup: float,
    cafile: Path | None,
) -> dict[str, Any]:
    """Req/s and latency of CONCURRENCY clients fetching `pages` in a loop for `seconds`, after
    `warmup` seconds on the same connections (handshakes, certificates, caches)."""
    async with client_session(cafile, CONCURRENCY) as session:

        async def client(start: int, until: float, tally: Tally) -> None:
            i = start
            while time.monotonic() < until:
                url, length = pages[i % len(pages)]
                i += 1
                got = await tally.timed(url, fetch(session, proxy, url))
                if got is None:
                    continue
                status, body, _ = got
                if status != 200 or len(body) != length:
                    tally.fail(f"{url}: {status}, {len(body)} bytes where {length} are archived")

        async def phase(duration: float) -> tuple[Tally, float]:
            tally = Tally([])
            began = time.monotonic()
            stride = len(pages) // CONCURRENCY
            await asyncio.gather(
                *(client(n * stride, began + duration, tally) for n in range(CONCURRENCY))
            )
            return tally, time.monotonic() - began

        await phase(warmup)
        tally, elapsed = await phase(seconds)
    ordered = sorted(tally.latencies)
    return {
        "requests": len(ordered),
        "seconds": elapsed,
        "req_per_s": len(ordered) / elapsed,
        "p50_ms": quantile(ordered, 0.5) * 1000,
        "p99_ms": quantile(ordered, 0.99) * 1000,
        "errors": tally.errors,
        "first_error": tally.first_error,
    }


async def lookups(proxy: str, dates: list[tuple[str, str]]) -> dict[str, Any]:
    """Median latency of single Accept-Datetime requests for the URL of many captures, one at a
    time, each checked to be the closest capture; after one untimed request (the connection)."""
    tally = Tally([])
    async with client_session(None, 1) as session:
        await fetch(session, proxy, MANY_URL, {"Accept-Datetime": dates[0][0]})
        for asked, expected in dates[1:]:
            got = await tally.timed(
                asked, fetch(session, proxy, MANY_URL, {"Accept-Datetime": asked})
            )
            if got is None:
                continue
            status, body, memento = got
            if status != 200 or body != MANY_BODY or memento != expected:
                tally.fail(f"{asked}: {status}, capture of {memento!r} where {expected} is")
    return {
        "requests": len(tally.latencies),
        "median_ms": statistics.median(tally.latencies or [NAN]) * 1000,
        "max_ms": max(tally.latencies, default=NAN) * 1000,
        "errors": tally.errors,
        "first_error": tally.first_error,
    }


@dataclass(frozen=True)
class Proxy:
    label: str
    url: str
    ca: Path


def throughput(
    proxies: dict[str, Proxy], pages: list[tuple[str, int]], args: argparse.Namespace
) -> dict[str, dict[str, dict[str, Any]]]:
    """Load through each proxy in turn, HTTP then HTTPS, for `args.rounds` rounds; keeps each
    proxy's best round per scheme (a machine's other work hits all alike), and every error."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for scheme in SCHEMES:
            wanted = [(url, length) for url, length in pages if url.startswith(f"{scheme}://")]
            for name, proxy in proxies.items():
                cafile = proxy.ca if scheme == "https" else None
                figures = uvloop.run(load(proxy.url, wanted, args.seconds, args.warmup, cafile))
                errors = f", {figures['errors']:,} ERRORS" if figures["errors"] else ""
                print(
                    f"  round {round_ + 1}, {scheme:<5} {proxy.label:<26}"
                    f" {figures['req_per_s']:>7,.0f} req/s{errors}"
                )
                runs.setdefault((name, scheme), []).append(figures)
    best: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in proxies}
    for (name, scheme), tried in runs.items():
        best[name][scheme] = {
            **max(tried, key=lambda figures: float(figures["req_per_s"])),
            "rounds": [figures["req_per_s"] for figures in tried],
            "errors": sum(figures["errors"] for figures in tried),
            "first_error": next((f["first_error"] for f in tried if f["first_error"]), ""),
        }
    return best


def archival_pages(pages: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The HTTP pages at their archival URL's end, `{timestamp}id_/{url}` of the latest capture
    (page i was captured i seconds after the latest date)."""
    latest: list[tuple[str, int]] = []
    for url, length in pages:
        if url.startswith("http://"):
            number = int(url.rsplit("/", 1)[1].split(".")[0])
            stamp = (DATES[-1] + timedelta(seconds=number)).strftime("%Y%m%d%H%M%S")
            latest.append((f"{stamp}id_/{url}", length))
    return latest


def direct_throughput(
    roots: dict[str, str], pages: list[tuple[str, int]], args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    """Load on each side's archival URLs under its root in turn, no proxy, for `args.rounds`
    rounds; each side's best round, and every error."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for name, root in roots.items():
            asked = [(f"{root}/{end}", length) for end, length in pages]
            figures = uvloop.run(load(None, asked, args.seconds, args.warmup, None))
            errors = f", {figures['errors']:,} ERRORS" if figures["errors"] else ""
            print(
                f"  round {round_ + 1}, {name:<5} {root:<40}"
                f" {figures['req_per_s']:>7,.0f} req/s{errors}"
            )
            runs.setdefault(name, []).append(figures)
    return {
        name: {
            **max(tried, key=lambda figures: float(figures["req_per_s"])),
            "rounds": [figures["req_per_s"] for figures in tried],
            "errors": sum(figures["errors"] for figures in tried),
            "first_error": next((f["first_error"] for f in tried if f["first_error"]), ""),
        }
        for name, tried in runs.items()
    }


# -- media ---------------------------------------------------------------------------------------


class WrongAnswer(Exception):
    """An answer of another status or length than asked for: its figure would mean nothing."""


@dataclass(frozen=True)
class Source:
    """Where a GET goes: the address connected to, and the request target and Host sent there
    (an absolute URL to a proxy, a path to the storage node)."""

    address: tuple[str, int]
    target: str
    host: str


def via_proxy(proxy: str, url: str) -> Source:
    where = urlsplit(proxy)
    return Source((where.hostname or "127.0.0.1", where.port or 80), url, urlsplit(url).netloc)


def from_node(held: LargeContent) -> Source:
    where = urlsplit(held.address)
    address = (where.hostname or "127.0.0.1", where.port or 80)
    return Source(address, f"/content/{held.name}", where.netloc)


class Wire:
    """One keep-alive HTTP/1.1 connection read in large pieces. Of each answer only the status
    and Content-Length are parsed, and nothing is hashed: the client costs little beside the
    servers measured, which share the machine with it."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.sock = socket.create_connection(source.address, timeout=REQUEST_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stream = io.BufferedReader(socket.SocketIO(self.sock, "rb"), PIECE)

    def close(self) -> None:
        self.stream.close()
        self.sock.close()

    def ask(self, headers: dict[str, str] | None = None) -> tuple[int, int]:
        """Send a GET and read the answer's head: its status and Content-Length."""
        lines = [f"GET {self.source.target} HTTP/1.1", f"Host: {self.source.host}"]
        lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = self.stream.readline().split()
        if len(status) < 2:
            raise WrongAnswer(f"{self.source.target}: the connection ended without an answer")
        length = 0
        while (line := self.stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return int(status[1]), length

    def read_body(self, length: int, buffer: memoryview) -> int:
        """Read `length` bytes into `buffer`, again and again; how many came before the end."""
        left = length
        while left and (got := self.stream.readinto(buffer[: min(left, len(buffer))])):
            left -= got
        return length - left


def expect(source: Source, got: tuple[int, int], wanted: tuple[int, int]) -> None:
    """Raise WrongAnswer unless the (status, length) got are those wanted."""
    if got != wanted:
        raise WrongAnswer(f"{source.target}: {got[0]}, {got[1]:,} bytes where {wanted[1]:,} are")


def whole_get(source: Source) -> float:
    """MB/s of one GET of the 1 GiB capture, from the request to the last byte read."""
    buffer = memoryview(bytearray(PIECE))
    with closing(Wire(source)) as wire:
        began = time.perf_counter()
        status, length = wire.ask()
        got = wire.read_body(length, buffer)
        elapsed = time.perf_counter() - began
    expect(source, (status, got), (200, FILM_SIZE))
    return FILM_SIZE / MB / elapsed


def first_byte(source: Source, size: int, headers: dict[str, str] | None = None) -> float:
    """Milliseconds from a request on a new connection to the first byte of its body. The
    connection is closed then, as a player that reads no further would: the rest of a large
    body is never sent."""
    with closing(Wire(source)) as wire:
        began = time.perf_counter()
        status, length = wire.ask(headers)
        first = wire.stream.read(1)
        elapsed = time.perf_counter() - began
    expect(source, (status, length if first else 0), (200, size))
    return elapsed * 1000


def seek_until(source: Source, until: float, rng: random.Random) -> int:
    """Random 64 KiB ranges of the 1 GiB capture, one after another on one keep-alive
    connection, until `until`; how many were answered."""
    buffer = memoryview(bytearray(SEEK))
    answered = 0
    with closing(Wire(source)) as wire:
        while time.monotonic() < until:
            start = rng.randrange(FILM_SIZE - SEEK)
            status, length = wire.ask({"Range": f"bytes={start}-{start + SEEK - 1}"})
            expect(source, (status, wire.read_body(length, buffer)), (206, SEEK))
            answered += 1
    return answered


def seeks(source: Source, connections: int, seconds: float, rng: random.Random) -> float:
    """Range requests per second on `connections` connections at once, a thread each (a thread
    waiting on its socket lets the others run)."""
    began = time.monotonic()
    rngs = [random.Random(rng.random()) for _ in range(connections)]
    with ThreadPoolExecutor(connections) as pool:
        answered = sum(pool.map(lambda r: seek_until(source, began + seconds, r), rngs))
    return answered / (time.monotonic() - began)


def alternated(rounds: int, sides: dict[str, Callable[[], float]]) -> dict[str, dict[str, Any]]:
    """Each side's figure once a round, the sides in turns, the first one changing from round to
    round: the machine's other work falls on all alike. Their spread, and any wrong answer."""
    tallies = {name: Tally([]) for name in sides}
    order = list(sides)
    for round_ in range(rounds):
        for name in order if round_ % 2 == 0 else order[::-1]:
            try:
                tallies[name].latencies.append(sides[name]())
            except (WrongAnswer, OSError) as exc:
                tallies[name].fail(repr(exc))
    return {name: spread(tally) for name, tally in tallies.items()}


def spread(tally: Tally) -> dict[str, Any]:
    """Min, median and max of a tally's figures (MB/s, ms or req/s), with its wrong answers."""
    values = tally.latencies
    return {
        "runs": len(values),
        "min": min(values, default=NAN),
        "median": statistics.median(values or [NAN]),
        "max": max(values, default=NAN),
        "values": values,
        "errors": tally.errors,
        "first_error": tally.first_error,
    }


def write_film(path: Path, rng: random.Random) -> str:
    """Write the 1 GiB capture's random bytes, a piece at a time (never held whole); their
    SHA-256."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for _ in range(FILM_SIZE // PIECE):
            piece = rng.randbytes(PIECE)
            out.write(piece)
            digest.update(piece)
    return digest.hexdigest()


async def insert_media(config: Path, film: Path, film_name: str, still: bytes) -> LargeContent:
    """Insert both captures, the large content uploaded from its file by the client; the node
    that holds it, as the proxy finds it."""
    still_name = hashlib.sha256(still).hexdigest()
    bodies: dict[str, bytes | Path] = {film_name: film, still_name: still}
    captures = []
    for url, name, size, kind in (
        (FILM_URL, film_name, FILM_SIZE, "video/mp4"),
        (STILL_URL, still_name, STILL_SIZE, "image/jpeg"),
    ):
        header = f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\n\r\n".encode()
        header_name = hashlib.sha256(header).hexdigest()
        bodies[header_name] = header
        when = parse_time(warc_date(MEDIA_AT))
        captures.append(NewCapture(url, when, name, header_name, 200, size, len(header)))
    async with ClusterClient(load_config(config)) as client:
        await client.insert(captures, bodies.__getitem__)
        held = await client.content_or_holder(film_name, STREAMED_OVER)
    if not isinstance(held, LargeContent):
        raise BenchError(f"the {FILM_SIZE:,} bytes of {FILM_URL} were read whole, not held")
    return held


def media_throughput(
    proxy: Source, node: Source, rounds: int, pids: dict[str, list[int]]
) -> dict[str, Any]:
    """Whole GETs of the 1 GiB capture through the proxy and from its node, in turns; with the
    CPU seconds the serving processes spent on each (the proxy's and the node's, the node's)."""
    cpu: dict[str, list[float]] = {"proxy": [], "node": []}

    def costed(side: str, source: Source) -> Callable[[], float]:
        def sample() -> float:
            before = cpu_seconds(pids[side])
            rate = whole_get(source)
            cpu[side].append(cpu_seconds(pids[side]) - before)
            return rate

        return sample

    figures = alternated(rounds, {"proxy": costed("proxy", proxy), "node": costed("node", node)})
    for side, spent in cpu.items():
        figures[side]["cpu_s"] = statistics.median(spent or [NAN])
    return figures


def media_first_bytes(proxy: str, node: Source) -> dict[str, Any]:
    """Time to first byte through the proxy, 1 GiB beside 4 KB, in turns: each one's first
    request (after one for a URL never captured, which opens the proxy's connections to the
    cluster); then requests repeated, answered from the answer the proxy made (the 4 KB body kept
    in it), with the node's own first byte of 1 GiB in the same turns, to tell what the proxy
    adds; then each at another date, which the proxy looks up again."""
    sources = {
        "film": (via_proxy(proxy, FILM_URL), FILM_SIZE),
        "still": (via_proxy(proxy, STILL_URL), STILL_SIZE),
    }
    with closing(Wire(via_proxy(proxy, MISSING_URL))) as wire:
        wire.ask()
    dates = (MEDIA_AT + timedelta(hours=n) for n in itertools.count(1))

    def sample(what: str, way: str) -> Callable[[], float]:
        source, size = sources[what]

        def one() -> float:
            if way != "dated":
                return first_byte(source, size)
            asked = format_datetime(next(dates), usegmt=True)
            return first_byte(source, size, {"Accept-Datetime": asked})

        return one

    figures: dict[str, Any] = {}
    for way in WAYS:
        sides = {f"{what} {way}": sample(what, way) for what in sources}
        if way == "warm":
            sides["node warm"] = functools.partial(first_byte, node, FILM_SIZE)
        figures |= alternated(1 if way == "cold" else FIRST_BYTES, sides)
    return figures


def media_seeks(
    proxy: Source, node: Source, rounds: int, seconds: float, rng: random.Random
) -> dict[str, Any]:
    """Random ranges through the proxy and from the node, on 1 and on 4 connections, in turns."""
    sides: dict[str, Callable[[], float]] = {}
    for connections in SEEK_CONNECTIONS:
        for side, source in (("proxy", proxy), ("node", node)):
            sides[f"{side} {connections}"] = functools.partial(
                seeks, source, connections, seconds, rng
            )
    return alternated(rounds, sides)


def media(work: Path, cluster: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Insert the two captures into the running cluster, then measure its proxy on them."""
    config = cluster / CONFIG_FILE
    rng = random.Random(args.seed)
    print(f"writing {FILM_SIZE // MB:,} MB of random bytes and inserting them as {FILM_URL} ...")
    with tempfile.TemporaryDirectory(dir=work) as folder:
        film = Path(folder) / "film.mp4"
        began = time.monotonic()
        name = write_film(film, rng)
        written = time.monotonic()
        held = uvloop.run(insert_media(config, film, name, rng.randbytes(STILL_SIZE)))
    report: dict[str, Any] = {
        "write_s": written - began,
        "insert_s": time.monotonic() - written,
        "rounds": args.media_rounds,
        "seek_seconds": args.seek_seconds,
    }
    print(f"  written in {report['write_s']:.1f} s, inserted in {report['insert_s']:.1f} s")
    proxy = load_config(config).proxy
    if proxy is None:
        raise BenchError(f"{config} names no proxy")
    pids = cluster_pids(cluster / RUN_DIR)
    node_pids = [pid for process, pid in pids.items() if process.startswith("node")]
    serving = {"proxy": [pids["proxy"], *node_pids], "node": node_pids}
    film_proxy, film_node = via_proxy(proxy, FILM_URL), from_node(held)
    print(f"throughput of whole GETs, proxy and node in turns, {args.media_rounds} rounds ...")
    report["throughput"] = media_throughput(film_proxy, film_node, args.media_rounds, serving)
    print(f"time to first byte, 1 GiB and 4 KB in turns, {FIRST_BYTES} requests each way ...")
    report["first_byte"] = media_first_bytes(proxy, film_node)
    print(
        f"random {SEEK // 1024} KiB ranges, {args.seek_seconds:g} s a run, proxy and node in"
        f" turns, {args.media_rounds} rounds ..."
    )
    report["seeks"] = media_seeks(film_proxy, film_node, args.media_rounds, args.seek_seconds, rng)
    report["ratios"] = media_ratios(report)
    report["seconds"] = time.monotonic() - began
    return report


def media_ratios(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each comparison's ratio of medians, whether its figures came without a wrong answer, and
    where it has a goal, whether that is met."""
    flow, first, seek = report["throughput"], report["first_byte"], report["seeks"]
    pairs = {
        "throughput": (flow["proxy"], flow["node"]),
        **{f"first_byte {way}": (first[f"film {way}"], first[f"still {way}"]) for way in WAYS},
        **{f"seeks {n}": (seek[f"proxy {n}"], seek[f"node {n}"]) for n in SEEK_CONNECTIONS},
    }
    result: dict[str, dict[str, Any]] = {}
    for key, (top, bottom) in pairs.items():
        ratio = quotient(top["median"], bottom["median"])
        entry = result[key] = {"ratio": ratio, "clean": top["errors"] == bottom["errors"] == 0}
        if key in MEDIA_GOALS:
            sense, goal = MEDIA_GOALS[key]
            entry["goal"] = f"{sense} {goal:g}"
            entry["met"] = entry["clean"] and (ratio >= goal if sense == ">=" else ratio <= goal)
    return result


def show_media(report: dict[str, Any]) -> None:
    flow, first, seek = report["throughput"], report["first_byte"], report["seeks"]
    print()
    print(
        f"Media: a capture of {FILM_SIZE // MB:,} MB streamed by the proxy from its node, one of"
        f" {STILL_SIZE:,} bytes; each comparison's sides in turns ({report['seconds']:.0f} s)"
    )
    print(f"  {'':<42}{'runs':>5}{'min':>9}{'median':>9}{'max':>9}{'errors':>8}")
    sections: list[tuple[str, str, list[tuple[str, dict[str, Any]]]]] = [
        (
            f"throughput of a whole GET, MB/s, {report['rounds']} rounds",
            ",.0f",
            [("dlweb proxy", flow["proxy"]), ("storage node, direct", flow["node"])],
        ),
        (
            "time to first byte through the proxy, ms",
            ".2f",
            [
                (f"{WAYS[key.split()[1]]}, {MEDIA_LABELS[key.split()[0]]}", row)
                for key, row in first.items()
            ],
        ),
        (
            f"random {SEEK // 1024} KiB ranges of the 1 GiB capture, req/s,"
            f" {report['seek_seconds']:g} s a run",
            ",.0f",
            [
                (f"{label}, {n} connection{'s' if n > 1 else ''}", seek[f"{side} {n}"])
                for n in SEEK_CONNECTIONS
                for side, label in (("proxy", "dlweb proxy"), ("node", "storage node, direct"))
            ],
        ),
    ]
    for title, form, rows in sections:
        print(f"  {title}")
        for label, row in rows:
            figures = "".join(f"{row[key]:>9{form}}" for key in ("min", "median", "max"))
            print(f"    {label:<40}{row['runs']:>5}{figures}{row['errors']:>8,}")
    print(
        f"  CPU seconds of a whole GET (median): proxy and node {flow['proxy']['cpu_s']:.2f},"
        f" node alone {flow['node']['cpu_s']:.2f}"
    )
    print()
    ratios = report["ratios"]
    names = {
        "throughput": "proxy / node, throughput",
        **{
            f"first_byte {way}": f"1 GiB / 4 KB, first byte, {label}" for way, label in WAYS.items()
        },
        **{f"seeks {n}": f"proxy / node, ranges, {n} connection(s)" for n in SEEK_CONNECTIONS},
    }
    for key, name in names.items():
        entry = ratios[key]
        goal = (
            f"   goal {entry['goal']}: {'PASS' if entry['met'] else 'MISS'}"
            if "goal" in entry
            else ""
        )
        print(f"  ratio ({name}){'':<{44 - len(name)}}{entry['ratio']:>8.2f}{goal}")
    errors = [
        f"{section} {key}: {row['errors']:,} ({row['first_error']})"
        for section in ("throughput", "first_byte", "seeks")
        for key, row in report[section].items()
        if row["errors"]
    ]
    if errors:
        print("\nWRONG ANSWERS (a goal resting on them is a MISS):")
        for line in errors:
            print(f"  {line}")
    print(
        "These are measurements, not pass/fail tests: PASS or MISS says where a figure stands"
        " against its goal."
    )


# -- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    with work_directory("replay", args) as work, ExitStack() as stack:
        return run_in(work, args, stack)


def run_in(work: Path, args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    """The pages' comparison, then media, in one cluster, its proxy taking both."""
    cluster = work / "cluster"
    report: dict[str, Any] = {}
    if args.skip_pages:
        stack.enter_context(dlweb_cluster(cluster))
    else:
        report = compare_pages(work, cluster, args, stack)
    if not args.skip_media:
        report["media"] = media(work, cluster, args)
    if not args.skip_calendar:
        report["calendar"] = calendar_page(cluster, args)
    return report


def compare_pages(
    work: Path, cluster: Path, args: argparse.Namespace, stack: ExitStack
) -> dict[str, Any]:
    pages_warc, many_warc = work / "pages.warc.gz", work / "many.warc.gz"
    print(f"writing {PAGES} pages x {len(SCHEMES)} schemes x {len(DATES)} dates ...")
    pages = make_pages_warc(pages_warc, random.Random(args.seed))
    print(f"writing {args.captures:,} captures of {MANY_URL} ...")
    make_many_warc(many_warc, args.captures)
    warcs = {
        "pages_mb": pages_warc.stat().st_size / MB,
        "latest_payload_mb": sum(length for _, length in pages) / MB / len(SCHEMES),
        "captures": args.captures,
        "many_mb": many_warc.stat().st_size / MB,
    }
    print(f"  {warcs['pages_mb']:.1f} MB and {warcs['many_mb']:.1f} MB gzipped")

    print(f"importing into pywb {PYWB_VERSION} (wb-manager add) and dlweb (dlweb import) ...")
    imports: dict[str, dict[str, float]] = {"pywb": {}, "dlweb": {}}
    pywb_dir = work / "pywb"
    pywb_dir.mkdir()
    pywb = pywb_bin()
    manager = str(pywb / "wb-manager")
    checked([manager, "init", "coll"], "wb-manager init", pywb_dir)
    config = stack.enter_context(dlweb_cluster(cluster))
    for key, warc in (("pages", pages_warc), ("many", many_warc)):
        add = [manager, "add", "coll", str(warc)]
        imports["pywb"][key] = timed(add, "wb-manager add", pywb_dir)
        command = dlweb("import", "-c", str(config), str(warc))
        imports["dlweb"][key] = timed(command, "dlweb import")
        print(
            f"  {warc.name}: pywb {imports['pywb'][key]:.1f} s, dlweb {imports['dlweb'][key]:.1f} s"
        )

    print("starting pywb in proxy mode and a bare mitmproxy (dlweb up started dlweb's) ...")
    probe = pages[0][0]
    pywb_ca = pywb_config(pywb_dir)
    port = free_port()
    wayback = [str(pywb / "wayback"), "--bind", "127.0.0.1", "--port", str(port)]
    pywb_url = f"http://127.0.0.1:{port}"
    stack.enter_context(running(wayback, pywb_dir / "wayback.log", pywb_url, probe, pywb_dir))
    dlweb_url = load_config(config).proxy
    if dlweb_url is None or not answers(dlweb_url, probe):
        raise BenchError(f"the dlweb proxy ({dlweb_url}) does not serve {probe}")
    script, confdir = work / "ceiling.py", work / "ceiling"
    script.write_text(CEILING)
    port = free_port()
    ceiling = [sys.executable, str(script), str(port), str(confdir), str(pages_warc)]
    bare_url = f"http://127.0.0.1:{port}"
    stack.enter_context(running(ceiling, work / "ceiling.log", bare_url, probe, work))
    proxies = {
        "pywb": Proxy(f"pywb {PYWB_VERSION} proxy mode", pywb_url, pywb_ca),
        "dlweb": Proxy("dlweb proxy", dlweb_url, cluster / "proxy" / "ca" / CA_FILE),
        "ceiling": Proxy("bare mitmproxy (ceiling)", bare_url, confdir / CA_FILE),
    }

    print(
        f"throughput: {CONCURRENCY} clients, {args.warmup:g} s of warm-up then {args.seconds:g} s"
        f" through each proxy, {args.rounds} round(s) ..."
    )
    report: dict[str, Any] = {
        "warcs": warcs,
        "imports": imports,
        "seconds": args.seconds,
        "rounds": args.rounds,
    }
    report.update(throughput(proxies, pages, args))
    print(f"closest capture among {args.captures:,}, {LOOKUPS} dates, one request at a time ...")
    dates = lookup_dates(args.captures)
    for name in ("pywb", "dlweb"):
        report[name]["lookup"] = figures = uvloop.run(lookups(proxies[name].url, dates))
        errors = f", {figures['errors']:,} ERRORS" if figures["errors"] else ""
        print(f"  {proxies[name].label:<26} median {figures['median_ms']:,.1f} ms{errors}")
    direct = read_record(cluster)["processes"]["proxy"]["direct"]
    roots = {"pywb": f"{pywb_url}/coll", "dlweb": f"http://127.0.0.1:{direct}/web"}
    print("identity replay without a proxy (id_ archival URLs, HTTP) ...")
    report["direct"] = direct_throughput(roots, archival_pages(pages), args)
    return report


def quotient(top: float, bottom: float) -> float:
    """top / bottom; a peer that served nothing (all errors) makes no division error."""
    return top / bottom if bottom else float("inf")


def ratios(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target's ratio, and whether the figures behind it came without a wrong answer."""
    ours, pywb, bare = report["dlweb"], report["pywb"], report["ceiling"]

    def rate(side: dict[str, Any], scheme: str) -> float:
        return float(side[scheme]["req_per_s"])

    def clean(*figures: dict[str, Any]) -> bool:
        return all(f["errors"] == 0 for f in figures)

    result = {
        scheme: {
            "ratio": quotient(rate(ours, scheme), rate(pywb, scheme)),
            "clean": clean(ours[scheme], pywb[scheme]),
        }
        for scheme in SCHEMES
    }
    result["lookup"] = {
        "ratio": quotient(pywb["lookup"]["median_ms"], ours["lookup"]["median_ms"]),
        "clean": clean(ours["lookup"], pywb["lookup"]),
    }
    direct = report["direct"]
    result["direct"] = {
        "ratio": quotient(direct["dlweb"]["req_per_s"], direct["pywb"]["req_per_s"]),
        "clean": clean(direct["dlweb"], direct["pywb"]),
    }
    result["ceiling"] = {
        "ratio": min(quotient(rate(ours, scheme), rate(bare, scheme)) for scheme in SCHEMES),
        "clean": clean(*(ours[s] for s in SCHEMES), *(bare[s] for s in SCHEMES)),
    }
    for key, entry in result.items():
        entry["target"] = TARGETS[key]
        entry["met"] = entry["clean"] and entry["ratio"] >= TARGETS[key]
    return result


def show(report: dict[str, Any]) -> None:
    if "ratios" in report:
        show_pages(report)
    if "media" in report:
        show_media(report["media"])
    if "calendar" in report:
        show_calendar(report["calendar"])


def show_pages(report: dict[str, Any]) -> None:
    warcs, imports = report["warcs"], report["imports"]
    print()
    print(
        f"Replay of {PAGES} pages' latest captures ({warcs['latest_payload_mb']:.1f} MB per"
        f" scheme), {CONCURRENCY} keep-alive clients, {report['seconds']:g} s a run,"
        f" best of {report['rounds']}"
    )
    print(f"  {'':<28}{'scheme':<8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    rows = [
        (f"pywb {PYWB_VERSION} proxy mode", report["pywb"]),
        ("dlweb proxy", report["dlweb"]),
        ("bare mitmproxy (ceiling)", report["ceiling"]),
    ]
    for scheme in SCHEMES:
        for label, side in rows:
            row = side[scheme]
            print(
                f"  {label:<28}{scheme:<8}{row['req_per_s']:>9,.0f}{row['p50_ms']:>9.1f}"
                f"{row['p99_ms']:>9.1f}{row['errors']:>8,}"
            )
    print()
    print("Identity replay without a proxy ({timestamp}id_/{url}, HTTP)")
    direct = report["direct"]
    for label, name in ((f"pywb {PYWB_VERSION} /coll/", "pywb"), ("dlweb direct front", "dlweb")):
        row = direct[name]
        print(
            f"  {label:<28}{'http':<8}{row['req_per_s']:>9,.0f}{row['p50_ms']:>9.1f}"
            f"{row['p99_ms']:>9.1f}{row['errors']:>8,}"
        )
    print()
    print(
        f"Closest capture among {warcs['captures']:,} of one URL, Accept-Datetime, one request"
        f" at a time"
    )
    print(f"  {'':<28}{'median ms':>10}{'max ms':>10}{'errors':>8}")
    for label, side in rows[:2]:
        row = side["lookup"]
        print(f"  {label:<28}{row['median_ms']:>10.2f}{row['max_ms']:>10.2f}{row['errors']:>8,}")
    print()
    print(f"Imports, seconds{'pages':>23}{'one URL':>10}")
    for name in ("pywb", "dlweb"):
        print(f"  {name:<28}{imports[name]['pages']:>10.1f}{imports[name]['many']:>10.1f}")
    print()
    checks = report["ratios"]
    print(f"  ratio (dlweb / pywb, HTTP req/s)          {checks['http']['ratio']:>8.2f}")
    print(f"  ratio (dlweb / pywb, HTTPS req/s)         {checks['https']['ratio']:>8.2f}")
    print(f"  ratio (pywb / dlweb, lookup latency)      {checks['lookup']['ratio']:>8.0f}")
    print(f"  ratio (dlweb / bare mitmproxy, the lower) {checks['ceiling']['ratio']:>8.2f}")
    print(f"  ratio (dlweb / pywb, id_ req/s, no proxy) {checks['direct']['ratio']:>8.2f}")
    errors = [
        f"{label} {part}: {side[part]['errors']:,} ({side[part]['first_error']})"
        for label, side in rows
        for part in (*SCHEMES, "lookup")
        if part in side and side[part]["errors"]
    ]
    errors += [
        f"{name} direct: {row['errors']:,} ({row['first_error']})"
        for name, row in direct.items()
        if row["errors"]
    ]
    if errors:
        print("\nWRONG ANSWERS (a target resting on them is a MISS):")
        for line in errors:
            print(f"  {line}")
    print()
    names = {
        "http": "dlweb >= 2.5x pywb req/s over HTTP",
        "https": "dlweb >= 4x pywb req/s over HTTPS",
        "lookup": f"closest capture among {warcs['captures']:,} >= 1000x faster than pywb",
        "ceiling": "dlweb >= 0.8x bare mitmproxy req/s, HTTP and HTTPS",
        "direct": "dlweb's direct front >= 5x pywb's id_ replay req/s",
    }
    for key, name in names.items():
        print(f"target: {name}: {'PASS' if checks[key]['met'] else 'MISS'}")
    if warcs["captures"] < 100_000:
        print(f"  (the lookup target is for 100,000 captures; this run had {warcs['captures']:,})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter loads, fewer captures")
    parser.add_argument("--seconds", type=float, default=None, help="of each load (default 8)")
    parser.add_argument("--rounds", type=int, default=None, help="of loads, best kept (2)")
    parser.add_argument("--captures", type=int, default=None, help="of the one URL (100,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the pages' contents")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary dir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--skip-pages", action="store_true", help="media only, no pywb")
    parser.add_argument("--skip-media", action="store_true", help="no 1 GiB capture")
    parser.add_argument("--skip-calendar", action="store_true", help="no captures harbor")
    args = parser.parse_args()
    if args.skip_pages and args.skip_media and args.skip_calendar:
        parser.error("--skip-pages, --skip-media and --skip-calendar leave nothing to measure")
    args.seconds = args.seconds or (3.0 if args.quick else 8.0)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.warmup = 3.0
    args.captures = args.captures or (20_000 if args.quick else 100_000)
    args.media_rounds = 2 if args.quick else 4
    args.seek_seconds = 1.0 if args.quick else 2.0
    outcome = run_benchmark(args, with_ratios, show, "proxies and cluster stopped, files removed")
    return outcome if isinstance(outcome, int) else 0


# -- the captures harbor -------------------------------------------------------------------------


async def insert_calendar(config: Path, captures: int) -> None:
    """`captures` captures of CALENDAR_URL an hour apart, all naming one content."""
    body = b"<!doctype html><html><body>one of the calendar's captures</body></html>\n"
    header = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    bodies = {hashlib.sha256(data).hexdigest(): data for data in (body, header)}
    content, header_name = bodies
    start = parse_time(warc_date(CALENDAR_START))
    hour = 3_600_000_000
    new = [
        NewCapture(CALENDAR_URL, start + i * hour, content, header_name, 200, len(body))
        for i in range(captures)
    ]
    async with ClusterClient(load_config(config)) as client:
        await client.insert(new, bodies.__getitem__)


def calendar_pages(captures: int, requests: int, rng: random.Random) -> list[str]:
    """The harbor's page of CALENDAR_URL: its default (the latest month), then random months."""
    page = f"http://captures.dlweb/?url={CALENDAR_URL}"
    last = CALENDAR_START + (captures - 1) * timedelta(hours=1)
    months = [
        (year, month)
        for year in range(CALENDAR_START.year, last.year + 1)
        for month in range(1, 13)
        if (year, month) <= (last.year, last.month)
    ]
    asked = [rng.choice(months) for _ in range(requests - 1)]
    return [page, *(f"{page}&year={year}&month={month:02d}" for year, month in asked)]


async def calendar_latencies(proxy: str, pages: list[str], captures: int) -> dict[str, Any]:
    """p50 and p99 latency of the pages asked one at a time on one keep-alive connection, after
    one untimed request; each answer checked to be the page of all the captures."""
    tally = Tally([])
    told = f"{captures:,} captures"
    async with client_session(None, 1) as session:
        await fetch(session, proxy, pages[0])
        for page in pages:
            got = await tally.timed(page, fetch(session, proxy, page))
            if got is None:
                continue
            status, body, _ = got
            if status != 200 or told.encode() not in body or b'class="calendar"' not in body:
                tally.fail(f"{page}: {status}, {len(body):,} bytes without the calendar")
    ordered = sorted(tally.latencies)
    return {
        "requests": len(ordered),
        "p50_ms": quantile(ordered, 0.5) * 1000,
        "p99_ms": quantile(ordered, 0.99) * 1000,
        "max_ms": max(ordered, default=NAN) * 1000,
        "errors": tally.errors,
        "first_error": tally.first_error,
    }


def calendar_page(cluster: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Insert the URL of many captures into the running cluster, then time its harbor page."""
    config = cluster / CONFIG_FILE
    proxy = load_config(config).proxy
    if proxy is None:
        raise BenchError(f"{config} names no proxy")
    print(f"inserting {args.captures:,} captures of {CALENDAR_URL} ...")
    began = time.monotonic()
    uvloop.run(insert_calendar(config, args.captures))
    inserted = time.monotonic() - began
    print(f"  inserted in {inserted:.1f} s")
    print(f"the captures harbor's page of {CALENDAR_URL}, {CALENDAR_REQUESTS} requests ...")
    pages = calendar_pages(args.captures, CALENDAR_REQUESTS, random.Random(args.seed))
    figures = uvloop.run(calendar_latencies(proxy, pages, args.captures))
    met = figures["errors"] == 0 and figures["p99_ms"] < CALENDAR_GOAL_MS
    return {**figures, "captures": args.captures, "insert_s": inserted, "met": met}


def show_calendar(report: dict[str, Any]) -> None:
    print()
    print(
        f"The captures harbor's page (histogram per year, calendar of a month) of one URL of"
        f" {report['captures']:,} captures, one request at a time through the proxy"
    )
    print(f"  {'requests':>10}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    print(
        f"  {report['requests']:>10,}{report['p50_ms']:>9.1f}{report['p99_ms']:>9.1f}"
        f"{report['max_ms']:>9.1f}{report['errors']:>8,}"
    )
    if report["errors"]:
        print(f"  WRONG ANSWERS: {report['first_error']}")
    goal = f"p99 under {CALENDAR_GOAL_MS:.0f} ms"
    print(f"target: captures harbor page, {goal}: {'PASS' if report['met'] else 'MISS'}")
    if report["captures"] < 100_000:
        print(f"  (the target is for 100,000 captures; this run had {report['captures']:,})")


def with_ratios(args: argparse.Namespace) -> dict[str, Any]:
    report = run(args)
    if not args.skip_pages:
        report["ratios"] = ratios(report)
    return report


if __name__ == "__main__":
    sys.exit(main())
