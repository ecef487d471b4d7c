"""The proxy under attack: does the front door hold, and do the researchers it serves notice?

Writes a WARC of a book-sized site (seeded): about 120 chapters of HTML (10-90 KB), their style
sheets, scripts (a search index of 1.5 MB among them, streamed from its storage node), fonts and
images, about 15 MB in all, and one page whose gzip body inflates to 64 MiB. It is imported into
a local cluster of 3 storage nodes at replica 2 with its proxy and search indexer (`dlweb up`).
Then, in one run:

1. quiet: one benign client (4 keep-alive connections) replays the whole site through the proxy,
   page after page, for S seconds (60; 20 with --quick): requests per second, p50, p99, max;
2. hostile: the same benign client, for as long, while 4 hostile clients send a mix of attacks
   (held-open partial heads, oversized heads and URLs, bytes that are not HTTP after CONNECT,
   Host fields naming another site, 33 MB bodies, search queries of 9,000 nested parentheses,
   catastrophic CDX filter regexes, the gzip bomb through api.dlweb/text, nested JSON, state
   changes without consent) and a harbor probe loads `http://date.dlweb/` and a captures page
   every half second: the benign figures beside the quiet ones (goal: p99 within 2x), the
   harbor pages' slowest answer (goal: under 1 s), the attacks' answers by status, and whether
   the proxy lived (goal: yes);
3. crowd: 256 benign clients, each on a keep-alive connection of its own, replay the site for
   C seconds (20): requests per second, p50, p99, p99.9, max and the requests over 2 s (goal:
   none).

Usage: python benchmarks/bench_hostile.py [--quick] [--seconds S] [--crowd-seconds C]
       [--crowd N] [--skip-hostile] [--skip-crowd] [--json FILE]
"""

import argparse
import asyncio
import contextlib
import gzip
import io
import multiprocessing
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import uvloop
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_replay import quantile, write_response  # noqa: E402
from bench_tools import WORDS, BenchError, checked, dlweb, run_benchmark  # noqa: E402

from archive.config import load_config  # noqa: E402
from deploy.launcher import CONFIG_FILE  # noqa: E402

SITE = "http://book.example"
CHAPTERS = 120
CHAPTER_SIZES = (10_000, 90_000)
IMAGES = 40
IMAGE_SIZES = (3_000, 250_000)
ASSETS = {  # path: (content type, size)
    "/css/general.css": ("text/css", 40_000),
    "/css/chrome.css": ("text/css", 25_000),
    "/css/variables.css": ("text/css", 12_000),
    "/book.js": ("application/javascript", 60_000),
    "/highlight.js": ("application/javascript", 150_000),
    "/clipboard.min.js": ("application/javascript", 11_000),
    "/searchindex.js": ("application/javascript", 1_500_000),  # streamed from its node
    "/fonts/open-sans.woff2": ("font/woff2", 60_000),
    "/fonts/source-code-pro.woff2": ("font/woff2", 80_000),
    "/FontAwesome/fontawesome-webfont.woff2": ("font/woff2", 77_000),
}
BOMB = f"{SITE}/bomb.html"
BOMB_SIZE = 64 * 2**20
CAPTURED = datetime(2024, 5, 1, tzinfo=UTC)
BENIGN_CONNECTIONS = 4
HOSTILE_CLIENTS = 4
PROBE_EVERY = 0.5
SLOW_HEADS = 40  # partial heads each hostile client keeps open
CROWD = 256
REQUEST_TIMEOUT = 60.0
SLOW = 2.0  # seconds: a crowd's request slower than this counts as starved
READY_TIMEOUT = 120.0


# -- the site --------------------------------------------------------------------------------------


