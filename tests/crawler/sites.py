"""A small web on loopback for the site crawler's tests: three sites, one port, three addresses.

`python -m tests.crawler.sites --port-file FILE` serves every site on the same port of each of
its addresses (127.0.0.2, 127.0.0.3, 127.0.0.4) and picks the site by the Host header; a host
name asked on an address that is not its own gets 421, so the crawler must be told `--resolve
HOST:IP`. A control server on 127.0.0.1 shows, per address, how many requests were in progress
at once, how many connections were accepted, and a log of every request (`/stats`, `/log`,
`/reset`); `/change?site=HOST` publishes the next version of a site (see CHANGES) and
`/version` tells each site's version. FILE gets `{"port": P, "control": URL}` once all listen.

Tests start it with `serve_sites`, and compare what a crawl did with EXPECTED_ALPHA.
"""

import argparse
import asyncio
import calendar
import contextlib
import datetime
import email.utils
import gzip
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import brotlicffi
from aiohttp import web

from archive.header_block import media_type
from deploy.testing.waits import wait_until
from deploy.testing.web_server import WebServer

ALPHA, BETA, GAMMA = "www.alpha.test", "img.beta.test", "www.gamma.test"
HOSTS: dict[str, str] = {ALPHA: "127.0.0.2", BETA: "127.0.0.3", GAMMA: "127.0.0.4"}
ADDRESSES: tuple[str, ...] = tuple(dict.fromkeys(HOSTS.values()))

SERVICE_TIME = 0.005  # a site's every answer waits this long, so overlapping requests are caught
SLOW_DELAY = 30.0  # /slow.html answers after this; ?delay=SECONDS asks for less
ENDLESS_BLOCK = bytes(range(256)) * 64  # /endless.bin sends this again and again, chunked
READY_TIMEOUT = 20.0
BIND_ATTEMPTS = 20
BASE_TIME = datetime.datetime(2025, 1, 1, 12, 0, tzinfo=datetime.UTC)  # version 1's Last-Modified
ROOT = Path(__file__).resolve().parents[2]

HTML = "text/html; charset=utf-8"
PNG_TYPE = "image/png"
CSS_TYPE = "text/css; charset=utf-8"
JS_TYPE = "text/javascript; charset=utf-8"
# What the sites compress when asked (`coded`).
COMPRESSED_TYPES = frozenset(
    {
        "text/html",
        "text/css",
        "text/javascript",
        "application/javascript",
        "text/plain",
        "text/xml",
        "application/xml",
        "application/rss+xml",
        "application/json",
    }
)


def url(host: str, path: str, port: int) -> str:
    """The absolute URL of `path` on the site `host`, served on `port`."""
    return f"http://{host}:{port}{path}"


# What a full crawl of www.alpha.test (every depth, robots.txt obeyed) meets, as (host, path)
# pairs, the path with its query. Other hosts' robots.txt and /favicon.ico are left out: a
# crawler may fetch them or not.
_Places = frozenset[tuple[str, str]]


def _on(host: str, *paths: str) -> _Places:
    return frozenset((host, path) for path in paths)


