"""Flash movies and server-side image maps: the links they hold are found, typed and crawled.

The Flash movies are written here by a small writer of SWF tags and action records: no Debian
package writes SWF any more, and a movie made here says exactly which links it holds.
"""

import asyncio
import lzma
import random
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from crawler.links import LinkKind
from crawler.parsers import ParseResult, parse, parser_for
from crawler.parsers.imagemap import MAX_SIZE, ImageMapParser
from crawler.parsers.swf import MAX_ACTIONS, MAX_MOVIE, MAX_TAGS, SwfParser
from deploy.testing.cluster import Cluster
from deploy.testing.web_server import WebServer, answering
from tests.proxy.conftest import Proxy, through

from .conftest import run_crawler

PAGE, COMPONENT = LinkKind.PAGE, LinkKind.COMPONENT
FLASH = "application/x-shockwave-flash"
MOVIE_URL = "http://example.com/flash/movie.swf"
MAP_URL = "http://example.com/maps/nav.map"
FAST = 2.0  # seconds a hostile document may take


def links(result: ParseResult | None) -> list[tuple[str, LinkKind, bool, str]]:
    assert result is not None
    return [(link.url, link.kind, link.requisite, link.text) for link in result.links]


def timed(url: str, content_type: str, body: bytes) -> ParseResult:
    """Parses a hostile document, which must take less than FAST seconds."""
    started = time.monotonic()
    result = parse(url, content_type, body)
    assert time.monotonic() - started < FAST
    assert result is not None
    return result


# -- a writer of Flash movies ---------------------------------------------------------------


