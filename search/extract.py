"""What a search indexes of one capture: title, visible text, language, outlinks with their
anchor texts, and a near-duplicate signature, from its header block and payload; of a recorded
stream's chunk log, the titles it announced (stream_titles.py).

HTML is parsed with lxml's HTML parser into plain elements (lxml.html's element classes cost
a lookup for every element and give nothing read here); plain text is taken as it is; a PDF is read with pypdf (its first
MAX_PDF_PAGES pages). Anything else (images, scripts) and any payload over MAX_BYTES is left
out, with the reason; so is a PDF that cannot be read or has no text, which is also logged.
"""

import codecs
import io
import itertools
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, ParamSpec, TypeVar
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree

from archive.content_coding import CODINGS, BadCoding, TooLarge, inflate
from archive.header_block import HeaderBlock, charset_of, media_type
from archive.simhash import simhash
from archive.streams.log import LOG_TYPE
from archive.visible_text import title_of, visible_text

from .errors import NotIndexed
from .language import guess_language
from .stream_titles import StreamTitles, stream_titles

if TYPE_CHECKING:
    from pypdf import PageObject

MAX_BYTES = 5 * 1024 * 1024  # a larger payload (or one that inflates past it) is left out
TOO_LARGE = "larger than 5 MB"  # the reason such a payload is left out
EXTRACTION_FAILED = "set aside: extraction failed"  # the reason of a Failed capture
MAX_ERROR = 300  # characters kept of the error a capture Failed with
MAX_TEXT = 1024 * 1024  # characters of visible text kept (for the snippets)
MAX_LINKS = 2000  # outlinks kept of one page
MAX_ANCHOR = 200  # characters kept of one anchor text
MAX_TITLE = 1000  # characters kept of a title
MAX_PDF_PAGES = 200  # pages read of a PDF
# Drawing operations read of a PDF, in its pages and the forms they draw: pypdf reads some tens
# of thousands a second, and a small file can ask for millions. The page where the count runs
# out is left out, the pages before it kept (a first page that runs out: unreadable).
MAX_PDF_OPERATIONS = 300_000
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPE = "application/pdf"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SPACE = re.compile(r"\s+")

log = logging.getLogger(__name__)
P = ParamSpec("P")
V = TypeVar("V")
# pypdf warns of each flaw it works around, without naming the capture; a PDF it cannot read at
# all is logged here, with its URL.
logging.getLogger("pypdf").setLevel(logging.ERROR)


# A link of a page: its target, resolved against the page's URL, and its anchor text. A plain
# tuple: the links come back from the extracting processes pickled, and a page's dozens pickle
# and load in a quarter of the time named tuples take (each of those is rebuilt by a call).
Link = tuple[str, str]


# A named tuple, not a dataclass: it comes back from the extracting processes pickled.
class Extracted(NamedTuple):
    """What the index keeps of one HTML, text or PDF capture."""

    content_type: str
    title: str
    text: str
    lang: str
    links: tuple[Link, ...]
    simhash: int


def indexed_type(header: HeaderBlock) -> str:
    """The media type of a response the index reads (or of a stream's chunk log); NotIndexed for
    any other, so that the payload of an image or a video is never fetched."""
    kind = media_type(header.get("Content-Type"))
    if kind in HTML_TYPES or kind in TEXT_TYPES or kind in (PDF_TYPE, LOG_TYPE):
        return kind
    raise NotIndexed("not HTML or text", kind or "no Content-Type")


class Failed(NamedTuple):
    """A capture whose reading failed in a way no reason of NotIndexed foresees (a reader's
    error on hostile bytes): the index sets it aside with this error, and reads the others."""

    error: str  # the exception's type and message, at most MAX_ERROR characters


def extract(url: str, header: HeaderBlock, payload: bytes) -> Extracted:
    """What the index keeps of a capture of `url`; NotIndexed when it keeps nothing."""
    got = extract_many([(url, header, payload)])[0]
    if isinstance(got, Failed):
        raise NotIndexed(EXTRACTION_FAILED, got.error)
    if isinstance(got, NotIndexed):
        raise got
    if isinstance(got, StreamTitles):
        raise NotIndexed("a stream log", "its titles are documents of their own: extract_many")
    return got