LEVELS: tuple[str, ...] = (  # LEVELS[n] is n links away from the start page, and no less
    "/",
    "/level1/a.html",
    "/level1/level2/b.html",
    "/level1/level2/level3/c.html",
    "/level1/level2/level3/level4/d.html",
    "/level1/level2/level3/level4/level5/e.html",
)
TRAPS: tuple[str, ...] = ("/calendar", "/loop/")  # path prefixes of the endless URL spaces
INVALID_LINK = "http://[::1"  # the href of a link on /level1/odd.html that is no URL
_pages = _on(
    ALPHA,
    *LEVELS,
    "/level1/odd.html",
    "/frames.html",
    "/frames/left.html",
    "/frames/right.html",
    "/refresh.html",
    "/after-refresh.html",
    "/redirected.html",
    "/calendar?month=2026-11",
    "/loop/",
    "/malformed.html",
    "/malformed-target.html",
)
_components = _on(
    ALPHA,
    "/css/main.css",
    "/css/theme.css",
    "/js/app.js",
    "/fonts/alpha-sans.woff2",
    "/img/home.png",
    "/img/bg.png",
    "/img/pattern.png",
    "/img/level1.png",
    "/img/level2.png",
    "/img/level3.png",
    "/img/level4.png",
    "/img/deep/level5.png",
    "/img/shared.png",
    "/img/copies/shared-copy.png",
    "/img/odd.png",
    "/img/left.png",
    "/img/right.png",
    "/img/after-refresh.png",
    "/img/redirected.png",
    "/img/sitemap.png",
    "/img/malformed.png",
    "/wrong-type.html",
) | _on(BETA, "/logo.png", "/photo.png")
_scripted = _on(ALPHA, "/img/written.png")
_sitemap = _on(ALPHA, "/only-in-sitemap.html")
_files = _on(ALPHA, "/robots.txt", "/sitemap.xml", "/feed.xml")
_redirects = _on(ALPHA, "/redirect/1", "/redirect/2")
_bad = _on(
    ALPHA, "/slow.html", "/endless.bin", "/broken-redirect", "/redirect-loop", "/wrong-type.png"
)
EXPECTED_ALPHA: dict[str, _Places] = {
    # HTML pages reached by links, frames, a refresh or a redirect from the start page
    "pages": _pages,
    # what those pages need to be seen: styles (and what they import), scripts, fonts, images
    "components": _components,
    # an image only a page's script asks for: found by running the page, not by parsing it
    "scripted": _scripted,
    # a page no link leads to, listed by the sitemap that robots.txt names
    "sitemap": _sitemap,
    "files": _files,  # robots.txt, the sitemap, the RSS feed the start page announces
    "redirects": _redirects,  # the hops of /redirect/1 -> /redirect/2 -> /redirected.html
    # asked for, never archived as a good page: 30 s late, endless, redirects that lead
    # nowhere, HTML sent as image/png
    "bad": _bad,
    "fetched": _pages | _components | _scripted | _sitemap | _files | _redirects | _bad,
    "never": _on(ALPHA, "/private/secret.html"),  # excluded by robots.txt, linked from pages
    "external": _on(GAMMA, "/"),  # a link to another site: reported, not followed
}
# Identical bytes under different URLs.
IDENTICAL: tuple[_Places, ...] = (
    _on(ALPHA, "/img/shared.png", "/img/copies/shared-copy.png") | _on(BETA, "/photo.png"),
    _on(ALPHA, "/img/home.png", "/img/deep/level5.png"),
)
# What POST /change?site=HOST changes on that site (new text, new image bytes); nothing else does.
CHANGES: dict[str, frozenset[str]] = {
    ALPHA: frozenset({"/level1/a.html", "/level1/level2/level3/c.html", "/img/level2.png"}),
    BETA: frozenset({"/logo.png"}),
    GAMMA: frozenset({"/about.html"}),
}


def expected_urls(kind: str, port: int) -> set[str]:
    """EXPECTED_ALPHA[kind] as absolute URLs on `port`."""
    return {url(host, path, port) for host, path in EXPECTED_ALPHA[kind]}


# The content.


def png(colour: tuple[int, int, int], size: int = 8) -> bytes:
    """A PNG image of one colour, `size` pixels square."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + bytes(colour) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


COLOURS: dict[str, tuple[int, int, int]] = {
    "home": (200, 40, 40),
    "bg": (250, 246, 232),
    "pattern": (190, 215, 250),
    "written": (40, 160, 70),
    "level1": (240, 160, 20),
    "level2": (20, 120, 220),
    "level3": (120, 60, 200),
    "level4": (20, 180, 180),
    "shared": (130, 0, 130),
    "odd": (90, 90, 90),
    "left": (255, 120, 180),
    "right": (100, 200, 100),
    "after-refresh": (230, 230, 0),
    "redirected": (0, 90, 60),
    "sitemap": (160, 100, 40),
    "malformed": (210, 80, 0),
    "wrong-type": (0, 0, 160),
    "logo": (0, 140, 255),
    "banner": (60, 60, 140),
    "favicon": (200, 40, 40),
}


@dataclass(frozen=True, slots=True)
class Resource:
    """What a site answers for one URL."""

    body: bytes
    content_type: str = HTML
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    modified: datetime.datetime = BASE_TIME


def page(title: str, body: str, *, head: str = "", style: bool = True) -> bytes:
    sheet = '<link rel="stylesheet" href="/css/main.css">\n' if style else ""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{sheet}{head}</head>\n<body>\n<h1>{title}</h1>\n{body}"
        "</body>\n</html>\n"
    ).encode()


def img(src: str, alt: str, size: int = 48) -> str:
    return f'<p><img src="{src}" alt="{alt}" width="{size}" height="{size}"></p>\n'


def links(*pairs: tuple[str, str]) -> str:
    items = "".join(f'<li><a href="{href}">{text}</a></li>\n' for href, text in pairs)
    return f"<ul>\n{items}</ul>\n"


def image(name: str, version: int = 1) -> Resource:
    red, green, blue = COLOURS[name]
    return Resource(png((red, green, (blue + 97 * (version - 1)) % 256)), PNG_TYPE)


def redirect(status: int, location: str | None) -> Resource:
    headers = (("Location", location),) if location is not None else ()
    return Resource(
        page("Moved", "<p>This page has moved.</p>\n", style=False), HTML, status, headers
    )


def robots(*lines: str) -> Resource:
    return Resource(("\n".join(lines) + "\n").encode(), "text/plain; charset=utf-8")


def revised(text: str, version: int) -> str:
    return text if version == 1 else f"{text} Revised: version {version}."


ALPHA_CSS = b"""@import url("/css/theme.css");