def chapter(rng: random.Random, number: int) -> bytes:
    """A chapter page: text between the book's style sheets, scripts and a few images."""
    size = rng.randint(*CHAPTER_SIZES)
    head = "".join(
        f'<link rel="stylesheet" href="{path}">' if path.endswith(".css") else "" for path in ASSETS
    )
    parts = [f"<!doctype html><html><head><title>Chapter {number}</title>{head}</head><body>\n"]
    length = len(parts[0])
    while length < size:
        words = " ".join(rng.choices(WORDS, k=rng.randint(30, 150)))
        link = rng.randrange(CHAPTERS)
        parts.append(f'<p>{words} <a href="/ch{link:03d}.html">see chapter {link}</a></p>\n')
        if rng.random() < 0.1:
            parts.append(f'<img src="/img/{rng.randrange(IMAGES)}.png">\n')
        length += len(parts[-1])
    scripts = "".join(f'<script src="{p}"></script>' for p in ASSETS if p.endswith(".js"))
    return ("".join(parts) + scripts + "</body></html>\n").encode()


def write_site(path: Path, rng: random.Random) -> list[tuple[str, int]]:
    """Write the site's WARC; the URLs a reader loads (the bomb apart) with their sizes."""
    urls: list[tuple[str, int]] = []
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")

        def put(url: str, content_type: str, body: bytes, step: int) -> None:
            write_response(writer, url, CAPTURED + timedelta(seconds=step), content_type, body)
            urls.append((url, len(body)))

        for number in range(CHAPTERS):
            put(f"{SITE}/ch{number:03d}.html", "text/html; charset=utf-8", chapter(rng, number), 0)
        for number in range(IMAGES):
            put(
                f"{SITE}/img/{number}.png", "image/png", rng.randbytes(rng.randint(*IMAGE_SIZES)), 1
            )
        for asset, (content_type, size) in ASSETS.items():
            put(f"{SITE}{asset}", content_type, rng.randbytes(size), 2)
        bomb = gzip.compress(b"<p>" + b"\0" * BOMB_SIZE, compresslevel=9, mtime=0)
        writer.write_record(
            writer.create_warc_record(
                BOMB,
                "response",
                payload=io.BytesIO(bomb),
                http_headers=StatusAndHeaders(
                    "200 OK",
                    [("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                    protocol="HTTP/1.1",
                ),
                warc_headers_dict={"WARC-Date": CAPTURED.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
        )
    return urls


# -- clients -------------------------------------------------------------------------------------


@dataclass
class Figures:
    """Latencies of the requests made, and the failures among them."""

    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    slow: Counter[str] = field(default_factory=Counter)  # the URLs of requests over SLOW

    async def timed(
        self, request: Awaitable[tuple[int, int]], wanted: int | None, url: str = ""
    ) -> None:
        began = time.perf_counter()
        try:
            status, length = await request
        except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
            self.failures[type(exc).__name__] += 1
            return
        self.latencies.append(time.perf_counter() - began)
        if self.latencies[-1] > SLOW:
            self.slow[url.rsplit("/", 1)[-1]] += 1
        if status != 200 or (wanted is not None and length != wanted):
            self.failures[f"status {status}" if status != 200 else "wrong length"] += 1

    def summary(self, seconds: float) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "requests": len(ordered),
            "req_per_s": len(ordered) / seconds,
            "p50_ms": quantile(ordered, 0.5) * 1000,
            "p99_ms": quantile(ordered, 0.99) * 1000,
            "p999_ms": quantile(ordered, 0.999) * 1000,
            "max_ms": (ordered[-1] if ordered else float("nan")) * 1000,
            "over_2s": sum(1 for latency in ordered if latency > SLOW),
            "failures": dict(self.failures),
            "slow_urls": dict(self.slow.most_common(5)),
        }


def session(connections: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=connections, force_close=False)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False)


async def get(
    client: aiohttp.ClientSession, proxy: str, url: str, **options: Any
) -> tuple[int, int]:
    async with client.get(url, proxy=proxy, allow_redirects=False, **options) as answer:
        return answer.status, len(await answer.read())


async def readers(
    proxy: str, urls: list[tuple[str, int]], clients: int, connections: int, seconds: float
) -> dict[str, Any]:
    """`clients` readers, each with `connections` keep-alive connections of its own, loading the
    site in turns for `seconds`."""
    figures = Figures()
    until = time.monotonic() + seconds

    async def reader(start: int) -> None:
        async with session(connections) as client:

            async def loop(offset: int) -> None:
                i = offset
                while time.monotonic() < until:
                    url, size = urls[i % len(urls)]
                    i += 1
                    await figures.timed(get(client, proxy, url), size, url)

            await asyncio.gather(*(loop(start + n * 7) for n in range(connections)))

    began = time.monotonic()
    stride = max(1, len(urls) // clients)
    await asyncio.gather(*(reader(n * stride) for n in range(clients)))
    return figures.summary(time.monotonic() - began)


async def probe(proxy: str, until: float) -> dict[str, Any]:
    """Harbor pages loaded every PROBE_EVERY seconds: the slowest answer and any failure."""
    figures = Figures()
    pages = ["http://date.dlweb/", f"http://captures.dlweb/?url={quote(SITE + '/ch000.html')}"]
    async with session(1) as client:
        i = 0
        while time.monotonic() < until:
            await figures.timed(get(client, proxy, pages[i % len(pages)]), None)
            i += 1
            await asyncio.sleep(PROBE_EVERY)
    return figures.summary(1.0)


# -- attacks -------------------------------------------------------------------------------------


async def raw(port: int, data: bytes, hold: float = 0.0) -> str:
    """Send raw bytes to the proxy; what it answered first (a status), or how it ended."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        return f"connect failed: {type(exc).__name__}"
    try:
        writer.write(data)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout=hold or 30.0)
        if line.startswith(b"HTTP/1.1 200 Connection established"):  # the tunnel's answer next
            await asyncio.wait_for(reader.readline(), timeout=30.0)  # the blank line ending it
            line = await asyncio.wait_for(reader.readline(), timeout=30.0)
        return line.split(b" ")[1].decode() if line.startswith(b"HTTP/") else "closed"
    except TimeoutError:
        return "held" if hold else "no answer"
    except (OSError, IndexError, UnicodeDecodeError, asyncio.IncompleteReadError) as exc:
        return type(exc).__name__
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def attacks(port: int, proxy: str) -> list[tuple[str, Callable[[], Awaitable[str]]]]:
    """Each attack by name, with what makes it once and says how the proxy answered."""
    target = f"127.0.0.1:{port}"
    nested = "(" * 1300 + "x" + ")" * 1300  # as deep as a URL of 8,192 characters holds
    catastrophic = "~url:" + "(.|.)*" * 3 + "Q"
    deep = "[" * 100_000 + "]" * 100_000

    async def http(method: str, url: str, **options: Any) -> str:
        async with session(1) as client:
            try:
                async with client.request(method, url, proxy=proxy, **options) as answer:
                    await answer.read()
                    return str(answer.status)
            except (aiohttp.ClientError, TimeoutError) as exc:
                return type(exc).__name__

    return [
        ("held-open head", lambda: raw(port, b"GET http://book.example/ HTTP/1.1\r\nHo", 5.0)),
        ("oversized head", lambda: raw(port, b"GET / HTTP/1.1\r\nX: " + b"a" * 80_000)),
        (
            "long URL",
            lambda: raw(port, b"GET http://book.example/" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n"),
        ),
        (
            "not HTTP after CONNECT",
            lambda: raw(
                port, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode() + b"\x00\x01binary\r\n\r\n"
            ),
        ),
        (
            "another Host",
            lambda: raw(
                port, f"GET http://{target}/ HTTP/1.1\r\nHost: bank.example\r\n\r\n".encode()
            ),
        ),
        (
            "Host '['",
            lambda: raw(port, f"GET http://{target}/ HTTP/1.1\r\nHost: [\r\n\r\n".encode()),
        ),
        (
            "33 MB body",
            lambda: raw(
                port,
                b"POST http://book.example/ HTTP/1.1\r\nHost: book.example\r\nContent-Length: 34603008\r\n\r\n"
                + b"x" * 34_603_008,
            ),
        ),
        ("nested query", lambda: http("GET", f"http://api.dlweb/search?q={quote(nested)}")),
        ("nested search page", lambda: http("GET", f"http://search.dlweb/?q={quote(nested)}")),
        (
            "catastrophic filter",
            lambda: http(
                "GET",
                f"http://api.dlweb/cdx?url={quote(SITE + '/ch000.html')}&filter={quote(catastrophic)}",
            ),
        ),
        ("gzip bomb text", lambda: http("GET", f"http://api.dlweb/text?url={quote(BOMB)}")),
        ("gzip bomb links", lambda: http("GET", f"http://api.dlweb/links?url={quote(BOMB)}")),
        ("nested JSON", lambda: http("PUT", "http://api.dlweb/date", data=deep)),
        (
            "date without consent",
            lambda: http(
                "GET", "http://date.dlweb/set?at=2001&back=" + quote(SITE + "/\r\nSet-Cookie: x=1")
            ),
        ),
    ]


async def hostile(port: int, proxy: str, until: float, seed: int) -> Counter[str]:
    """One hostile client: attacks picked at random, back to back, until `until`, while it keeps
    SLOW_HEADS partial heads open; the answers by attack and outcome."""
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    made = attacks(port, proxy)
    held: list[asyncio.StreamWriter] = []
    for _ in range(SLOW_HEADS):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET http://book.example/ HTTP/1.1\r\nX-Slow: ")
            held.append(writer)
    while time.monotonic() < until:
        name, attack = rng.choice(made)
        outcomes[f"{name}: {await attack()}"] += 1
    for writer in held:
        writer.close()
    return outcomes


def attackers(port: int, proxy: str, seconds: float) -> dict[str, int]:
    """HOSTILE_CLIENTS hostile clients for `seconds`: the answers by attack and outcome."""

    async def all_of_them() -> dict[str, int]:
        until = time.monotonic() + seconds
        outcomes = await asyncio.gather(
            *(hostile(port, proxy, until, seed) for seed in range(HOSTILE_CLIENTS))
        )
        total: Counter[str] = Counter()
        for one in outcomes:
            total.update(one)
        return dict(sorted(total.items()))

    return uvloop.run(all_of_them())


# -- the run ---------------------------------------------------------------------------------------


def proxy_alive(data: Path) -> bool:
    pid = int((data / "run" / "proxy.pid").read_text())
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def ready(proxy: str, url: str) -> None:
    """Wait until the proxy serves `url` from the archive."""

    async def serves() -> bool:
        async with session(1) as client:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                return (await get(client, proxy, url))[0] == 200
        return False

    deadline = time.monotonic() + READY_TIMEOUT
    while not uvloop.run(serves()):
        if time.monotonic() > deadline:
            raise BenchError(f"the proxy does not serve {url}")
        time.sleep(0.5)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as folder:
        work = Path(folder)
        data = work / "cluster"
        warc = work / "book.warc.gz"
        urls = write_site(warc, random.Random(20261128))
        print(
            f"site: {len(urls)} URLs, {sum(size for _, size in urls) / 2**20:.1f} MiB", flush=True
        )
        checked(
            dlweb(
                "up",
                "--data",
                str(data),
                "--nodes",
                "3",
                "--replicas",
                "2",
                "--search",
                "--proxy-port",
                "0",
            ),
            "dlweb up",
        )
        try:
            checked(dlweb("import", "-c", str(data / CONFIG_FILE), str(warc)), "dlweb import")
            proxy = load_config(data / CONFIG_FILE).proxy
            assert proxy is not None
            port = int(proxy.rsplit(":", 1)[1])
            ready(proxy, urls[0][0])
            return measure(args, data, proxy, port, urls)
        finally:
            checked(dlweb("down", "--data", str(data)), "dlweb down")


def measure(
    args: argparse.Namespace, data: Path, proxy: str, port: int, urls: list[tuple[str, int]]
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    seconds = args.seconds or (20.0 if args.quick else 60.0)
    uvloop.run(readers(proxy, urls, 1, BENIGN_CONNECTIONS, 5.0))  # warm-up: caches, connections
    if not args.skip_hostile:
        print(f"quiet: one reader for {seconds:.0f} s", flush=True)
        report["quiet"] = uvloop.run(readers(proxy, urls, 1, BENIGN_CONNECTIONS, seconds))
        print(
            f"hostile: the reader beside {HOSTILE_CLIENTS} attackers for {seconds:.0f} s",
            flush=True,
        )

        async def under_attack() -> dict[str, Any]:
            until = time.monotonic() + seconds
            benign, harbors = await asyncio.gather(
                readers(proxy, urls, 1, BENIGN_CONNECTIONS, seconds), probe(proxy, until)
            )
            return {"benign": benign, "harbors": harbors}

        # The attackers in a process of their own: their work (33 MB bodies) must not slow the
        # reader's event loop, only the proxy.
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            attacked = pool.submit(attackers, port, proxy, seconds)
            report["hostile"] = uvloop.run(under_attack())
            report["hostile"]["attacks"] = attacked.result()
        report["hostile"]["proxy_alive"] = proxy_alive(data)
        if not report["hostile"]["proxy_alive"]:
            raise BenchError("the proxy died under attack; see its log")
    if not args.skip_crowd:
        crowd_seconds = args.crowd_seconds or (10.0 if args.quick else 20.0)
        print(f"crowd: {args.crowd} readers for {crowd_seconds:.0f} s", flush=True)
        report["crowd"] = uvloop.run(readers(proxy, urls, args.crowd, 1, crowd_seconds))
        report["crowd"]["clients"] = args.crowd
    return report


def show(report: dict[str, Any]) -> None:
    def line(name: str, figures: dict[str, Any]) -> str:
        return (
            f"  {name:<22} {figures['req_per_s']:8.0f} req/s  p50 {figures['p50_ms']:7.1f} ms"
            f"  p99 {figures['p99_ms']:7.1f} ms  p99.9 {figures['p999_ms']:7.1f} ms"
            f"  max {figures['max_ms']:7.1f} ms  over 2 s {figures['over_2s']}"
            f"  failures {figures['failures'] or 0}"
            + (f"\n  {'':<22} slowest URLs: {figures['slow_urls']}" if figures["slow_urls"] else "")
        )

    if "quiet" in report:
        quiet, hostile = report["quiet"], report["hostile"]
        print("\nbenign reader, quiet and under attack:")
        print(line("quiet", quiet))
        print(line("under attack", hostile["benign"]))
        ratio = hostile["benign"]["p99_ms"] / quiet["p99_ms"]
        print(
            f"  p99 under attack / quiet: {ratio:.2f} (goal: at most 2)  {'PASS' if ratio <= 2 else 'MISS'}"
        )
        slowest = hostile["harbors"]["max_ms"]
        print(
            f"  harbor pages meanwhile: slowest {slowest:.0f} ms of {hostile['harbors']['requests']}"
            f" (goal: under 1000 ms)  {'PASS' if slowest < 1000 and not hostile['harbors']['failures'] else 'MISS'}"
        )
        print(f"  the proxy lived: {'yes' if hostile['proxy_alive'] else 'NO'}")
        print("  attacks, by answer:")
        for outcome, count in hostile["attacks"].items():
            print(f"    {count:6d}  {outcome}")
    if "crowd" in report:
        crowd = report["crowd"]
        print(f"\ncrowd of {crowd['clients']} keep-alive readers:")
        print(line("crowd", crowd))
        print(
            f"  requests over 2 s: {crowd['over_2s']} (goal: none)  {'PASS' if crowd['over_2s'] == 0 else 'MISS'}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 s phases, a 10 s crowd")
    parser.add_argument("--seconds", type=float, default=None, help="quiet and hostile phases")
    parser.add_argument("--crowd-seconds", type=float, default=None)
    parser.add_argument("--crowd", type=int, default=CROWD, help=f"readers (default {CROWD})")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--skip-crowd", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run_benchmark(args, run, show, "the cluster was stopped")
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
