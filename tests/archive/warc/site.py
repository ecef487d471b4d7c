"""A small website on loopback for real crawlers (wget) to archive.

Every page sends the same bytes on every request, so two crawls hold identical payloads and a test
can compare what was imported with `PAGES[path].body`, the payload exactly as sent (for
/gzip.html the gzip bytes; for /chunked.html the body without its chunk framing).
"""

import gzip
from dataclasses import dataclass

from aiohttp import web

from deploy.testing.web_server import WebServer, answering

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


@dataclass(frozen=True, slots=True)
class Page:
    """What the site answers for one path."""

    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...] = ()
    chunks: int = 0  # when above 0, the body is sent chunked, in this many pieces


def _html(title: str, text: str = "") -> bytes:
    return (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
        f"<body><h1>{title}</h1>\n{text}</body></html>\n"
    ).encode()


HTML = "text/html; charset=utf-8"
LINKED = (
    "/chunked.html",
    "/gzip.html",
    "/copy-a.html",
    "/copy-b.html",
    "/missing.html",
    "/error.html",
    "/old.html",
)
COPY = _html("Copy", "<p>The same bytes under two URLs.</p>\n")

PAGES: dict[str, Page] = {
    "/": Page(
        200,
        _html(
            "Test site",
            "".join(f'<p><a href="{path}">{path}</a></p>\n' for path in LINKED)
            + '<p><img src="/image.png" alt="a pixel"></p>\n',
        ),
        HTML,
    ),
    "/chunked.html": Page(
        200,
        _html("Chunked", "".join(f"<p>Piece {n} of a chunked body.</p>\n" for n in range(40))),
        HTML,
        chunks=4,
    ),
    "/gzip.html": Page(
        200,
        gzip.compress(_html("Gzip", "<p>Compressed by the site itself.</p>\n" * 20), mtime=0),
        HTML,
        (("Content-Encoding", "gzip"),),
    ),
    "/image.png": Page(200, PNG, "image/png"),
    "/copy-a.html": Page(200, COPY, HTML),
    "/copy-b.html": Page(200, COPY, HTML),
    "/missing.html": Page(404, _html("Not found"), HTML),
    "/error.html": Page(500, _html("Server error"), HTML),
    "/old.html": Page(
        301, _html("Moved", '<a href="/new.html">here</a>\n'), HTML, (("Location", "/new.html"),)
    ),
    "/new.html": Page(200, _html("New", "<p>Where /old.html went.</p>\n"), HTML),
    "/robots.txt": Page(200, b"User-agent: *\nDisallow:\n", "text/plain"),
}


def expected(path: str) -> tuple[int, bytes]:
    """The status and the payload bytes the site sends for `path`."""
    page = PAGES[path]
    return page.status, page.body


async def _serve(request: web.Request) -> web.StreamResponse:
    page = PAGES.get(request.path)
    if page is None:
        raise web.HTTPNotFound()
    headers = {"Content-Type": page.content_type, **dict(page.headers)}
    if not page.chunks:
        return web.Response(status=page.status, body=page.body, headers=headers)
    response = web.StreamResponse(status=page.status, headers=headers)
    response.enable_chunked_encoding()
    await response.prepare(request)
    size = -(-len(page.body) // page.chunks)
    for start in range(0, len(page.body), size):
        await response.write(page.body[start : start + size])
    await response.write_eof()
    return response


class TestSite(WebServer):
    """The site, served from a thread of its own on 127.0.0.1 and a free port; GET only."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self) -> None:
        super().__init__(answering(_serve, "GET"))