def bits(*fields: tuple[int, int]) -> bytes:
    """Bit fields, each (value, width), packed from the high bit and padded to a byte."""
    value, width = 0, 0
    for field, size in fields:
        value, width = value << size | field & ((1 << size) - 1), width + size
    padding = -width % 8
    return (value << padding).to_bytes((width + padding) // 8, "big")


def rect(width: int = 11000, height: int = 8000) -> bytes:
    return bits((15, 5), (0, 15), (width, 15), (0, 15), (height, 15))


def tag(code: int, body: bytes, long: bool = False) -> bytes:
    if len(body) < 0x3F and not long:
        return struct.pack("<H", code << 6 | len(body)) + body
    return struct.pack("<HI", code << 6 | 0x3F, len(body)) + body


def action(code: int, payload: bytes = b"") -> bytes:
    return bytes([code]) + (struct.pack("<H", len(payload)) + payload if code >= 0x80 else b"")


def c_string(text: str, encoding: str = "utf-8") -> bytes:
    return text.encode(encoding) + b"\0"


def get_url(url: str, target: str = "") -> bytes:
    return action(0x83, c_string(url) + c_string(target))


def push(*values: str | int) -> bytes:
    """Strings, and constant pool indexes given as ints."""
    return action(
        0x96,
        b"".join(
            b"\0" + c_string(value) if isinstance(value, str) else bytes([8, value])
            for value in values
        ),
    )


def constant_pool(*strings: str) -> bytes:
    return action(0x88, struct.pack("<H", len(strings)) + b"".join(map(c_string, strings)))


def get_url2(flags: int = 0) -> bytes:
    return action(0x9A, bytes([flags]))


ADD = action(0x0A)
END = b"\0"


def do_action(*actions: bytes) -> bytes:
    return tag(12, b"".join(actions) + END)


def button_record() -> bytes:
    """An up-state record: character 1 at depth 1, identity matrix (and colour transform)."""
    return bytes([0x08]) + struct.pack("<HH", 1, 1) + bits((0, 1), (0, 1), (0, 5))


def define_button(*actions: bytes) -> bytes:
    return tag(7, struct.pack("<H", 5) + button_record() + b"\0" + b"".join(actions) + END)


def define_button2(*conditions: bytes) -> bytes:
    """A button whose conditions each hold the actions given."""
    records = button_record() + bits((0, 1), (0, 1), (0, 4)) + b"\0"
    blocks = [struct.pack("<H", 0x08) + actions + END for actions in conditions]
    sized = [struct.pack("<H", len(block) + 2) + block for block in blocks[:-1]]
    sized.append(struct.pack("<H", 0) + blocks[-1])  # the last condition
    return tag(34, struct.pack("<HBH", 6, 0, 2 + len(records)) + records + b"".join(sized))


def clip_actions(*actions: bytes) -> bytes:
    """On(release) handlers, SWF 6 and later: 4-byte event flags."""
    records = b"".join(struct.pack("<II", 0x0800, len(a) + 1) + a + END for a in actions)
    return struct.pack("<HI", 0, 0x0800) + records + struct.pack("<I", 0)


def place_object2(*actions: bytes) -> bytes:
    """A sprite placed with a matrix, a name and clip actions."""
    flags = 0x80 | 0x20 | 0x04 | 0x02
    body = struct.pack("<BHH", flags, 1, 7) + bits((0, 1), (0, 1), (0, 5)) + c_string("clip")
    return tag(26, body + clip_actions(*actions))


def place_object3(*actions: bytes) -> bytes:
    """A sprite placed with a blur filter, a blend mode and clip actions."""
    flags, more = 0x80 | 0x02, 0x01 | 0x02
    blur = bytes([1, 1]) + struct.pack("<IIB", 0x10000, 0x10000, 1 << 3)
    body = struct.pack("<BBHH", flags, more, 2, 7) + blur + bytes([1])
    return tag(70, body + clip_actions(*actions))


def define_sprite(*tags: bytes) -> bytes:
    return tag(39, struct.pack("<HH", 7, 1) + b"".join(tags) + b"\0\0", long=True)


def do_init_action(*actions: bytes) -> bytes:
    return tag(59, struct.pack("<H", 7) + b"".join(actions) + END)


def edit_text(text: str, html: bool = False) -> bytes:
    """A text field with a font, a layout and its initial text."""
    flags, more = 0x80 | 0x01, (0x02 if html else 0) | 0x20
    body = struct.pack("<H", 8) + rect(2000, 400) + bytes([flags, more])
    body += struct.pack("<HH", 1, 240) + bytes(9) + c_string("field") + c_string(text)
    return tag(37, body)


def movie(*tags: bytes, ended: bool = True) -> bytes:
    """The uncompressed movie after the 8-byte header: frame size, rate, count, then tags (and
    a frame shown, then the end tag)."""
    end = tag(1, b"") + b"\0\0" if ended else b""
    return rect() + struct.pack("<HH", 12 << 8, 1) + b"".join(tags) + end


def swf(body: bytes, signature: bytes = b"FWS", version: int = 10, claimed: int = 0) -> bytes:
    """A file of the movie: uncompressed, zlib (CWS) or LZMA (ZWS)."""
    length = struct.pack("<I", claimed or len(body) + 8)
    head = signature + bytes([version]) + length
    if signature == b"CWS":
        return head + zlib.compress(body)
    if signature == b"ZWS":
        alone = lzma.compress(body, format=lzma.FORMAT_ALONE)
        properties, data = alone[:5], alone[13:]
        return head + struct.pack("<I", len(data)) + properties + data
    return head + body


MOVIE = movie(
    do_action(
        get_url("http://example.com/news.html", "_blank"),
        get_url("javascript:openWindow('x')", ""),
        get_url("FSCommand:fullscreen", "true"),
        get_url("", "_self"),
        push("games/intro.swf", "_level1"),
        get_url2(),
        constant_pool("contact.html", "_self", "data/vars.txt", "_root"),
        push(0, 1),
        get_url2(0x40),  # sends the variables with GET: still a page
        push(2),
        push(3),
        get_url2(0x03),  # loadVariables into a target
        push("computed", ".html"),
        ADD,
        push("_self"),
        get_url2(),  # the URL is computed: not guessed
        get_url("/top.html", "_level0"),
    ),
    define_button(get_url("button.html", "_top")),
    define_button2(
        get_url("press.html", "_self"),
        push("/skins/skin.swf", "_root.skin") + get_url2(0x02),  # loadMovie into a clip
    ),
    edit_text("Welcome to the shop"),
    edit_text('<p>See <a href="catalog.html">the catalog</a> <img src="logo.png"></p>', html=True),
    define_sprite(do_action(get_url("in-sprite.html")), place_object2(get_url("clip.html"))),
    do_init_action(get_url("init.html")),
    place_object3(get_url("/clip3.html", "main")),
)
MOVIE_LINKS = [
    ("http://example.com/news.html", PAGE, False, ""),
    ("http://example.com/flash/games/intro.swf", COMPONENT, True, ""),
    ("http://example.com/flash/contact.html", PAGE, False, ""),
    ("http://example.com/flash/data/vars.txt", COMPONENT, True, ""),
    ("http://example.com/top.html", COMPONENT, True, ""),
    ("http://example.com/flash/button.html", PAGE, False, ""),
    ("http://example.com/flash/press.html", PAGE, False, ""),
    ("http://example.com/skins/skin.swf", COMPONENT, True, ""),
    ("http://example.com/flash/catalog.html", PAGE, False, "the catalog"),
    ("http://example.com/flash/logo.png", COMPONENT, True, ""),
    ("http://example.com/flash/in-sprite.html", PAGE, False, ""),
    ("http://example.com/flash/clip.html", PAGE, False, ""),
    ("http://example.com/flash/init.html", PAGE, False, ""),
    ("http://example.com/clip3.html", PAGE, False, ""),
]


# -- Flash movies -------------------------------------------------------------------------


@pytest.mark.parametrize("signature", [b"FWS", b"CWS", b"ZWS"])
def test_the_urls_a_movie_opens_are_links_typed_by_where_they_load(signature: bytes) -> None:
    result = parse(MOVIE_URL, FLASH, swf(MOVIE, signature))
    assert result is not None
    assert links(result) == MOVIE_LINKS
    assert result.text == "Welcome to the shop\nSee the catalog"
    assert result.problems == []


def test_strings_of_movies_before_version_6_are_in_the_ansi_code_page() -> None:
    body = movie(do_action(action(0x83, c_string("café.html", "cp1252") + b"\0")))
    result = parse(MOVIE_URL, FLASH, swf(body, version=5))
    assert result is not None
    assert [link.url for link in result.links] == ["http://example.com/flash/café.html"]


@pytest.mark.parametrize(
    ("content_type", "body", "url"),
    [
        (FLASH, b"", "http://example.com/a"),
        ("application/vnd.adobe.flash.movie", b"", "http://example.com/a"),
        ("application/octet-stream", swf(MOVIE, b"CWS"), "http://example.com/a"),
        ("text/plain", swf(MOVIE, b"ZWS"), "http://example.com/a"),
        ("application/octet-stream", b"", "http://example.com/intro.SWF"),
    ],
    ids=["type", "adobe-type", "zlib-signature", "lzma-signature", "suffix"],
)
def test_a_movie_is_known_by_its_type_its_signature_or_its_suffix(
    content_type: str, body: bytes, url: str
) -> None:
    assert isinstance(parser_for(url, content_type, body[:512]), SwfParser)


@pytest.mark.parametrize(
    "head",
    [
        b"FWS\x00\x10\x00\x00\x00",
        b"CWS: a text\n",
        b"FWS",
        b"ZWS\x0d\x00\x00\x00\x00\x00\x00\x00\xff",
    ],
    ids=["version-0", "text", "short", "bad-lzma-properties"],
)
def test_text_that_starts_like_a_movie_is_not_taken_for_one(head: bytes) -> None:
    assert not isinstance(parser_for("http://example.com/a", "text/plain", head), SwfParser)


def test_a_movie_claiming_4_gib_is_read_for_what_it_holds() -> None:
    body = movie(do_action(get_url("/kept.html")))
    for signature in (b"FWS", b"CWS", b"ZWS"):
        result = timed(MOVIE_URL, FLASH, swf(body, signature, claimed=0xFFFFFFFF))
        assert [link.url for link in result.links] == ["http://example.com/kept.html"]
        assert result.problems == [f"swf: claims {0xFFFFFFFF - 8} bytes, read up to {MAX_MOVIE}"]


def zlib_bomb(size: int) -> bytes:
    """`size` zero bytes, zlib-compressed."""
    compressor = zlib.compressobj(9)
    block = bytes(1024 * 1024)
    data = b"".join(compressor.compress(block) for _ in range(size // len(block)))
    return data + compressor.flush()


def lzma_bomb(size: int) -> bytes:
    """`size` zero bytes, as the LZMA part of a ZWS file."""
    compressor = lzma.LZMACompressor(lzma.FORMAT_ALONE, preset=0)
    block = bytes(1024 * 1024)
    alone = b"".join(compressor.compress(block) for _ in range(size // len(block)))
    alone += compressor.flush()
    return struct.pack("<I", len(alone) - 13) + alone[:5] + alone[13:]


@pytest.mark.parametrize("signature", [b"CWS", b"ZWS"])
def test_a_decompression_bomb_is_cut_in_bounded_time_and_memory(signature: bytes) -> None:
    size = 4 * MAX_MOVIE if signature == b"CWS" else 2 * MAX_MOVIE
    bomb = zlib_bomb(size) if signature == b"CWS" else lzma_bomb(size)
    file = signature + b"\x0d" + struct.pack("<I", size) + bomb
    tracemalloc.start()
    try:
        result = timed(MOVIE_URL, FLASH, file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"swf: decompressed movie cut at {MAX_MOVIE} bytes" in result.problems
    assert peak < 4 * MAX_MOVIE


@pytest.mark.parametrize("signature", [b"CWS", b"ZWS"])
def test_bytes_after_the_end_of_a_compressed_movie_are_left(signature: bytes) -> None:
    file = swf(movie(do_action(get_url("/kept.html"))), signature) + bytes(200_000)
    result = timed(MOVIE_URL, FLASH, file)
    assert [link.url for link in result.links] == ["http://example.com/kept.html"]
    assert result.problems == []


def test_a_tag_running_past_the_end_of_the_movie_is_read_as_far_as_it_goes() -> None:
    actions = get_url("/before.html") + get_url("/after.html")
    body = movie(do_action(get_url("/first.html")), ended=False)
    body += struct.pack("<HI", 12 << 6 | 0x3F, 1 << 20) + actions
    result = timed(MOVIE_URL, FLASH, swf(body))
    assert [link.url for link in result.links] == [
        "http://example.com/first.html",
        "http://example.com/before.html",
        "http://example.com/after.html",
    ]
    assert result.problems == ["swf: tag 12 at byte 32 runs past the end of the movie"]


def test_a_truncated_movie_keeps_the_links_before_the_cut() -> None:
    file = swf(movie(do_action(get_url("/kept.html"), get_url("/lost-in-the-cut.html"))))
    cut = file.index(b"/lost") + 3
    result = timed(MOVIE_URL, FLASH, file[:cut])
    assert [link.url for link in result.links] == ["http://example.com/kept.html"]
    assert result.problems == [
        "swf: truncated: 36 of the 61 bytes it claims",
        "swf: tag 12 at byte 13 runs past the end of the movie",
        "swf: DoAction tag at byte 15: truncated",
    ]


def test_floods_of_tags_and_actions_are_cut_at_their_bounds() -> None:
    tags = movie(tag(9, b"\0\0\0") * (MAX_TAGS + 10))
    result = timed(MOVIE_URL, FLASH, swf(tags, b"CWS"))
    assert f"swf: more than {MAX_TAGS} tags: the rest not read" in result.problems
    flood = movie(tag(12, ADD * (MAX_ACTIONS + 10) + get_url("/never.html") + END))
    result = timed(MOVIE_URL, FLASH, swf(flood, b"CWS"))
    assert result.links == []
    assert f"swf: more than {MAX_ACTIONS} actions: the rest not read" in result.problems


@pytest.mark.parametrize("signature", [b"FWS", b"CWS", b"ZWS"])
def test_damaged_movies_never_raise(signature: bytes) -> None:
    file = swf(MOVIE, signature)
    draw = random.Random(signature)
    for _ in range(300):
        damaged = bytearray(file)
        for _ in range(draw.randint(1, 8)):
            damaged[draw.randrange(len(damaged))] = draw.randrange(256)
        timed(MOVIE_URL, FLASH, bytes(damaged[: draw.randint(8, len(damaged))]))


def test_a_file_that_is_no_movie_is_one_problem() -> None:
    result = timed(MOVIE_URL, FLASH, b"GIF89a, not a movie")
    assert result.links == [] and result.problems == ["swf: not a Flash movie"]


# -- image maps -----------------------------------------------------------------------------

NCSA_MAP = b"""# The navigation bar
#   made by hand

rect /products.html 0,0 99,30
rect   services.html   "Our services"   100,0 199,30
circle /about.html 250,15 265,15
circle /team.html 300,15 12
poly http://other.example/partners.html 320,0 340,30 360,0 "Partners"
point /news.html 400,15
rect nocontent 0,31 400,40
rect map 0,41 400,50
base /maps/
point press.html 420,15
base map
point here.html 430,15
default /index.html
"""
NCSA_LINKS = [
    ("http://example.com/products.html", PAGE, False, ""),
    ("http://example.com/services.html", PAGE, False, "Our services"),
    ("http://example.com/about.html", PAGE, False, ""),
    ("http://example.com/team.html", PAGE, False, ""),
    ("http://other.example/partners.html", PAGE, False, "Partners"),
    ("http://example.com/news.html", PAGE, False, ""),
    ("http://example.com/maps/press.html", PAGE, False, ""),
    ("http://example.com/maps/here.html", PAGE, False, ""),
    ("http://example.com/index.html", PAGE, False, ""),
]

CERN_MAP = b"""default /cern/intro.html#map
#London
circle (416,451) 20 http://www.example.org/uk/london.html
rectangle (335,317) (372,325) /uk/bradford.html
rect (0, 0) (10, 10) /uk/small.html
polygon (1,1) (20,1) (10,20) /uk/triangle.html
poly (1,1)(2,2)(3,1) 2003.html
"""
CERN_LINKS = [
    ("http://example.com/cern/intro.html", PAGE, False, ""),
    ("http://www.example.org/uk/london.html", PAGE, False, ""),
    ("http://example.com/uk/bradford.html", PAGE, False, ""),
    ("http://example.com/uk/small.html", PAGE, False, ""),
    ("http://example.com/uk/triangle.html", PAGE, False, ""),
    ("http://example.com/2003.html", PAGE, False, ""),
]


@pytest.mark.parametrize(
    ("body", "expected"), [(NCSA_MAP, NCSA_LINKS), (CERN_MAP, CERN_LINKS)], ids=["ncsa", "cern"]
)
def test_every_target_of_an_image_map_is_a_page_taken_from_the_server_root(
    body: bytes, expected: list[tuple[str, LinkKind, bool, str]]
) -> None:
    result = parse(MAP_URL, "application/x-httpd-imap", body)
    assert result is not None
    assert links(result) == expected
    assert result.problems == [] and result.text == ""


@pytest.mark.parametrize(
    ("content_type", "url", "head"),
    [
        ("text/plain", "http://example.com/nav", NCSA_MAP),  # served as a plain file
        ("application/octet-stream", "http://example.com/nav", CERN_MAP),
        ("text/plain", "http://example.com/nav", b"rect /a.html 0,0 1,1\n" * 30),  # a line cut
        ("text/x-imagemap", "http://example.com/nav", b""),
        ("application/x-httpd-imap", "http://example.com/nav", b""),
        ("application/octet-stream", MAP_URL, b""),
    ],
    ids=["ncsa-lines", "cern-lines", "lines-cut", "type", "apache-type", "suffix"],
)
def test_an_image_map_is_known_by_its_lines_its_type_or_its_suffix(
    content_type: str, url: str, head: bytes
) -> None:
    assert isinstance(parser_for(url, content_type, head), ImageMapParser)


@pytest.mark.parametrize(
    "head",
    [
        b"# only comments\n# here\n",
        b"Default settings are kept.\n",
        b"rect /a.html\n",  # a shape without coordinates
        b"default /a.html\nThis is text.\n",
    ],
    ids=["comments", "sentence", "shape-without-points", "then-text"],
)
def test_text_is_not_taken_for_an_image_map(head: bytes) -> None:
    assert not isinstance(parser_for("http://example.com/a", "text/plain", head), ImageMapParser)


def test_a_map_suffix_on_another_format_is_one_problem_and_no_link() -> None:
    source_map = b'{"version":3,"sources":["app.ts"],"mappings":"AAAA"}\nrect /x.html 0,0 1,1\n'
    result = parse("http://example.com/app.js.map", "application/octet-stream", source_map)
    assert result is not None and result.links == []
    assert result.problems == [
        'imagemap: not an image map: \'{"version":3,"sources":["app.ts"],"mappings":"AAAA"}\''
    ]


def test_a_map_of_a_million_lines_is_read_in_bounded_time() -> None:
    result = timed(MAP_URL, "text/plain", b"rect /x.html 0,0 1,1\n" * 1_000_000)
    assert len(result.links) == MAX_SIZE // len(b"rect /x.html 0,0 1,1\n")
    assert result.problems == [f"imagemap: document cut at {MAX_SIZE} bytes"]


def test_lines_of_megabytes_in_a_map_are_cut_and_reported() -> None:
    body = b"default /a.html\n" + b"rect /" + b"b" * (5 << 20) + b" 0,0 1,1\n"
    result = timed(MAP_URL, "application/x-httpd-imap", body)
    assert [link.url for link in result.links] == ["http://example.com/a.html"]
    assert result.problems[0].startswith("imagemap: line 2 not read: 'rect /bbbb")
    assert result.problems[-1] == f"imagemap: document cut at {MAX_SIZE} bytes"


def test_an_ismap_image_in_a_link_makes_the_map_file_a_page_link() -> None:
    page = b'<!DOCTYPE html><a href="/nav.map"><img src="/nav.gif" ismap></a>'
    assert links(parse("http://example.com/", "text/html", page)) == [
        ("http://example.com/nav.map", PAGE, False, ""),
        ("http://example.com/nav.gif", COMPONENT, True, ""),
    ]


# -- a crawl ----------------------------------------------------------------------------------

SITE_MOVIE = swf(
    movie(
        do_action(get_url("/from-flash.html", "_self")),
        define_button2(push("/from-button.html", "_blank") + get_url2()),
        do_action(get_url("/loaded.swf", "_level1")),
    ),
    b"CWS",
)
LOADED_MOVIE = swf(movie(do_action(get_url("/from-loaded-movie.html"))), b"ZWS")
SITE_MAP = b"# served as a plain file\nrect /from-map.html 0,0 50,50\ndefault /map-default.html\n"
START_PAGE = b"""<!DOCTYPE html><title>Flash</title>
<object data="/movie.swf" type="application/x-shockwave-flash" width="550" height="400">
<param name="movie" value="/movie.swf"></object>
<a href="/nav.map"><img src="/nav.gif" ismap></a>
"""
LINKED_PAGES = (
    "/from-flash.html",
    "/from-button.html",
    "/from-loaded-movie.html",
    "/from-map.html",
    "/map-default.html",
)
SITE = {
    "/": ("text/html", START_PAGE),
    "/movie.swf": (FLASH, SITE_MOVIE),
    "/loaded.swf": (FLASH, LOADED_MOVIE),
    "/nav.map": ("text/plain", SITE_MAP),
    "/nav.gif": ("image/gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"),
    **{path: ("text/html", b"<!DOCTYPE html><p>%s" % path.encode()) for path in LINKED_PAGES},
}


async def capture_counts(config: ClusterConfig, urls: list[str]) -> dict[str, int]:
    """The number of captures of each URL."""
    async with ClusterClient(config) as client:
        return {url: len(await client.captures(url)) for url in urls}


def test_links_inside_a_flash_movie_and_an_image_map_are_crawled_and_replay(
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path not in SITE:
            return web.Response(status=404, text="none")
        content_type, body = SITE[request.path]
        return web.Response(body=body, content_type=content_type)

    cluster = cluster_factory(nodes=1, replicas=1)
    with WebServer(answering(answer)) as server:
        base = server.base
        run_crawler(
            cluster, tmp_path / "report.json", tmp_path / "work", "--delay", "0", base + "/"
        )
    assert set(SITE) <= set(asked), sorted(asked)
    counts = asyncio.run(capture_counts(cluster.config, [base + path for path in SITE]))
    assert all(counts.values()), counts
    proxy = proxy_factory(cluster)
    for path in ("/movie.swf", "/loaded.swf"):
        status, headers, body = through(proxy, "GET", base + path)
        assert (status, headers["content-type"], body) == (200, FLASH, SITE[path][1])