def extract_many(
    items: Sequence[tuple[str, HeaderBlock, bytes]],
) -> list[Extracted | StreamTitles | NotIndexed | Failed]:
    """What the index keeps of each capture (URL, header block, payload), or why it keeps
    nothing, read one step at a time over them all: the markup of each, then the language of
    each, then the signature of each. Taken page by page, each step finds the caches full of
    the others' code and tables, and a page costs a third more. A page that fails a step is
    Failed, and the others are read. A stream's chunk log gives its titles, which have no
    language or signature."""
    reads = [_attempt(_read, url, header, payload) for url, header, payload in items]
    languages = [_attempt(guess_language, r.text) if isinstance(r, _Read) else r for r in reads]
    signatures = [_attempt(simhash, r.text) if isinstance(r, _Read) else r for r in reads]
    return [
        _extracted(read, language, signature)
        for read, language, signature in zip(reads, languages, signatures, strict=True)
    ]


def _attempt(step: Callable[P, V], *args: P.args, **kwargs: P.kwargs) -> V | NotIndexed | Failed:
    """`step`'s result, or why it gave none: its NotIndexed, or Failed for any other error."""
    try:
        return step(*args, **kwargs)
    except NotIndexed as exc:
        return exc.with_traceback(None)  # its frames hold the page's payload
    except Exception as exc:
        return Failed(f"{type(exc).__name__}: {exc}"[:MAX_ERROR])


def _extracted(
    read: "_Read | StreamTitles | NotIndexed | Failed",
    language: str | StreamTitles | NotIndexed | Failed,
    signature: int | StreamTitles | NotIndexed | Failed,
) -> Extracted | StreamTitles | NotIndexed | Failed:
    """What the steps of a page gave put together, or the first reason one gave nothing."""
    if not isinstance(read, _Read):
        return read
    if not isinstance(language, str):
        return language
    if not isinstance(signature, int):
        return signature
    return Extracted(read.content_type, read.title, read.text, language, read.links, signature)


class _Read(NamedTuple):
    """What a capture's markup, text or PDF gave, before its language and signature."""

    content_type: str
    title: str
    text: str
    links: tuple[Link, ...]


def _read(url: str, header: HeaderBlock, payload: bytes) -> _Read | StreamTitles:
    kind = indexed_type(header)
    if len(payload) > MAX_BYTES:
        raise NotIndexed(TOO_LARGE, f"{len(payload):,} bytes")
    body = _decoded(header, payload)
    if kind == LOG_TYPE:
        return stream_titles(url, body)
    if kind == PDF_TYPE:
        return _pdf(url, body)
    if b"\0" in body[:1024]:
        raise NotIndexed("binary", f"a {kind} payload with NUL bytes")
    charset = charset_of(header.get("Content-Type"))
    if kind in TEXT_TYPES:
        return _Read(kind, "", _fold(_text_of(body, charset, sniff_meta=False))[:MAX_TEXT], ())
    return _Read(kind, *_html(url, _text_of(body, charset, sniff_meta=True)))


def _decoded(header: HeaderBlock, payload: bytes) -> bytes:
    """The payload without its Content-Encoding, at most MAX_BYTES of it."""
    coding = (header.get("Content-Encoding") or "identity").strip().lower()
    if coding not in (*CODINGS, "identity", ""):
        raise NotIndexed("unknown Content-Encoding", coding[:40])
    try:  # a page cut short is indexed as far as it goes
        return inflate(coding, payload, MAX_BYTES, whole=False)
    except TooLarge as exc:
        raise NotIndexed(TOO_LARGE, str(exc)) from None
    except BadCoding as exc:
        raise NotIndexed("undecodable Content-Encoding", str(exc)) from None


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
            # As browsers do (WHATWG Encoding): a page that says Latin-1 is read as Windows-1252.
            name = "cp1252" if name in ("iso8859-1", "ascii") else name
            return body.decode(name, errors="replace")
        except (LookupError, ValueError):
            # No charset: unknown, a codec of bytes (base64, rot13), or one that fails whatever
            # the bytes (undefined, idna).
            continue
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
        document = etree.HTML(markup)
    except (etree.ParserError, ValueError) as exc:
        raise NotIndexed("unparsable HTML", str(exc)) from None
    if document is None:
        return "", "", ()
    base = url
    for href in document.xpath("//base/@href")[:1]:
        base = urljoin(url, str(href).strip())
    text = visible_text(document)[:MAX_TEXT]
    return title_of(document)[:MAX_TITLE], text, _links(document, base)


