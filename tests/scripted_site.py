"""A small website on loopback that builds its pages with scripts, for replay and crawler tests.

The page `/` holds no content of its own. An inline script inserts `/app.js?_=<Date.now()>` (a
cache buster), which fetches `/config.json?ts=<seconds since the epoch>` (a timestamp parameter)
for the page's colour and heading, POSTs `{"query": "museum", "page": 1}` as JSON to `/api/items`
for the images to show, draws them with their captions in boxes of fixed size, then adds
`<div id="done">` and sets the title to `ready` (or to `failed: ...` when a step failed). Nothing
drawn depends on the time, so two loads of the page look the same to the pixel, while every load
asks for URLs of its own.

The answer of `/api/items` depends on the body POSTed: another `query` names other images. The
site records every request it gets, so that a test can tell which ones a browser really made.

The page `/feed.html`, for a crawler that drives a browser, is built by `/feed.js` as well: four
images with `loading="lazy"` far below the fold, which a browser only asks for once scrolled to,
and an infinite list: `/api/feed?page=1` at load, then pages 2 and 3, each once the reader
scrolls near the bottom of the page, the last saying there is no next page. Each page names an
image of its own. Once page 3 is drawn, the script adds `<div id="feed-done">` and sets the title
to `FEED_DONE_TITLE` (or to `failed: ...`). Nothing drawn depends on the time either;
`feed_load_paths()` lists every request that a load scrolled to the end makes.

The pages `/static.html` and `/static2.html` are plain HTML without a script, so that a crawler
can be shown not to start a browser for them.

The site also records when it handled each request and for whom, for tests of a crawler's
politeness (how many requests it makes at once, how long it pauses between them); a delay given
to the site holds every request, so that requests made at once overlap for sure.
"""

import asyncio
import json
import struct
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from string import Template

from aiohttp import web

from deploy.testing.web_server import WebServer, answering

IMAGE_SIZE = (160, 120)
READY_TITLE = "ready"
# What the page's script POSTs to /api/items, byte for byte (JSON.stringify's spelling).
QUERY = {"query": "museum", "page": 1}


def post_body(query: dict[str, object]) -> bytes:
    """A JSON body spelled as JSON.stringify spells it: no spaces, keys in the order given."""
    return json.dumps(query, separators=(",", ":")).encode()


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """An 8-bit RGB PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    row = b"\x00" + bytes(rgb) * width  # filter type 0 (none), then the pixels
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height, 9))
        + chunk(b"IEND", b"")
    )


@dataclass(frozen=True, slots=True)
class Item:
    """An image the page shows, with its caption."""

    path: str
    rgb: tuple[int, int, int]
    caption: str


# The images each query names; a query not here names none.
ITEMS: dict[str, tuple[Item, ...]] = {
    "museum": (
        Item("/img/a.png", (200, 40, 40), "Amphora"),
        Item("/img/b.png", (40, 160, 60), "Bronze bell"),
        Item("/img/c.png", (40, 70, 200), "Codex"),
    ),
    "garden": (
        Item("/img/d.png", (230, 200, 20), "Daffodil"),
        Item("/img/e.png", (120, 40, 160), "Elderflower"),
    ),
}
IMAGES = {item.path: solid_png(*IMAGE_SIZE, item.rgb) for items in ITEMS.values() for item in items}
CONFIG_BODY = b'{"background": "rgb(236, 228, 206)", "title": "The scripted museum"}'

PAGE = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>loading</title>
<style>
body { margin: 0; font: 18px/30px sans-serif; color: rgb(30, 30, 30); }
h1 { margin: 0; padding: 0 16px; height: 60px; font: bold 28px/60px sans-serif; }
#items { display: flex; gap: 16px; padding: 16px; height: 150px; }
figure { margin: 0; width: 160px; height: 150px; }
img { display: block; width: 160px; height: 120px; }
figcaption { height: 30px; overflow: hidden; white-space: nowrap; }
#done { margin: 16px; width: 40px; height: 40px; background: rgb(20, 20, 20); }
</style>
<script>
(function () {
  var script = document.createElement("script");
  script.src = "/app.js?_=" + Date.now();
  document.head.appendChild(script);
})();
</script>
</head><body><h1 id="heading"></h1><div id="items"></div></body></html>
"""