body {
  font-family: "Alpha Sans", Georgia, serif;
  background: #faf6e8 url(../img/bg.png) repeat;
  margin: 2em;
}
img { border: 1px solid #333; }
"""
ALPHA_THEME = b"""@font-face {
  font-family: "Alpha Sans";
  src: url("/fonts/alpha-sans.woff2") format("woff2");
}

.pattern {
  background-image: url('/img/pattern.png');
  width: 96px;
  height: 48px;
}
"""
ALPHA_JS = b"""// Writes an image into the page while it loads: only running the script finds its URL.
document.write('<img src="/img/written.png" id="written" alt="Written by a script" width="48" height="48">');
"""
# Not a usable font: the bytes a crawler must store and a browser asks for.
FONT = b"wOF2\x00\x01\x00\x00" + bytes(range(256)) * 4
MALFORMED = (
    b"<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>Malformed</title>\n"
    b"<body class=a class=b><p>An unclosed <b>bold <i>and italic\n"
    b'<div id=x=y data-broken= =oops style="color:#700;;">\n'
    b"<img src=/img/malformed.png alt=broken width=48 height=48 <p>\n"
    b"\xff\xfe\x00\x80 garbage \xc3\x28 bytes \xe2\x82 \x01\x02\n"
    b"<table><tr><td>one<td>two</tr>\n"
    b"<a href=/malformed-target.html>still a link</a\n"
    b"<p>after\n</span></div></html>trailing</body>"
)


def alpha(port: int, version: int) -> dict[str, Resource]:
    def at(path: str) -> int:
        return version if path in CHANGES[ALPHA] else 1

    def modified(path: str) -> datetime.datetime:
        return BASE_TIME + datetime.timedelta(days=at(path) - 1)

    def level(path: str, title: str, text: str, body: str) -> tuple[str, Resource]:
        content = page(title, f"<p>{revised(text, at(path))}</p>\n{body}")
        return path, Resource(content, modified=modified(path))

    beta, gamma = url(BETA, "/", port), url(GAMMA, "/", port)
    return dict(
        [
            (
                "/",
                Resource(
                    page(
                        "Alpha",
                        "<p>Alpha is a small site, deeper than it looks.</p>\n"
                        + img("/img/home.png", "Alpha's picture", 96)
                        + img(f"{beta}logo.png", "Beta's logo")
                        + '<div class="pattern" title="The theme\'s pattern"></div>\n'
                        + '<script src="/js/app.js"></script>\n'
                        + "<h2>Sections</h2>\n"
                        + links(
                            ("/level1/a.html", "Level one"),
                            ("/level1/odd.html", "Odd things"),
                            ("/frames.html", "Frames"),
                            ("/refresh.html", "A page that moves on"),
                            ("/redirect/1", "A chain of redirects"),
                            ("/calendar?month=2026-11", "Calendar"),
                            ("/loop/", "Around and around"),
                            ("/private/secret.html", "Staff only"),
                        )
                        + f'<p>Our friends: <a href="{gamma}">Gamma</a>.</p>\n',
                        head='<link rel="alternate" type="application/rss+xml" '
                        'title="Alpha news" href="/feed.xml">\n',
                    )
                ),
            ),
            level(
                "/level1/a.html",
                "Level one",
                "The first level down.",
                img("/img/level1.png", "Level one")
                + img("/img/shared.png", "Shared")
                + links(
                    ("level2/b.html", "Level two"),
                    ("/private/secret.html", "Staff only"),
                    ("../", "Home"),
                ),
            ),
            level(
                "/level1/level2/b.html",
                "Level two",
                "The second level.",
                img("/img/level2.png", "Level two")
                + img("/img/copies/shared-copy.png", "Shared, again")
                + img(f"{beta}photo.png", "Beta's photo")
                + links(("level3/c.html", "Level three"), ("../a.html", "Up")),
            ),
            level(
                "/level1/level2/level3/c.html",
                "Level three",
                "The third level.",
                img("/img/level3.png", "Level three")
                + links(("level4/d.html", "Level four"), ("../b.html", "Up")),
            ),
            level(
                "/level1/level2/level3/level4/d.html",
                "Level four",
                "The fourth level.",
                img("/img/level4.png", "Level four")
                + img("/img/shared.png", "Shared")
                + links(
                    ("level5/e.html", "Level five"),
                    ("/private/secret.html", "Staff only"),
                    ("../c.html", "Up"),
                ),
            ),
            level(
                "/level1/level2/level3/level4/level5/e.html",
                "Level five",
                "The deepest level.",
                img("/img/deep/level5.png", "Level five") + links(("/", "Home")),
            ),
            (
                "/level1/odd.html",
                Resource(
                    page(
                        "Odd things",
                        "<p>Pages that misbehave, for a crawler that must not.</p>\n"
                        + img("/img/odd.png", "Odd")
                        + img("/wrong-type.html", "An image sent as text/html")
                        + links(
                            ("/slow.html", "A slow page"),
                            ("/endless.bin", "An endless download"),
                            ("/broken-redirect", "A redirect to nowhere"),
                            ("/redirect-loop", "A redirect to itself"),
                            ("/malformed.html", "Malformed HTML"),
                            ("/wrong-type.png", "HTML sent as an image"),
                            (INVALID_LINK, "Not a URL"),
                        ),
                    )
                ),
            ),
            (
                "/frames.html",
                Resource(
                    b'<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Frameset//EN" '
                    b'"http://www.w3.org/TR/html4/frameset.dtd">\n'
                    b'<html><head><meta charset="utf-8"><title>Frames</title></head>\n'
                    b'<frameset cols="50%,50%">\n'
                    b'<frame src="/frames/left.html" name="left">\n'
                    b'<frame src="/frames/right.html" name="right">\n'
                    b"<noframes><body><p>This page needs frames.</p></body></noframes>\n"
                    b"</frameset>\n</html>\n"
                ),
            ),
            ("/frames/left.html", Resource(page("Left frame", img("/img/left.png", "Left")))),
            ("/frames/right.html", Resource(page("Right frame", img("/img/right.png", "Right")))),
            (
                "/refresh.html",
                Resource(
                    page(
                        "Moving on",
                        "<p>This page moves on by itself.</p>\n",
                        head='<meta http-equiv="refresh" content="0; url=/after-refresh.html">\n',
                    )
                ),
            ),
            (
                "/after-refresh.html",
                Resource(page("After the refresh", img("/img/after-refresh.png", "Arrived"))),
            ),
            ("/redirect/1", redirect(301, url(ALPHA, "/redirect/2", port))),
            ("/redirect/2", redirect(302, "/redirected.html")),
            (
                "/redirected.html",
                Resource(page("Redirected", img("/img/redirected.png", "The end of the chain"))),
            ),
            ("/broken-redirect", redirect(302, None)),
            ("/redirect-loop", redirect(301, "/redirect-loop")),
            ("/malformed.html", Resource(MALFORMED)),
            (
                "/malformed-target.html",
                Resource(page("Found", "<p>Found in spite of the malformed page.</p>\n")),
            ),
            (
                "/wrong-type.png",
                Resource(page("Not an image", "<p>HTML, sent as image/png.</p>\n"), PNG_TYPE),
            ),
            ("/wrong-type.html", Resource(image("wrong-type").body, HTML)),
            (
                "/only-in-sitemap.html",
                Resource(page("Only in the sitemap", img("/img/sitemap.png", "Sitemap"))),
            ),
            (
                "/private/secret.html",
                Resource(page("Staff only", "<p>robots.txt keeps crawlers out.</p>\n")),
            ),
            ("/css/main.css", Resource(ALPHA_CSS, CSS_TYPE)),
            ("/css/theme.css", Resource(ALPHA_THEME, CSS_TYPE)),
            ("/js/app.js", Resource(ALPHA_JS, JS_TYPE)),
            ("/fonts/alpha-sans.woff2", Resource(FONT, "font/woff2")),
            ("/favicon.ico", image("favicon")),
            *(
                (f"/img/{name}.png", image(name))
                for name in (
                    "home",
                    "bg",
                    "pattern",
                    "written",
                    "level1",
                    "level3",
                    "level4",
                    "shared",
                    "odd",
                    "left",
                    "right",
                    "after-refresh",
                    "redirected",
                    "sitemap",
                    "malformed",
                )
            ),
            (
                "/img/level2.png",
                Resource(
                    image("level2", at("/img/level2.png")).body,
                    PNG_TYPE,
                    modified=modified("/img/level2.png"),
                ),
            ),
            ("/img/copies/shared-copy.png", image("shared")),
            ("/img/deep/level5.png", image("home")),
            (
                "/robots.txt",
                robots(
                    "User-agent: *",
                    "Disallow: /private/",
                    "",
                    f"Sitemap: {url(ALPHA, '/sitemap.xml', port)}",
                ),
            ),
            (
                "/sitemap.xml",
                Resource(
                    (
                        '<?xml version="1.0" encoding="UTF-8"?>\n'
                        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                        + "".join(
                            f"<url><loc>{url(ALPHA, path, port)}</loc>"
                            "<lastmod>2025-01-01</lastmod></url>\n"
                            for path in ("/", "/level1/a.html", "/only-in-sitemap.html")
                        )
                        + "</urlset>\n"
                    ).encode(),
                    "application/xml",
                ),
            ),
            (
                "/feed.xml",
                Resource(
                    (
                        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0">\n<channel>\n'
                        f"<title>Alpha news</title>\n<link>{url(ALPHA, '/', port)}</link>\n"
                        "<description>What is new on Alpha.</description>\n"
                        + "".join(
                            f"<item><title>{title}</title>"
                            f"<link>{url(ALPHA, path, port)}</link>"
                            f'<guid isPermaLink="true">{url(ALPHA, path, port)}</guid>'
                            f"<pubDate>{date}</pubDate></item>\n"
                            for title, path, date in (
                                ("Level one opens", LEVELS[1], "Wed, 01 Jan 2025 12:00:00 GMT"),
                                ("Level two opens", LEVELS[2], "Thu, 02 Jan 2025 12:00:00 GMT"),
                            )
                        )
                        + "</channel>\n</rss>\n"
                    ).encode(),
                    "application/rss+xml",
                ),
            ),
        ]
    )


def beta(port: int, version: int) -> dict[str, Resource]:
    logo = version if "/logo.png" in CHANGES[BETA] else 1
    return {
        "/": Resource(
            page(
                "Beta images",
                img("/logo.png", "Logo")
                + img("/photo.png", "Photo")
                + img("/banner.png", "Banner"),
                style=False,
            )
        ),
        "/logo.png": Resource(
            image("logo", logo).body,
            PNG_TYPE,
            modified=BASE_TIME + datetime.timedelta(days=logo - 1),
        ),
        "/photo.png": image("shared"),
        "/banner.png": image("banner"),
        "/robots.txt": robots("User-agent: *", "Disallow:"),
    }


def gamma(port: int, version: int) -> dict[str, Resource]:
    about = version if "/about.html" in CHANGES[GAMMA] else 1
    nav = links(("/", "Home"), ("/about.html", "About"), ("/contact.html", "Contact"))
    return {
        "/": Resource(
            page(
                "Gamma",
                "<p>Gamma, a neighbour of Alpha.</p>\n"
                + img(url(BETA, "/banner.png", port), "Banner")
                + nav
                + f'<p><a href="{url(ALPHA, "/", port)}">Alpha</a></p>\n',
                style=False,
            )
        ),
        "/about.html": Resource(
            page(
                "About Gamma",
                f"<p>{revised('Gamma has three pages.', about)}</p>\n" + nav,
                style=False,
            ),
            modified=BASE_TIME + datetime.timedelta(days=about - 1),
        ),
        "/contact.html": Resource(page("Contact", "<p>Write to Gamma.</p>\n" + nav, style=False)),
        "/robots.txt": robots("User-agent: *", "Disallow:"),
    }


SITES: dict[str, Callable[[int, int], dict[str, Resource]]] = {
    ALPHA: alpha,
    BETA: beta,
    GAMMA: gamma,
}
NOT_FOUND = Resource(page("Not found", "<p>Nothing here.</p>\n", style=False), HTML, 404)
MONTH = re.compile(r"(\d{4})-(\d{2})")
DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
LOOP = re.compile(r"/loop/(?:again/)*")


def month_page(query: str) -> Resource:
    """The calendar's month: links to the month before, the month after, and every day."""
    match = MONTH.fullmatch(query)
    if match is None or not 1 <= int(match[2]) <= 12 or not 1 <= int(match[1]) <= 9999:
        return NOT_FOUND
    year, month = int(match[1]), int(match[2])
    before = (year - 1, 12) if month == 1 else (year, month - 1)
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    days = calendar.monthrange(year, month)[1]
    body = links(
        (f"/calendar?month={before[0]:04d}-{before[1]:02d}", "Previous month"),
        (f"/calendar?month={after[0]:04d}-{after[1]:02d}", "Next month"),
        *(
            (f"/calendar/day?date={year:04d}-{month:02d}-{d:02d}", str(d))
            for d in range(1, days + 1)
        ),
    )
    return Resource(page(f"Calendar: {calendar.month_name[month]} {year}", body))


def day_page(query: str) -> Resource:
    match = DAY.fullmatch(query)
    try:
        day = datetime.date(int(match[1]), int(match[2]), int(match[3])) if match else None
    except ValueError:
        day = None
    if day is None:
        return NOT_FOUND
    following = day + datetime.timedelta(days=1)
    body = links(
        (f"/calendar?month={day:%Y-%m}", "The month"),
        (f"/calendar/day?date={following.isoformat()}", "Next day"),
    )
    return Resource(page(f"Calendar: {day.isoformat()}", body))


LOOP_PAGE = Resource(page("Around", '<p>One more time.</p>\n<p><a href="again/">Again</a></p>\n'))


# The server.


@dataclass(slots=True)
class AddressStats:
    in_flight: int = 0
    max_in_flight: int = 0
    connections: int = 0
    requests: int = 0


def etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def not_modified(request: web.Request, tag: str, modified: datetime.datetime) -> bool:
    """Whether the request's conditions hold a copy as recent as `tag` and `modified`."""
    match = request.headers.get("If-None-Match")
    if match is not None:
        tags = [t.strip() for t in match.split(",")]
        return "*" in tags or any(t.removeprefix("W/") == tag for t in tags)
    since = request.headers.get("If-Modified-Since")
    if since is None:
        return False
    try:
        when = email.utils.parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return modified <= when


def coded(request: web.Request, resource: Resource) -> tuple[str, bytes] | None:
    """The content coding a server set up as most are (nginx's gzip and Brotli modules) sends a
    resource with, and its bytes: text types only, Brotli for styles and scripts when the client
    takes it, else gzip; None for identity. The bytes are the same at every request (gzip's
    time 0), as a server's cache gives them."""
    if media_type(resource.content_type) not in COMPRESSED_TYPES:
        return None
    accepted = {
        part.split(";")[0].strip().lower()
        for part in request.headers.get("Accept-Encoding", "").split(",")
    }
    if "br" in accepted and resource.content_type in (CSS_TYPE, JS_TYPE):
        return "br", brotlicffi.compress(resource.body)
    if "gzip" in accepted:
        return "gzip", gzip.compress(resource.body, mtime=0)
    return None


async def send_resource(
    request: web.Request, entry: dict[str, Any], resource: Resource
) -> web.StreamResponse:
    """Answer with a resource, 304 when the request's validators match it, compressed when the
    client asks for it (`coded`); noted in entry."""
    status, body = resource.status, resource.body
    headers = {"Content-Type": resource.content_type, **dict(resource.headers)}
    if status == 200:
        tag = etag(body)
        headers["ETag"] = tag
        headers["Last-Modified"] = email.utils.format_datetime(resource.modified, usegmt=True)
        if not_modified(request, tag, resource.modified):
            status, body = 304, b""
            del headers["Content-Type"]
    if status == 200 and (coding := coded(request, resource)) is not None:
        headers["Content-Encoding"], body = coding
        headers["Vary"] = "Accept-Encoding"
    response = web.Response(status=status, body=body, headers=headers)
    entry["status"] = status
    await response.prepare(request)
    await response.write_eof()
    return response


class TestWeb:
    """The sites, their versions and the instrumentation of every address."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self, port: int, addresses: Sequence[str]) -> None:
        self.port = port
        self.versions = dict.fromkeys(SITES, 1)
        self.resources = {host: build(port, 1) for host, build in SITES.items()}
        self.stats = {address: AddressStats() for address in addresses}
        self.log: list[dict[str, Any]] = []

    def counting(
        self, factory: Callable[[], asyncio.Protocol], address: str
    ) -> Callable[[], asyncio.Protocol]:
        """A protocol factory that counts the connections `address` accepts."""

        def accept() -> asyncio.Protocol:
            self.stats[address].connections += 1
            return factory()

        return accept

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request, its response sent in full before the request counts as done.

        The log gets the request when it arrives: time, address, peer, host (the Host header),
        method, path (with its query, as sent), if_modified_since, if_none_match, user_agent,
        accept_encoding;
        then the status sent (None if none was) and the time it ended.
        """
        transport = request.transport
        assert transport is not None
        address = transport.get_extra_info("sockname")[0]
        peer = transport.get_extra_info("peername")
        stats = self.stats[address]
        stats.requests += 1
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        entry: dict[str, Any] = {
            "time": time.time(),
            "address": address,
            "peer": f"{peer[0]}:{peer[1]}",
            "host": request.host,
            "method": request.method,
            "path": request.raw_path,
            "if_modified_since": request.headers.get("If-Modified-Since"),
            "if_none_match": request.headers.get("If-None-Match"),
            "user_agent": request.headers.get("User-Agent"),
            "accept_encoding": request.headers.get("Accept-Encoding"),
            "status": None,
            "end": None,
        }
        self.log.append(entry)
        try:
            return await self.route(request, address, entry)
        finally:
            stats.in_flight -= 1
            entry["end"] = time.time()

    async def route(
        self, request: web.Request, address: str, entry: dict[str, Any]
    ) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0].lower().rstrip(".")
        if HOSTS.get(host) != address or host not in self.resources:
            gone = Resource(b"This host is not served on this address.\n", "text/plain", 421)
            return await send_resource(request, entry, gone)
        await asyncio.sleep(SERVICE_TIME)
        if request.method not in ("GET", "HEAD"):
            refused = Resource(b"GET or HEAD only.\n", "text/plain", 405, (("Allow", "GET, HEAD"),))
            return await send_resource(request, entry, refused)
        path = request.path
        if host == ALPHA:
            if path == "/slow.html":
                delay = min(float(request.query.get("delay", SLOW_DELAY)), SLOW_DELAY)
                await asyncio.sleep(delay)
                slow = Resource(page("Slow", f"<p>Answered after {delay:g} seconds.</p>\n"))
                return await send_resource(request, entry, slow)
            if path == "/endless.bin":
                return await self.endless(request, entry)
            if path == "/calendar":
                return await send_resource(
                    request, entry, month_page(request.query.get("month", ""))
                )
            if path == "/calendar/day":
                return await send_resource(request, entry, day_page(request.query.get("date", "")))
            if LOOP.fullmatch(path):
                return await send_resource(request, entry, LOOP_PAGE)
        resource = self.resources[host].get(path, NOT_FOUND)
        return await send_resource(request, entry, resource)

    async def endless(self, request: web.Request, entry: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.enable_chunked_encoding()
        entry["status"] = 200
        await response.prepare(request)
        if request.method == "HEAD":
            return response
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(ENDLESS_BLOCK)
                await asyncio.sleep(0.001)
        return response

    def change(self, host: str) -> int:
        self.versions[host] += 1
        self.resources[host] = SITES[host](self.port, self.versions[host])
        return self.versions[host]

    def reset(self) -> None:
        for stats in self.stats.values():
            stats.max_in_flight, stats.connections, stats.requests = stats.in_flight, 0, 0
        self.log.clear()

    def control_app(self) -> web.Application:
        async def stats(request: web.Request) -> web.Response:
            return web.json_response({a: asdict(s) for a, s in self.stats.items()})

        async def log(request: web.Request) -> web.Response:
            return web.json_response(self.log)

        async def reset(request: web.Request) -> web.Response:
            self.reset()
            return web.json_response({"reset": True})

        async def change(request: web.Request) -> web.Response:
            site = request.query.get("site", "")
            if site not in SITES:
                raise web.HTTPNotFound(text=f"no site {site!r}\n")
            version = self.change(site)
            return web.json_response(
                {"site": site, "version": version, "changed": sorted(CHANGES[site])}
            )

        async def version(request: web.Request) -> web.Response:
            return web.json_response(self.versions)

        app = web.Application()
        app.router.add_get("/stats", stats)
        app.router.add_get("/log", log)
        app.router.add_post("/reset", reset)
        app.router.add_post("/change", change)
        app.router.add_get("/version", version)
        return app


def bind_shared_port(addresses: Sequence[str]) -> list[socket.socket]:
    """A listening socket on each address, all on one port that was free on the first."""
    for _ in range(BIND_ATTEMPTS):
        sockets = [socket.create_server((addresses[0], 0), backlog=128)]
        port = sockets[0].getsockname()[1]
        try:
            for address in addresses[1:]:
                sockets.append(socket.create_server((address, port), backlog=128))
        except OSError:
            for sock in sockets:
                sock.close()
            continue
        return sockets
    raise OSError(f"no port free on all of {', '.join(addresses)}")


def write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


async def serve(port_file: Path, addresses: Sequence[str], parent: int = 0) -> None:
    """Serve until SIGTERM or SIGINT, or until `parent` (when given) is no longer the parent."""
    loop = asyncio.get_running_loop()
    sockets = bind_shared_port(addresses)
    port = sockets[0].getsockname()[1]
    state = TestWeb(port, addresses)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", state.handle)
    # Cancelled when its client goes: a request the crawler gave up is no longer in progress.
    sites = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.2)
    await sites.setup()
    assert sites.server is not None
    servers = [
        await loop.create_server(state.counting(sites.server, address), sock=sock)
        for address, sock in zip(addresses, sockets, strict=True)
    ]
    control = await announce_and_wait(state.control_app(), port, addresses, port_file, parent)
    for server in servers:
        server.close()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(sites.cleanup(), control.stop_here()), 5)


