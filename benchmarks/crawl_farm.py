"""The crawl benchmark's web: N sites of M HTML pages each, served by one aiohttp process.

Site n (1..N) is `site-n.bench`, on a loopback address of its own (`address(n)`: 127.0.1.n up to
254 sites), all on one port; requests are routed by their Host header. Each site has an allow-all
`/robots.txt`, and M pages of 2-6 KB of text (`/` and M-1 more), made from a seed: page i's parent
is page (i-1)//b, b the smallest branching that puts every page within 3 links of `/`, so a
breadth-first crawl from `/` meets all of them by level 3. Each page links to its children, its
parent and other pages of its site, 3 to 8 in all (up to 400 pages), and to one page of another
site: `/ref/from-site-n.html`, which no page of that site links to, so a fetch of it shows that a
crawler left its site. Each site also has a `/favicon.ico` that no page links to, for browsers,
which ask for it by themselves. Keep-alive is on. A control server on 127.0.0.1 answers
`GET /__count` (per site: requests, distinct pages fetched, robots.txt fetches, favicon fetches,
`/ref/` fetches, unknown paths), `GET /__order` (per site: its pages in the order first
requested, and those about the focused campaign's topic) and `POST /__reset`.

With --focused, the sites' pages are about topics instead (benchmarks/focused_farm.py: a third
of each site about the campaign's), in the same tree of pages, each linking to one page of
another site.

With --scripted-pages K, the farm also serves a site of K pages that scripts build
(benchmarks/scripted_farm.py: `scripted.bench` on an address of its own, the same port); what it
served is under "scripted" in the answer of `/__count`.

Usage: python benchmarks/crawl_farm.py --sites N --pages M --port-file FILE [--seed S]
       [--scripted-pages K] [--focused]
It writes {"port", "control"} to FILE (atomically) once every site listens, and serves until
SIGTERM or SIGINT.
"""

import argparse
import asyncio
import errno
import json
import os
import random
import signal
import socket
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import uvloop
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tools import WORDS  # noqa: E402
from focused_farm import topical_site  # noqa: E402
from scripted_farm import ADDRESS as SCRIPTED_ADDRESS  # noqa: E402
from scripted_farm import FAVICON, ScriptedSite  # noqa: E402
from scripted_farm import HOST as SCRIPTED_HOST  # noqa: E402

TEXT_SIZES = (2_000, 6_000)
LINKS = (3, 8)
LEVELS = 3  # links from `/` to the deepest page
MAX_PAGES = 400  # a branching of 7 at most keeps every page within LINKS
ROBOTS = b"User-agent: *\nDisallow:\n"
HTML = "text/html; charset=utf-8"
REF_PAGE = b"<!doctype html>\n<html><body><p>A page linked from another site.</p></body></html>\n"
PORT_TRIES = 20


def host(site: int) -> str:
    return f"site-{site}.bench"


def address(site: int) -> str:
    """Site n's loopback address: 127.0.1.1 to 127.0.1.254, then 127.0.2.1, and so on."""
    return f"127.0.{1 + (site - 1) // 254}.{1 + (site - 1) % 254}"


def branching(pages: int) -> int:
    """The smallest b for which a tree of b children per page holds `pages` within LEVELS."""
    b = 1
    while sum(b**level for level in range(LEVELS + 1)) < pages:
        b += 1
    return b


def page_path(rng: random.Random, index: int) -> str:
    return "/" if index == 0 else f"/{rng.choice(WORDS)}/{rng.choice(WORDS)}-{index}.html"


