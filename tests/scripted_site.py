"""A small website on loopback that builds its page with scripts, for replay tests.

The page `/` holds no content of its own. An inline script inserts `/app.js?_=<Date.now()>` (a
cache buster), which fetches `/config.json?ts=<seconds since the epoch>` (a timestamp parameter)
for the page's colour and heading, POSTs `{"query": "museum", "page": 1}` as JSON to `/api/items`
for the images to show, draws them with their captions in boxes of fixed size, then adds
`<div id="done">` and sets the title to `ready` (or to `failed: ...` when a step failed). Nothing
drawn depends on the time, so two loads of the page look the same to the pixel, while every load
asks for URLs of its own.

The answer of `/api/items` depends on the body POSTed: another `query` names other images. The
site records every request it gets, so that a test can tell which ones a browser really made.
"""

import json
import struct
import zlib
from dataclasses import dataclass

from aiohttp import web

from tests.threaded_site import ThreadedSite

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


@dataclass(frozen=True, slots=True)
class Received:
    """A request as the site got it."""

    method: str
    path: str
    query: str  # the query string as sent, without "?"
    body: bytes


class ScriptedSite(ThreadedSite):
    """The site, served from a thread of its own on 127.0.0.1 and a free port; it answers any
    method and records every request."""

    def __init__(self) -> None:
        super().__init__(self._serve)
        self.received: list[Received] = []

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(Received(request.method, request.path, request.query_string, body))
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
        return web.Response(status=404, text="not found\n")