async def announce_and_wait(
    control_app: web.Application, port: int, addresses: Sequence[str], port_file: Path, parent: int
) -> WebServer:
    """Serve the control app on loopback, write the port file, and wait for SIGTERM, SIGINT or
    the end of the parent process; the control server is the caller's to stop."""
    control = WebServer(control_app, shutdown_timeout=0.2)
    await control.start_here()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watch = asyncio.create_task(watch_parent(parent, stop)) if parent else None
    control_url = control.base
    write_atomically(
        port_file, json.dumps({"port": port, "control": control_url, "addresses": list(addresses)})
    )
    await stop.wait()
    if watch is not None:
        watch.cancel()
    return control


async def watch_parent(parent: int, stop: asyncio.Event) -> None:
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the ports")
    parser.add_argument("--addresses", default=",".join(ADDRESSES), help="comma-separated")
    parser.add_argument("--parent", type=int, default=0, help="exit when this is not the parent")
    args = parser.parse_args(argv)
    addresses = [a.strip() for a in args.addresses.split(",") if a.strip()]
    asyncio.run(serve(args.port_file, addresses, args.parent))


# The client side, for tests.


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Sites:
    """The test web running in a subprocess, and its control server."""

    process: subprocess.Popen[bytes]
    port: int
    control: str
    hosts: dict[str, str]  # host name -> the address it is served on
    log_path: Path

    def url(self, host: str, path: str = "/") -> str:
        return url(host, path, self.port)

    def resolve_args(self) -> list[str]:
        """HOST:IP for every host, as the crawler's --resolve takes them."""
        return [f"{host}:{address}" for host, address in self.hosts.items()]

    def get(
        self,
        host: str,
        path: str = "/",
        headers: dict[str, str] | None = None,
        address: str | None = None,
        method: str = "GET",
    ) -> Answer:
        """Ask `host` for `path` on its own address (or on `address`), on a new connection."""
        connection = http.client.HTTPConnection(address or self.hosts[host], self.port, timeout=10)
        try:
            connection.request(
                method, path, headers={"Host": f"{host}:{self.port}", **(headers or {})}
            )
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            connection.close()

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.control + path, method=method)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)

    def stats(self) -> dict[str, dict[str, int]]:
        stats: dict[str, dict[str, int]] = self._call("GET", "/stats")
        return stats

    def log(self) -> list[dict[str, Any]]:
        log: list[dict[str, Any]] = self._call("GET", "/log")
        return log

    def reset(self) -> None:
        self._call("POST", "/reset")

    def change(self, site: str) -> int:
        """Publish the next version of `site`; its number."""
        version: int = self._call("POST", f"/change?site={site}")["version"]
        return version

    def versions(self) -> dict[str, int]:
        versions: dict[str, int] = self._call("GET", "/version")
        return versions

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


