"""What a search indexes of one capture: title, visible text, language, outlinks with their
anchor texts, and a near-duplicate signature, from its header block and payload.

HTML is parsed with lxml; plain text is taken as it is. Anything else (images, scripts, PDF for
now) and any payload over MAX_BYTES is left out, with the reason.
"""

import codecs
import gzip
import re
import zlib
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

import lxml.html
from lxml.etree import ParserError

from archive.header_block import HeaderBlock, charset_of, media_type

from .errors import NotIndexed
from .language import guess_language
from .simhash import simhash

MAX_BYTES = 5 * 1024 * 1024  # a larger payload (or one that inflates past it) is left out
MAX_TEXT = 1024 * 1024  # characters of visible text kept (for the snippets)
MAX_LINKS = 2000  # outlinks kept of one page
MAX_ANCHOR = 200  # characters kept of one anchor text
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
HIDDEN = ("script", "style", "noscript", "template", "head")
# Elements that end a word on the screen: their text must not run into the next one's.
BLOCKS = (
    "p", "div", "br", "li", "ul", "ol", "dd", "dt", "dl", "tr", "td", "th", "table", "h1", "h2",
    "h3", "h4", "h5", "h6", "section", "article", "header", "footer", "nav", "aside", "main",
    "blockquote", "pre", "hr", "form", "option", "figcaption", "address", "title",
)  # fmt: skip
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Link:
    """A link of a page: its target, resolved against the page's URL, and its anchor text."""

    url: str
    text: str


@dataclass(frozen=True, slots=True)
class Extracted:
    """What the index keeps of one HTML or text capture."""

    content_type: str
    title: str
    text: str
    lang: str
    links: tuple[Link, ...]
    simhash: int


def indexed_type(header: HeaderBlock) -> str:
    """The media type of a response the index reads; NotIndexed for any other, so that the
    payload of an image or a video is never fetched."""
    kind = media_type(header.get("Content-Type"))
    if kind in HTML_TYPES or kind in TEXT_TYPES:
        return kind
    if kind == "application/pdf":
        raise NotIndexed("PDF (not read yet)")
    raise NotIndexed("not HTML or text", kind or "no Content-Type")


def extract(url: str, header: HeaderBlock, payload: bytes) -> Extracted:
    """What the index keeps of a capture of `url`; NotIndexed when it keeps nothing."""
    kind = indexed_type(header)
    if len(payload) > MAX_BYTES:
        raise NotIndexed("larger than 5 MB", f"{len(payload):,} bytes")
    body = _decoded(header, payload)
    if b"\0" in body[:1024]:
        raise NotIndexed("binary", f"a {kind} payload with NUL bytes")
    charset = charset_of(header.get("Content-Type"))
    if kind in TEXT_TYPES:
        text = _fold(_text_of(body, charset, sniff_meta=False))[:MAX_TEXT]
        return Extracted(kind, "", text, guess_language(text), (), simhash(text))
    title, text, links = _html(url, _text_of(body, charset, sniff_meta=True))
    return Extracted(kind, title, text, guess_language(text), links, simhash(text))


def _decoded(header: HeaderBlock, payload: bytes) -> bytes:
    """The payload without its Content-Encoding, at most MAX_BYTES of it."""
    coding = (header.get("Content-Encoding") or "identity").strip().lower()
    try:
        if coding in ("gzip", "x-gzip"):
            inflated = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(payload, MAX_BYTES + 1)
        elif coding == "deflate":
            try:
                inflated = zlib.decompressobj().decompress(payload, MAX_BYTES + 1)
            except zlib.error:
                inflated = zlib.decompressobj(-zlib.MAX_WBITS).decompress(payload, MAX_BYTES + 1)
        elif coding == "br":
            import brotli

            inflated = brotli.decompress(payload)
        elif coding in ("identity", ""):
            return payload
        else:
            raise NotIndexed("unknown Content-Encoding", coding)
    except (zlib.error, gzip.BadGzipFile, EOFError, ImportError) as exc:
        raise NotIndexed("undecodable Content-Encoding", f"{coding}: {exc}") from None
    except Exception as exc:  # brotli.error derives from Exception only
        raise NotIndexed("undecodable Content-Encoding", f"{coding}: {exc}") from None
    if len(inflated) > MAX_BYTES:
        raise NotIndexed("larger than 5 MB", f"inflates past {MAX_BYTES:,} bytes")
    return bytes(inflated)


def _text_of(body: bytes, charset: str | None, sniff_meta: bool) -> str:
    """The body as text, in the charset its header names, else its byte order mark, else the one
    a <meta> of its first 4 KB names, else UTF-8, else Windows-1252 (what browsers take for
    Latin-1)."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    candidates = [charset]
    if sniff_meta and (meta := _META_CHARSET.search(body[:4096])):
        candidates.append(meta[1].decode("ascii", errors="replace"))
    for candidate in candidates:
        if candidate is None:
            continue
        try:
            name = codecs.lookup(candidate).name
        except LookupError:
            continue
        # As browsers do (WHATWG Encoding): a page that says Latin-1 is read as Windows-1252.
        name = "cp1252" if name in ("iso8859-1", "ascii") else name
        return body.decode(name, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def _fold(text: str) -> str:
    """Blank runs folded to one space."""
    return _SPACE.sub(" ", text).strip()


def _html(url: str, markup: str) -> tuple[str, str, tuple[Link, ...]]:
    """The title, visible text and outlinks of an HTML page."""
    markup = _XML_DECLARATION.sub("", markup, count=1)
    if not markup.strip():
        return "", "", ()
    try:
        document = lxml.html.document_fromstring(markup)
    except (ParserError, ValueError) as exc:
        raise NotIndexed("unparsable HTML", str(exc)) from None
    title = _fold(" ".join(document.xpath("//title//text()")))[: MAX_ANCHOR * 5]
    base = url
    for href in document.xpath("//base/@href")[:1]:
        base = urljoin(url, str(href).strip())
    links = _links(document, base)
    for hidden in list(document.iter(*HIDDEN)):
        hidden.drop_tree()
    for block in document.iter(*BLOCKS):
        block.tail = "\n" + (block.tail or "")
    text = _fold(document.text_content())[:MAX_TEXT]
    return title, text, links


def _links(document: lxml.html.HtmlElement, base: str) -> tuple[Link, ...]:
    """The http(s) targets of the page's <a> and <area> elements with their anchor texts (an
    image's alt text when the anchor has no text), without fragments, each pair once."""
    found: dict[tuple[str, str], None] = {}
    for element in document.iter("a", "area"):
        href = element.get("href")
        if not href:
            continue
        try:
            target = urldefrag(urljoin(base, href.strip()))[0]
        except ValueError:
            continue
        if not target.startswith(("http://", "https://")):
            continue
        text = _fold(element.text_content()) if element.tag == "a" else ""
        if not text:
            text = _fold(" ".join(str(alt) for alt in element.xpath(".//@alt|@alt")))
        found.setdefault((target, text[:MAX_ANCHOR]), None)
        if len(found) >= MAX_LINKS:
            break
    return tuple(Link(target, text) for target, text in found)
