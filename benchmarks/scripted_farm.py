"""The crawl benchmark's script-built site: M pages whose content and links only scripts make.

Served by the farm (benchmarks/crawl_farm.py --scripted-pages M) as `scripted.bench`, on a
loopback address of its own (ADDRESS). Every page, `/` and M-1 more, is the same HTML shell with no
text and no link of its own: one `<script src="/app.js">`. The script GETs the page's JSON document,
`/api/page?path=<the page's path>&_=<Date.now()>` (a cache buster: every load asks for a URL of its
own), which names the page's title, 1-3 KB of text, an image (`/img/<n>.png`, a PNG of its own) and
2-3 links to other pages of the site; it draws them (the `<a>` elements are made by the script),
then POSTs `{"page": <path>}` as JSON to `/api/seen`. The links form a tree from `/` (page i links to
pages 2i+1 and 2i+2, and back to its parent or elsewhere), so a crawler that runs the scripts meets
every page, while one that parses the shell and the script finds no page link at all: no string of
the script looks like a page's URL to the crawler's JavaScript parser, and the pages' paths are
only in the JSON documents.

What the site served is counted (see `Counts`). It has an allow-all robots.txt and, as every site
of the farm, a `/favicon.ico` (`FAVICON`, a PNG), which browsers ask for by themselves.
"""

import json
import random
import struct
import zlib
from dataclasses import dataclass, field

from aiohttp import web
from bench_tools import WORDS

HOST = "scripted.bench"
ADDRESS = "127.1.0.1"  # apart from the static sites' 127.0.x.y
MAX_PAGES = 10_000
TEXT_SIZES = (1_000, 3_000)
LINKS = (2, 3)
IMAGE_SIZE = (160, 120)
ROBOTS = b"User-agent: *\nDisallow:\n"
HTML = "text/html; charset=utf-8"
JSON = "application/json"

SHELL = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Loading</title>
<script src="/app.js" defer></script></head>
<body><main id="page"></main></body></html>
"""

# No literal here looks like a URL to a parser of scripts: the addresses are made from relative
# names resolved against the origin, and the pages' paths come in the JSON documents.
SCRIPT = b"""(async () => {
  const main = document.getElementById("page");
  try {
    const address = new URL("api/page", location.origin);
    address.searchParams.set("path", location.pathname);
    address.searchParams.set("_", String(Date.now()));
    const answer = await fetch(address);
    if (!answer.ok) throw new Error("no page data: " + answer.status);
    const page = await answer.json();
    document.title = page.title;
    const heading = document.createElement("h1");
    heading.textContent = page.title;
    const image = document.createElement("img");
    image.src = page.image;
    image.width = page.width;
    image.height = page.height;
    image.alt = page.title;
    main.append(heading, image);
    for (const text of page.paragraphs) {
      const paragraph = document.createElement("p");
      paragraph.textContent = text;
      main.append(paragraph);
    }
    const links = document.createElement("nav");
    for (const link of page.links) {
      const anchor = document.createElement("a");
      anchor.href = link.href;
      anchor.textContent = link.text;
      links.append(anchor, " ");
    }
    main.append(links);
    const seen = await fetch(new URL("api/seen", location.origin), {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({page: location.pathname}),
    });
    if (!seen.ok) throw new Error("not seen: " + seen.status);
    document.body.dataset.ready = "yes";
  } catch (error) {
    document.title = "failed: " + error.message;
  }
})();
"""


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """An 8-bit RGB PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


FAVICON = png(16, 16, (32, 96, 160))