def read_port_file(
    process: subprocess.Popen[bytes], port_file: Path, output: Path
) -> dict[str, Any]:
    """What the test web wrote to its port file, once it has (it writes it once it serves)."""
    wait_until(
        port_file.exists,
        "the test web to serve",
        READY_TIMEOUT,
        interval=0.02,
        process=process,
        details=lambda: output.read_text(errors="replace"),
    )
    ready: dict[str, Any] = json.loads(port_file.read_text())
    return ready


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serve_sites(tmp_path: Path, addresses: Sequence[str] = ADDRESSES) -> Iterator[Sites]:
    """Run the test web in a subprocess until the block ends, however it ends."""
    folder = Path(tempfile.mkdtemp(prefix="sites-", dir=tmp_path))
    port_file, output = folder / "port.json", folder / "sites.log"
    command = [
        sys.executable,
        "-m",
        "tests.crawler.sites",
        "--port-file",
        str(port_file),
        "--addresses",
        ",".join(addresses),
        "--parent",
        str(os.getpid()),
    ]
    with open(output, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        ready = read_port_file(process, port_file, output)
        hosts = {host: address for host, address in HOSTS.items() if address in addresses}
        yield Sites(process, ready["port"], ready["control"], hosts, output)
    finally:
        _stop(process)


if __name__ == "__main__":
    main()