APP = b"""async function fetched(url, options) {
  const response = await fetch(url, options);
  if (!response.ok) {
    throw new Error(url + " answered " + response.status);
  }
  return response.json();
}

function shown(item) {
  return new Promise((resolve, reject) => {
    const figure = document.createElement("figure");
    const image = new Image(160, 120);
    image.onload = resolve;
    image.onerror = () => reject(new Error(item.src + " did not load"));
    image.src = item.src;
    const caption = document.createElement("figcaption");
    caption.textContent = item.caption;
    figure.append(image, caption);
    document.getElementById("items").append(figure);
  });
}

async function main() {
  const config = await fetched("/config.json?ts=" + Math.floor(Date.now() / 1000));
  document.body.style.background = config.background;
  document.getElementById("heading").textContent = config.title;
  const found = await fetched("/api/items", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({query: "museum", page: 1}),
  });
  await Promise.all(found.items.map(shown));
  const done = document.createElement("div");
  done.id = "done";
  document.body.append(done);
  document.title = "ready";
}

function start() {
  main().catch((error) => { document.title = "failed: " + error.message; });
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", start);
} else {
  start();
}
"""


def items_answer(query: str) -> bytes:
    """The body /api/items answers for a query."""
    items = [
        {"src": item.path, "caption": item.caption, "colour": f"rgb{item.rgb}"}
        for item in ITEMS.get(query, ())
    ]
    return json.dumps({"query": query, "items": items}).encode()


FEED_PATH = "/feed.html"
FEED_SCRIPT_PATH = "/feed.js"
FEED_DONE_TITLE = "feed complete"
# The images below the fold of /feed.html, which a browser asks for only once scrolled near them.
LAZY_ITEMS = (
    Item("/lazy/1.png", (0, 128, 128), "Teal"),
    Item("/lazy/2.png", (128, 128, 0), "Olive"),
    Item("/lazy/3.png", (128, 0, 128), "Purple"),
    Item("/lazy/4.png", (255, 140, 0), "Orange"),
)
LAZY_PATHS = tuple(item.path for item in LAZY_ITEMS)


@dataclass(frozen=True, slots=True)
class FeedPage:
    """A page of the infinite list of /feed.html: its lines of text and the image they name."""

    number: int
    image: Item
    entries: tuple[str, ...]

    @property
    def path(self) -> str:
        """Where the page's script asks for it, with its query."""
        return f"/api/feed?page={self.number}"


FEED = (
    FeedPage(
        1,
        Item("/feed/1.png", (70, 130, 180), "Harbour"),
        ("The ferry leaves at nine", "Nets drying on the quay", "Gulls over the breakwater"),
    ),
    FeedPage(
        2,
        Item("/feed/2.png", (34, 139, 34), "Orchard"),
        ("Apples ripen in the south rows", "A new hive by the wall", "Pruning starts in March"),
    ),
    FeedPage(
        3,
        Item("/feed/3.png", (178, 34, 34), "Foundry"),
        ("The bell is cast on Friday", "Bronze cools for a week", "Visitors may watch the pour"),
    ),
)
FEED_API_PATHS = tuple(page.path for page in FEED)
FEED_IMAGE_PATHS = tuple(page.image.path for page in FEED)


def feed_answer(page: FeedPage) -> bytes:
    """The body /api/feed answers for a page: its entries, its image, and the number of the next
    page (null for the last)."""
    following = page.number + 1 if page.number < len(FEED) else None
    image = {"src": page.image.path, "caption": page.image.caption}
    return json.dumps(
        {"page": page.number, "next": following, "image": image, "entries": list(page.entries)}
    ).encode()


# /api/feed's answers, by the value of its `page` parameter; any other value is answered 404.
FEED_ANSWERS = {str(page.number): feed_answer(page) for page in FEED}


def feed_load_paths() -> tuple[str, ...]:
    """Every path (with its query, if any) that a browser loading /feed.html and scrolling to its
    end must ask for, /favicon.ico aside, in no particular order."""
    return (FEED_PATH, FEED_SCRIPT_PATH, *FEED_API_PATHS, *FEED_IMAGE_PATHS, *LAZY_PATHS)


# The script fills the body: the heading, the list (`#feed`), a spacer, the lazy images and, at
# the very bottom, the sentinel whose coming into view asks for the next page. The spacer puts the
# lazy images far enough below the fold that Chromium does not fetch them before a scroll: it
# starts them 1250 pixels ahead of the viewport on a fast network, 2500 on a slow one (and under
# `--virtual-time-budget` at once, wherever they are).
FEED_HTML = b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>loading</title>
<style>
body { margin: 0; font: 18px/30px sans-serif; color: rgb(30, 30, 30);
       background: rgb(222, 232, 240); overflow-anchor: none; }