def _links(document: etree._Element, base: str) -> tuple[Link, ...]:
    """The http(s) targets of the page's <a> and <area> elements with their anchor texts (an
    image's alt text when the anchor has no text), without fragments, each pair once."""
    found: dict[tuple[str, str], None] = {}
    parts = urlsplit(base)
    origin = f"{parts.scheme}://{parts.netloc}"
    for element in document.iter("a", "area"):
        href = element.get("href")
        if not href:
            continue
        try:
            target = _resolve(base, origin, href.strip())
        except ValueError:
            continue
        if not target.startswith(("http://", "https://")):
            continue
        text = _fold("".join(element.itertext())) if element.tag == "a" else ""
        if not text:
            text = _fold(" ".join(str(alt) for alt in element.xpath(".//@alt|@alt")))
        found.setdefault((target, text[:MAX_ANCHOR]), None)
        if len(found) >= MAX_LINKS:
            break
    return tuple(found)


def _resolve(base: str, origin: str, href: str) -> str:
    """A link's target without its fragment: the common hrefs (a whole URL, a path from the
    root) put together directly, the others by urljoin, which costs most of a link's reading."""
    if "/." not in href and "\\" not in href:
        if href.startswith(("http://", "https://")):
            return href.partition("#")[0]
        if href.startswith("/") and not href.startswith("//"):
            return origin + href.partition("#")[0]
    return urldefrag(urljoin(base, href))[0]


def _pdf(url: str, body: bytes) -> _Read:
    """The title (the document's, else its first line), text and link targets of a PDF; a PDF
    that pypdf cannot read, or without text, is logged and left out."""
    try:
        title, text, links = _read_pdf(url, body)
    except Exception as exc:  # pypdf raises anything on a damaged file: TypeError, AttributeError…
        log.warning("%s: unreadable PDF: %s: %s", url, type(exc).__name__, exc)
        raise NotIndexed("unreadable PDF", f"{type(exc).__name__}: {exc}") from None
    if not text:
        log.warning("%s: PDF without text", url)
        raise NotIndexed("PDF without text")
    return _Read(PDF_TYPE, title, text, links)


class _TooLong(Exception):
    """A PDF that asks for more than MAX_PDF_OPERATIONS drawing operations."""


def _read_pdf(url: str, body: bytes) -> tuple[str, str, tuple[Link, ...]]:
    """What _pdf keeps, read from the first MAX_PDF_PAGES pages until MAX_TEXT characters."""
    import pypdf  # here: only a PDF needs it, and it is slow to load

    reader = pypdf.PdfReader(io.BytesIO(body))
    if reader.is_encrypted and not reader.decrypt(""):
        raise ValueError("encrypted with a password")
    texts: list[str] = []
    length = 0
    targets: dict[str, None] = {}
    operations = 0

    def count(*_: object) -> None:
        nonlocal operations
        operations += 1
        if operations > MAX_PDF_OPERATIONS:
            raise _TooLong(f"more than {MAX_PDF_OPERATIONS:,} drawing operations")

    for page in itertools.islice(reader.pages, MAX_PDF_PAGES):
        if length >= MAX_TEXT:
            break
        try:
            texts.append(page.extract_text(visitor_operand_before=count))
        except _TooLong:
            if not texts:
                raise  # not one page read: unreadable
            break
        length += len(texts[-1])
        for target in _uris(url, page):
            if len(targets) < MAX_LINKS:
                targets.setdefault(target, None)
    text = _fold(" ".join(texts))[:MAX_TEXT]
    info = reader.metadata
    title = _fold((info.title if info is not None else None) or "")
    if not title:
        title = next((_fold(line) for line in "\n".join(texts).splitlines() if line.strip()), "")
    return title[:MAX_TITLE], text, tuple((target, "") for target in targets)


def _uris(url: str, page: "PageObject") -> list[str]:
    """The http(s) targets of a page's link annotations (URI actions), without fragments."""
    found = []
    for listed in page.annotations or ():
        annotation = listed.get_object()
        action = annotation["/A"] if isinstance(annotation, dict) and "/A" in annotation else None
        uri = action["/URI"] if isinstance(action, dict) and "/URI" in action else None
        if isinstance(uri, bytes):
            uri = uri.decode("latin-1")
        if not isinstance(uri, str):
            continue
        try:
            target = urldefrag(urljoin(url, uri.strip()))[0]
        except ValueError:
            continue
        if target.startswith(("http://", "https://")):
            found.append(target)
    return found