def page_links(rng: random.Random, index: int, pages: int, b: int) -> list[int]:
    """The pages page `index` links to: children, parent, then others up to a drawn count."""
    linked = [child for child in range(b * index + 1, b * index + b + 1) if child < pages]
    if index > 0:
        linked.append((index - 1) // b)
    others = [page for page in range(pages) if page != index and page not in linked]
    wanted = max(rng.randint(*LINKS) - len(linked), 0)
    return linked + rng.sample(others, min(wanted, len(others)))


def corpus(rng: random.Random, size: int) -> list[str]:
    """Sentences of words that page texts are cut from."""
    sentences = []
    length = 0
    while length < size:
        sentence = " ".join(rng.choices(WORDS, k=rng.randint(6, 24))).capitalize() + "."
        sentences.append(sentence)
        length += len(sentence) + 1
    return sentences


def page_html(
    rng: random.Random, sentences: list[str], title: str, anchors: list[str], external: str
) -> bytes:
    """A page of 2-6 KB of text in paragraphs, the anchors spread among them."""
    size = rng.randint(*TEXT_SIZES)
    start = rng.randrange(len(sentences))
    paragraphs: list[str] = []
    text: list[str] = []
    length = 0
    for n in range(start, start + len(sentences)):
        sentence = sentences[n % len(sentences)]
        text.append(sentence)
        length += len(sentence) + 1
        if len(text) >= 5 or length >= size:
            paragraphs.append(" ".join(text))
            text = []
        if length >= size:
            break
    for n, anchor in enumerate(anchors):
        slot = n * len(paragraphs) // len(anchors)
        paragraphs[slot] += f" See {anchor}."
    body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body>\n<h1>{title}</h1>\n{body}\n<footer>Elsewhere: {external}</footer>\n"
        "</body></html>\n"
    ).encode()


@dataclass
class Counts:
    requests: int = 0
    robots: int = 0
    favicon: int = 0
    outside: int = 0
    unknown: int = 0
    not_modified: int = 0  # pages answered 304: the request named the page's ETag
    fetched: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)  # pages in the order first requested

    def report(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "pages": len(self.fetched),
            "not_modified": self.not_modified,
            "robots": self.robots,
            "favicon": self.favicon,
            "outside": self.outside,
            "unknown": self.unknown,
        }


@dataclass
class Site:
    pages: dict[str, bytes]
    relevant: frozenset[str] = frozenset()  # pages about the focused campaign's topic
    counts: Counts = field(default_factory=Counts)


def make_sites(sites: int, pages: int, port: int, seed: int) -> dict[str, Site]:
    """Every site's pages, by host name."""
    b = branching(pages)
    rng = random.Random(seed)
    sentences = corpus(rng, 4 * TEXT_SIZES[1] + 200_000)
    made = {}
    for n in range(1, sites + 1):
        paths = [page_path(rng, index) for index in range(pages)]
        other = rng.choice([m for m in range(1, sites + 1) if m != n])
        external = f'<a href="http://{host(other)}:{port}/ref/from-site-{n}.html">{host(other)}</a>'
        bodies = {}
        for index, path in enumerate(paths):
            anchors = [
                f'<a href="{paths[to]}">{rng.choice(WORDS)} {rng.choice(WORDS)}</a>'
                for to in page_links(rng, index, pages, b)
            ]
            title = f"{host(n)}: {rng.choice(WORDS)} {rng.choice(WORDS)} {index}"
            bodies[path] = page_html(rng, sentences, title, anchors, external)
        made[host(n)] = Site(bodies)
    return made


def make_focused_sites(sites: int, pages: int, port: int, seed: int) -> dict[str, Site]:
    """Every site's pages about topics (focused_farm.py), by host name."""
    rng = random.Random(seed)
    made = {}
    for n in range(1, sites + 1):
        other = rng.choice([m for m in range(1, sites + 1) if m != n])
        external = f'<a href="http://{host(other)}:{port}/ref/from-site-{n}.html">{host(other)}</a>'
        bodies, relevant = topical_site(rng, host(n), pages, branching(pages), external)
        made[host(n)] = Site(bodies, relevant)
    return made


def listening_sockets(addresses: list[str]) -> tuple[int, list[socket.socket]]:
    """One listening socket per site address, all on one free port."""
    for _ in range(PORT_TRIES):
        sockets: list[socket.socket] = []
        try:
            port = 0
            for ip in addresses:
                sock = socket.socket()
                sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((ip, port))
                port = sock.getsockname()[1]
            return port, sockets
        except OSError as exc:
            for sock in sockets:
                sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise
    raise OSError(errno.EADDRINUSE, f"no port free on all {len(addresses)} site addresses")