h1 { margin: 0; padding: 0 16px; height: 60px; font: bold 28px/60px sans-serif; }
section { display: flex; gap: 16px; padding: 16px; height: 120px; }
section p { margin: 0; height: 30px; overflow: hidden; white-space: nowrap; }
img { display: block; width: 160px; height: 120px; }
#spacer { height: 3000px; }
#lazy { display: flex; gap: 16px; padding: 16px; height: 120px; }
#sentinel { height: 1px; }
#feed-done { margin: 16px; width: 40px; height: 40px; background: rgb(20, 20, 20); }
</style>
<script src="/feed.js" defer></script>
</head><body></body></html>
"""

# A page added to the list pushes the sentinel down, out of the viewport (`overflow-anchor: none`
# keeps the browser from scrolling along), so the next page needs another scroll.
FEED_SCRIPT = (
    Template("""const LAZY = $lazy;

async function fetched(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(url + " answered " + response.status);
  }
  return response.json();
}

function added(tag, parent, id) {
  const element = document.createElement(tag);
  if (id) {
    element.id = id;
  }
  parent.append(element);
  return element;
}

function drawn(page) {
  const section = added("section", document.getElementById("feed"));
  section.dataset.page = page.page;
  const image = new Image(160, 120);
  const loaded = new Promise((resolve, reject) => {
    image.onload = resolve;
    image.onerror = () => reject(new Error(page.image.src + " did not load"));
  });
  image.alt = page.image.caption;
  image.src = page.image.src;
  const entries = document.createElement("div");
  for (const entry of page.entries) {
    added("p", entries).textContent = entry;
  }
  section.append(image, entries);
  return loaded;
}

function lazyImages(parent) {
  for (const item of LAZY) {
    const image = added("img", parent);
    image.loading = "lazy";
    image.width = 160;
    image.height = 120;
    image.alt = item.caption;
    image.src = item.src;
  }
}

function nearBottom(sentinel) {
  return new Promise((resolve) => {
    const observer = new IntersectionObserver((seen) => {
      if (seen.some((entry) => entry.isIntersecting)) {
        observer.disconnect();
        resolve();
      }
    }, {rootMargin: "0px 0px 100px 0px"});
    observer.observe(sentinel);
  });
}

async function main() {
  added("h1", document.body).textContent = "The scripted feed";
  added("div", document.body, "feed");
  added("div", document.body, "spacer");
  lazyImages(added("div", document.body, "lazy"));
  const sentinel = added("div", document.body, "sentinel");
  let page = await fetched("/api/feed?page=1");
  await drawn(page);
  while (page.next !== null) {
    await nearBottom(sentinel);
    page = await fetched("/api/feed?page=" + page.next);
    await drawn(page);
  }
  added("div", document.body, "feed-done");
  document.title = $done_title;
}

main().catch((error) => { document.title = "failed: " + error.message; });
""")
    .substitute(
        lazy=json.dumps([{"src": item.path, "caption": item.caption} for item in LAZY_ITEMS]),
        done_title=json.dumps(FEED_DONE_TITLE),
    )
    .encode()
)

# A photo on /static.html.
STATIC_IMAGE = Item("/static/harbour.png", (90, 110, 130), "The harbour at dawn")
# Plain HTML without a script, by path: what a crawler gets without a browser is the whole page.
STATIC_PAGES = {
    "/static.html": b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>The old harbour</title></head>
<body>
<h1>The old harbour</h1>
<p>The old harbour was dug in the fourteenth century, when the river still reached the town
walls. Its quays are built of stone brought by barge from the quarries upstream.</p>
<p><img src="/static/harbour.png" width="160" height="120" alt="The harbour at dawn"></p>
<p>Fishing boats moor along the north quay; the south quay belongs to the ferry, which crosses
to the island four times a day in summer and twice in winter.</p>
<p>The harbour master's house, by the lock, keeps the tide tables of two hundred years. Read
about them in <a href="/static2.html">the second part</a>.</p>
<p><a href="/static2.html">Next: the tide tables</a></p>
</body></html>
""",
    "/static2.html": b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>The tide tables</title></head>