def page_links(rng: random.Random, index: int, pages: int) -> list[int]:
    """Pages 2i+1 and 2i+2, the parent, then others: 2-3 in all (a tree reaching every page)."""
    linked = [child for child in (2 * index + 1, 2 * index + 2) if child < pages]
    if index > 0:
        linked.append((index - 1) // 2)
    others = [page for page in range(pages) if page != index and page not in linked]
    wanted = max(rng.randint(*LINKS) - len(linked), 0)
    return linked + rng.sample(others, min(wanted, len(others)))


def paragraphs(rng: random.Random) -> list[str]:
    size = rng.randint(*TEXT_SIZES)
    made: list[str] = []
    length = 0
    while length < size:
        sentences = [
            " ".join(rng.choices(WORDS, k=rng.randint(6, 20))).capitalize() + "."
            for _ in range(rng.randint(2, 5))
        ]
        made.append(" ".join(sentences))
        length += len(made[-1])
    return made


@dataclass
class Counts:
    requests: int = 0
    robots: int = 0
    favicon: int = 0
    script: int = 0
    data_requests: int = 0
    posts: int = 0
    unknown: int = 0
    pages: set[str] = field(default_factory=set)  # shells served
    data: set[str] = field(default_factory=set)  # pages whose JSON document was served
    images: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)  # pages POSTed to /api/seen

    def report(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "pages": len(self.pages),
            "data": len(self.data),
            "data_requests": self.data_requests,
            "images": len(self.images),
            "posts": self.posts,
            "seen": len(self.seen),
            "script": self.script,
            "robots": self.robots,
            "favicon": self.favicon,
            "unknown": self.unknown,
        }


class ScriptedSite:
    """The site's documents, made from a seed, and the handler of its requests."""

    def __init__(self, pages: int, seed: int) -> None:
        if not 1 <= pages <= MAX_PAGES:
            raise ValueError(f"a scripted site has 1 to {MAX_PAGES} pages")
        rng = random.Random(seed)
        self.paths = ["/"] + [
            f"/{rng.choice(WORDS)}/{rng.choice(WORDS)}-{index}.html" for index in range(1, pages)
        ]
        self.documents: dict[str, bytes] = {}
        self.images: dict[str, bytes] = {}
        width, height = IMAGE_SIZE
        for index, path in enumerate(self.paths):
            image = f"/img/{index}.png"
            colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            self.images[image] = png(width, height, colour)
            document = {
                "title": f"{HOST}: {rng.choice(WORDS)} {rng.choice(WORDS)} {index}",
                "paragraphs": paragraphs(rng),
                "image": image,
                "width": width,
                "height": height,
                "links": [
                    {"href": self.paths[to], "text": f"{rng.choice(WORDS)} {rng.choice(WORDS)}"}
                    for to in page_links(rng, index, pages)
                ],
            }
            self.documents[path] = json.dumps(document).encode()
        self.counts = Counts()

    def reset(self) -> None:
        self.counts = Counts()

    async def serve(self, request: web.BaseRequest) -> web.StreamResponse:
        counts = self.counts
        counts.requests += 1
        path = request.path
        if request.method == "POST":
            if path != "/api/seen":
                counts.unknown += 1
                return web.Response(status=405, text="no such API\n")
            try:
                page = (await request.json())["page"]
            except (ValueError, KeyError, TypeError):
                counts.unknown += 1
                return web.Response(status=400, text="{page: path} expected\n")
            counts.posts += 1
            if page not in self.documents:
                counts.unknown += 1
                return web.Response(status=404, text="no such page\n")
            counts.seen.add(page)
            return web.Response(body=b'{"seen": true}', content_type=JSON)
        if path == "/robots.txt":
            counts.robots += 1
            return web.Response(body=ROBOTS, content_type="text/plain")
        if path == "/favicon.ico":
            counts.favicon += 1
            return web.Response(body=FAVICON, content_type="image/png")
        if path == "/app.js":
            counts.script += 1
            return web.Response(body=SCRIPT, content_type="text/javascript")
        if path == "/api/page":
            counts.data_requests += 1
            page = request.query.get("path", "")
            document = self.documents.get(page)
            if document is None or "_" not in request.query:
                counts.unknown += 1
                return web.Response(status=404, text="no such page\n")
            counts.data.add(page)
            return web.Response(
                body=document, content_type=JSON, headers={"Cache-Control": "no-store"}
            )
        if path in self.documents:
            counts.pages.add(path)
            return web.Response(body=SHELL, headers={"Content-Type": HTML})
        if path in self.images:
            counts.images.add(path)
            return web.Response(body=self.images[path], content_type="image/png")
        counts.unknown += 1
        return web.Response(status=404, text="not found\n")