class Farm:
    def __init__(self, sites: dict[str, Site], scripted: ScriptedSite | None = None) -> None:
        self.sites = sites
        self.scripted = scripted

    async def serve(self, request: web.BaseRequest) -> web.StreamResponse:
        name = request.host.partition(":")[0]
        if self.scripted is not None and name == SCRIPTED_HOST:
            return await self.scripted.serve(request)
        site = self.sites.get(name)
        if site is None:
            return web.Response(status=421, text="no such site here\n")
        counts = site.counts
        counts.requests += 1
        path = request.path
        if path == "/robots.txt":
            counts.robots += 1
            return web.Response(body=ROBOTS, content_type="text/plain")
        if path == "/favicon.ico":
            counts.favicon += 1
            return web.Response(body=FAVICON, content_type="image/png")
        body = site.pages.get(path)
        if body is not None:
            if path not in counts.fetched:
                counts.fetched.add(path)
                counts.order.append(path)
            tag = f'"{zlib.crc32(body):08x}"'
            if request.headers.get("If-None-Match") == tag:
                counts.not_modified += 1
                return web.Response(status=304, headers={"ETag": tag})
            return web.Response(body=body, headers={"Content-Type": HTML, "ETag": tag})
        if path.startswith("/ref/"):
            counts.outside += 1
            return web.Response(body=REF_PAGE, headers={"Content-Type": HTML})
        counts.unknown += 1
        return web.Response(status=404, text="not found\n")

    async def count(self, request: web.Request) -> web.Response:
        report: dict[str, object] = {
            "sites": {name: site.counts.report() for name, site in self.sites.items()}
        }
        if self.scripted is not None:
            report["scripted"] = self.scripted.counts.report()
        return web.json_response(report)

    async def order(self, request: web.Request) -> web.Response:
        """Per site: its pages in the order first requested, and those about the topic."""
        report = {
            name: {"order": site.counts.order, "relevant": sorted(site.relevant)}
            for name, site in self.sites.items()
        }
        return web.json_response({"sites": report})

    async def reset(self, request: web.Request) -> web.Response:
        for site in self.sites.values():
            site.counts = Counts()
        if self.scripted is not None:
            self.scripted.reset()
        return web.json_response({"reset": True})


async def serve(
    sites: int, pages: int, port_file: Path, seed: int, scripted_pages: int, focused: bool
) -> None:
    addresses = [address(n) for n in range(1, sites + 1)]
    if scripted_pages:
        addresses.append(SCRIPTED_ADDRESS)
    port, sockets = listening_sockets(addresses)
    scripted = ScriptedSite(scripted_pages, seed) if scripted_pages else None
    make = make_focused_sites if focused else make_sites
    farm = Farm(make(sites, pages, port, seed), scripted)
    runner = web.ServerRunner(web.Server(farm.serve))
    await runner.setup()
    for sock in sockets:
        await web.SockSite(runner, sock, backlog=1024).start()
    control = web.Application()
    control.router.add_get("/__count", farm.count)
    control.router.add_get("/__order", farm.order)
    control.router.add_post("/__reset", farm.reset)
    control_runner = web.AppRunner(control)
    await control_runner.setup()
    control_sock = socket.create_server(("127.0.0.1", 0))
    await web.SockSite(control_runner, control_sock).start()
    written = port_file.with_name(port_file.name + ".part")
    written.write_text(json.dumps({"port": port, "control": control_sock.getsockname()[1]}))
    os.replace(written, port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await control_runner.cleanup()
        await runner.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=100, help="sites (2 or more)")
    parser.add_argument(
        "--pages", type=int, default=100, help=f"pages per site (up to {MAX_PAGES})"
    )
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the ports")
    parser.add_argument("--seed", type=int, default=1, help="seed of the pages")
    parser.add_argument(
        "--scripted-pages",
        type=int,
        default=0,
        help=f"also serve {SCRIPTED_HOST}, a site of this many pages that scripts build",
    )
    parser.add_argument(
        "--focused",
        action="store_true",
        help="pages about topics, a third about the focused campaign's (focused_farm.py)",
    )
    args = parser.parse_args()
    if args.sites < 2 or not 1 <= args.pages <= MAX_PAGES:
        parser.error(f"--sites must be 2 or more, --pages from 1 to {MAX_PAGES}")
    if args.scripted_pages < 0:
        parser.error("--scripted-pages must be 0 or more")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(
            serve(
                args.sites,
                args.pages,
                args.port_file,
                args.seed,
                args.scripted_pages,
                args.focused,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