<body>
<h1>The tide tables</h1>
<p>Every high and low water since 1820 is written in the harbour master's ledgers, one volume
a year, in the hand of whoever kept the lock.</p>
<p>The highest tide on record came in the storm of February 1953, a metre above the quay.</p>
<p><a href="/static.html">Back to the old harbour</a></p>
</body></html>
""",
}

# What /feed.html and /static.html are made of, besides /api/feed: the body and the Content-Type
# of each path.
RESOURCES: dict[str, tuple[bytes, str]] = {
    FEED_PATH: (FEED_HTML, "text/html; charset=utf-8"),
    FEED_SCRIPT_PATH: (FEED_SCRIPT, "application/javascript"),
    **{
        item.path: (solid_png(*IMAGE_SIZE, item.rgb), "image/png")
        for item in (*LAZY_ITEMS, *(page.image for page in FEED), STATIC_IMAGE)
    },
    **{path: (html, "text/html; charset=utf-8") for path, html in STATIC_PAGES.items()},
}


@dataclass(frozen=True, slots=True)
class Received:
    """A request as the site got it."""

    method: str
    path: str
    query: str  # the query string as sent, without "?"
    body: bytes


@dataclass(frozen=True, slots=True)
class Handled:
    """When the site handled a request, and for whom: the client's address and port (the port
    tells one connection from another), and the times, from `time.monotonic()`, at which the
    handler got the request and had its answer (or gave up, the client gone)."""

    method: str
    path: str
    query: str
    peer: tuple[str, int]
    started: float
    ended: float


def gaps_between(handled: Sequence[Handled]) -> list[float]:
    """The pause, in seconds, before each request after the first, in the order they started:
    from the latest end of a request started before it to its own start. A gap is negative when
    a request started while another was being handled."""
    ordered = sorted(handled, key=lambda h: h.started)
    latest_ends = accumulate((h.ended for h in ordered), max)
    return [h.started - end for h, end in zip(ordered[1:], latest_ends, strict=False)]


def peer_of(request: web.Request) -> tuple[str, int]:
    """The address and port of the client that sent a request."""
    assert request.transport is not None, "a request being handled has its connection"
    host, port = request.transport.get_extra_info("peername")[:2]
    return str(host), int(port)


def answer(request: web.Request, body: bytes) -> web.Response:
    """The site's answer to a request whose body is `body`."""
    if request.method == "GET" and request.path == "/":
        return web.Response(body=PAGE, content_type="text/html", charset="utf-8")
    if request.method == "GET" and request.path == "/app.js":
        return web.Response(body=APP, content_type="application/javascript")
    if request.method == "GET" and request.path == "/config.json":
        return web.Response(body=CONFIG_BODY, content_type="application/json")
    if request.method == "GET" and request.path in IMAGES:
        return web.Response(body=IMAGES[request.path], content_type="image/png")
    if request.method == "POST" and request.path == "/api/items":
        try:
            query = json.loads(body)["query"]
        except (ValueError, KeyError, TypeError):
            return web.Response(status=400, text="a JSON body with a query, please\n")
        return web.Response(body=items_answer(str(query)), content_type="application/json")
    if request.method == "GET" and request.path in RESOURCES:
        content, kind = RESOURCES[request.path]
        return web.Response(body=content, headers={"Content-Type": kind})
    page = request.query.get("page", "")
    if request.method == "GET" and request.path == "/api/feed" and page in FEED_ANSWERS:
        return web.Response(body=FEED_ANSWERS[page], content_type="application/json")
    return web.Response(status=404, text="not found\n")


class ScriptedSite(WebServer):
    """The site, served from a thread of its own on 127.0.0.1 and a free port; it answers any
    method and records every request, holding each `delay` seconds before its answer."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(answering(self._serve))
        self.received: list[Received] = []
        self.handled: list[Handled] = []  # in the order the requests were done with
        self._delay = delay
        self._in_flight = 0
        self._most_in_flight = 0

    def max_in_flight(self) -> int:
        """The largest number of requests the site handled at once so far."""
        return self._most_in_flight

    def gaps(self) -> list[float]:
        """The pause before each request the site handled after its first (`gaps_between`)."""
        return gaps_between(self.handled)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        peer = peer_of(request)
        self._in_flight += 1
        self._most_in_flight = max(self._most_in_flight, self._in_flight)
        try:
            body = await request.read()
            self.received.append(Received(request.method, request.path, request.query_string, body))
            await asyncio.sleep(self._delay)
            return answer(request, body)
        finally:
            self._in_flight -= 1
            self.handled.append(
                Handled(
                    request.method,
                    request.path,
                    request.query_string,
                    peer,
                    started,
                    time.monotonic(),
                )
            )
