"""The crawler's parsers: each reads one format and reports its links, typed, and its text.

A parser is chosen by media type, by sniffing the first bytes, then by the URL's suffix. The
built-in ones are registered below; others register through the ``dlweb.parsers`` entry-point
group, each entry point a callable taking no argument that calls register().
"""

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol
from urllib.parse import urlsplit

from archive.header_block import charset_of, media_type

from . import (
    css,
    feeds,
    html,
    imagemap,
    javascript,
    msdoc,
    ooxml,
    pdf,
    playlists,
    rtf,
    sitemap,
    swf,
    text,
)
from .common import SNIFF_SIZE, Parser, ParseResult

__all__ = ["ParseResult", "Parser", "ParserFactory", "parse", "parser_for", "register"]

ENTRY_POINT_GROUP = "dlweb.parsers"
# Media types that say nothing of the format: the URL's suffix may then choose.
UNINFORMATIVE_TYPES = frozenset(
    {
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/binary",
        "application/unknown",
        "unknown/unknown",
        "application/x-unknown-content-type",
        "application/force-download",
        "application/x-download",
    }
)

# Called with the document's URL and the charset of its Content-Type, or None.
ParserFactory = Callable[[str, str | None], Parser]

log = logging.getLogger(__name__)


class _EntryPoint(Protocol):
    name: str

    def load(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class _Registration:
    factory: ParserFactory
    content_types: frozenset[str]
    sniff: Callable[[bytes], bool] | None
    suffixes: tuple[str, ...]


_registry: dict[str, _Registration] = {}
_plugins_loaded = False
_plugins_lock = threading.RLock()  # a plug-in may itself ask for a parser


def register(
    name: str,
    factory: ParserFactory,
    content_types: Iterable[str] = (),
    sniff: Callable[[bytes], bool] | None = None,
    suffixes: Iterable[str] = (),
) -> None:
    """Makes a parser available. A registration under a name already taken (a built-in's too)
    replaces it; the latest registered parser wins when several claim a document."""
    _registry.pop(name, None)
    _registry[name] = _Registration(
        factory,
        frozenset(media_type(content_type) for content_type in content_types),
        sniff,
        tuple(
            suffix.lower() if suffix.startswith(".") else "." + suffix.lower()
            for suffix in suffixes
        ),
    )


def parser_for(url: str, content_type: str | None, head: bytes) -> Parser | None:
    """A parser for a document, or None when no parser reads its format (images...).

    A parser whose sniffer recognises the head (up to its first 512 bytes) comes first, so that
    sniffing wins over a media type that is plainly wrong (text/plain that starts with <!DOCTYPE
    html>, application/octet-stream that is an RSS feed); then the parser of the media type; then,
    only when the media type is missing or says nothing of the format, the URL's suffix.
    """
    _load_plugins()
    kind = media_type(content_type)
    registrations = list(reversed(_registry.values()))
    head = head[:SNIFF_SIZE]
    chosen = next((found for found in registrations if _sniffs(found, head)), None)
    if chosen is None:
        chosen = next((found for found in registrations if kind in found.content_types), None)
    if chosen is None and kind in UNINFORMATIVE_TYPES:
        path = _path(url)
        chosen = next((found for found in registrations if path.endswith(found.suffixes)), None)
    return None if chosen is None else chosen.factory(url, charset_of(content_type))


def parse(url: str, content_type: str | None, body: bytes) -> ParseResult | None:
    """The result of the parser for a whole document, None when there is none."""
    parser = parser_for(url, content_type, body[:SNIFF_SIZE])
    if parser is None:
        return None
    parser.feed(body)
    return parser.close()


def _path(url: str) -> str:
    try:
        return urlsplit(url).path.lower()
    except ValueError:
        return ""


def _sniffs(registration: _Registration, head: bytes) -> bool:
    if registration.sniff is None:
        return False
    try:
        return registration.sniff(head)
    except Exception:  # a plug-in's sniffer must not stop the crawl
        log.exception("parser sniffer failed")
        return False


def _load_plugins() -> None:
    global _plugins_loaded
    with _plugins_lock:
        if not _plugins_loaded:
            _plugins_loaded = True
            _load_entry_points(entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_points(entries: Iterable[_EntryPoint]) -> None:
    """Runs each plug-in's registration; a broken one is logged and skipped."""
    for entry in entries:
        try:
            entry.load()()
        except Exception:
            log.exception("parser plug-in %r not loaded", entry.name)


def _javascript_parser(url: str, charset: str | None) -> Parser:
    """A script parser that reads the markup scripts write with the HTML parser."""
    return javascript.JavaScriptParser(url, charset, html.fragment_links)


register("text", text.TextParser, text.CONTENT_TYPES, None, text.SUFFIXES)
register("css", css.CssParser, css.CONTENT_TYPES, None, css.SUFFIXES)
register("javascript", _javascript_parser, javascript.CONTENT_TYPES, None, javascript.SUFFIXES)
register("html", html.HtmlParser, html.CONTENT_TYPES, html.sniff, html.SUFFIXES)
register("sitemap", sitemap.SitemapParser, (), sitemap.sniff)
register("feed", feeds.FeedParser, feeds.CONTENT_TYPES, feeds.sniff, feeds.SUFFIXES)
register(
    "m3u",
    playlists.M3uParser,
    playlists.M3U_CONTENT_TYPES,
    playlists.sniff_m3u,
    playlists.M3U_SUFFIXES,
)
register(
    "pls",
    playlists.PlsParser,
    playlists.PLS_CONTENT_TYPES,
    playlists.sniff_pls,
    playlists.PLS_SUFFIXES,
)
register("ram", playlists.RamParser, playlists.RAM_CONTENT_TYPES, None, playlists.RAM_SUFFIXES)
register(
    "asx",
    playlists.AsxParser,
    playlists.ASX_CONTENT_TYPES,
    playlists.sniff_asx,
    playlists.ASX_SUFFIXES,
)
register("swf", swf.SwfParser, swf.CONTENT_TYPES, swf.sniff, swf.SUFFIXES)
register(
    "imagemap", imagemap.ImageMapParser, imagemap.CONTENT_TYPES, imagemap.sniff, imagemap.SUFFIXES
)
register("pdf", pdf.PdfParser, pdf.CONTENT_TYPES, pdf.sniff, pdf.SUFFIXES)
register("docx", ooxml.DocxParser, ooxml.CONTENT_TYPES, ooxml.sniff, ooxml.SUFFIXES)
register("doc", msdoc.MsDocParser, msdoc.CONTENT_TYPES, msdoc.sniff, msdoc.SUFFIXES)
register("rtf", rtf.RtfParser, rtf.CONTENT_TYPES, rtf.sniff, rtf.SUFFIXES)
