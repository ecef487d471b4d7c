"""What every parser shares: the result, the link sink that resolves and filters URLs, bounded
buffers, decoding and the sniffing of XML roots."""

import codecs
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.entities import name2codepoint
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from ..links import Link, LinkKind

MAX_BUFFER = 2 * 1024 * 1024  # bytes a non-incremental parser keeps
MAX_TEXT = 2 * 1024 * 1024  # characters of extracted text kept
MAX_LINE = 64 * 1024  # characters; a longer line is cut into lines of this length
MAX_PROBLEMS = 20
MAX_LINKS = 200_000  # per document, to bound memory
MAX_LINK_TEXT = 500  # characters
BLOCK = 64 * 1024  # bytes handed to lxml at a time, whatever the caller's chunking
SNIFF_SIZE = 512

KEPT_SCHEMES = frozenset({"http", "https"})
STREAM_SCHEMES = frozenset(
    {
        "rtsp",
        "rtsps",
        "rtspu",
        "mms",
        "mmsh",
        "mmst",
        "mmsu",
        "rtmp",
        "rtmpe",
        "rtmps",
        "rtmpt",
        "pnm",
    }
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels that browsers read as windows-1252, a superset.
_WINDOWS_1252 = frozenset({"latin-1", "iso8859-1", "ascii"})
# An XML or HTML comment. This and the expressions below that use it are written so that no
# input can make them backtrack without end (no two ways to match the same text).
COMMENT = r"<!--(?:[^-]|-(?!->))*+-->"
# The prolog an XML document may start with: declaration, processing instructions, comments and
# a doctype; then the root element's name.
_XML_ROOT = re.compile(
    rb"\s*+(?:(?:<\?(?:[^?]|\?(?!>))*+\?>|"
    + COMMENT.encode()
    + rb"|<!doctype[^>\[]*+(?:\[[^\]]*+\])?\s*>)\s*+)*+<([A-Za-z_][\w.:\-]*)",
    re.I,
)


@dataclass
class ParseResult:
    links: list[Link]  # in document order, duplicates allowed
    text: str = ""  # visible text; '' when not applicable
    problems: list[str] = field(default_factory=list)  # non-fatal
    base: str = ""  # the base URL finally used (after <base href>)


class Parser(Protocol):
    def feed(self, chunk: bytes) -> None: ...

    def close(self) -> ParseResult: ...


class LinkSink:
    """Collects a document's links in order: resolved, fragment removed, unwanted schemes left out."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.base = url
        self.links: list[Link] = []
        self._problems: list[str] = []
        self._unlisted = 0
        self._over = False  # links were left out past MAX_LINKS

    def problem(self, text: str) -> None:
        """Notes a problem; past MAX_PROBLEMS they are only counted."""
        if len(self._problems) < MAX_PROBLEMS:
            self._problems.append(text)
        else:
            self._unlisted += 1

    def resolve(self, ref: str, base: str | None = None) -> str | None:
        """The absolute URL a reference names, or None when it is not to be reported."""
        ref = _TAB_OR_NEWLINE.sub("", ref.strip(_C0_OR_SPACE))
        if not ref or ref.startswith("#"):
            return None
        scheme = _SCHEME.match(ref)
        if scheme and scheme.group(1).lower() not in KEPT_SCHEMES | STREAM_SCHEMES:
            return None
        try:
            url = urljoin(self.base if base is None else base, ref)
            parts = urlsplit(url)
            host, _ = parts.hostname, parts.port  # reading the port checks it
        except ValueError:  # a bad IPv6 address or port
            host = None
        if not host:
            self.problem(f"invalid URL {shorten(ref)}")
            return None
        if parts.scheme.lower() not in KEPT_SCHEMES | STREAM_SCHEMES:
            return None
        return url.partition("#")[0].replace(" ", "%20")

    def add(self, ref: str, kind: LinkKind, requisite: bool, text: str = "") -> int | None:
        """Adds a link; returns its index, or None when it was left out."""
        if len(self.links) >= MAX_LINKS:
            self._over = True
            return None
        url = self.resolve(ref)
        if url is None:
            return None
        if url.partition(":")[0].lower() in STREAM_SCHEMES:
            kind, requisite = LinkKind.STREAM, False
        self.links.append(Link(url, kind, requisite, collapse(text)[:MAX_LINK_TEXT]))
        return len(self.links) - 1

    def retext(self, index: int, text: str) -> None:
        """Sets the text of a link added before its text was known."""
        text = collapse(text)[:MAX_LINK_TEXT]
        self.links[index] = dataclasses.replace(self.links[index], text=text)

    def reurl(self, index: int, url: str) -> None:
        """Sets the URL of a link added before it was complete (a form's query)."""
        self.links[index] = dataclasses.replace(self.links[index], url=url)

    def result(self, text: str = "") -> ParseResult:
        problems = list(self._problems)
        if self._over:
            problems.insert(0, f"more than {MAX_LINKS} links: the rest left out")
        if self._unlisted:
            problems.append(f"{self._unlisted} more problems not listed")
        return ParseResult(self.links, text, problems, self.base)


class TextBuffer:
    """Extracted text, kept up to a limit."""

    def __init__(self, limit: int = MAX_TEXT) -> None:
        self._pieces: list[str] = []
        self._size = 0
        self._limit = limit
        self.cut = False

    def add(self, text: str) -> None:
        room = self._limit - self._size
        if len(text) > room:
            self.cut = True
            text = text[:room]
        if text:
            self._pieces.append(text)
            self._size += len(text)

    def text(self) -> str:
        return "".join(self._pieces)


class ByteBuffer:
    """A whole document for the parsers that need one, kept up to MAX_BUFFER bytes."""

    def __init__(self, limit: int = MAX_BUFFER) -> None:
        self._data = bytearray()
        self._limit = limit
        self.cut = False

    def add(self, chunk: bytes) -> None:
        room = self._limit - len(self._data)
        if len(chunk) > room:
            self.cut = True
            chunk = chunk[:room]
        self._data += chunk

    def data(self) -> bytes:
        return bytes(self._data)


class Blocks:
    """Regroups a byte stream into BLOCK-sized pieces, so that what lxml sees does not depend on
    how the document arrived."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def add(self, chunk: bytes) -> Iterator[bytes]:
        self._pending += chunk
        while len(self._pending) >= BLOCK:
            block = bytes(self._pending[:BLOCK])
            del self._pending[:BLOCK]
            yield block

    def rest(self) -> bytes:
        rest = bytes(self._pending)
        self._pending.clear()
        return rest


class Lines:
    """Splits decoded text into lines as it arrives (a carriage return before the newline is
    kept); lines longer than MAX_LINE are cut, at the same places whatever the chunking."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._size = 0

    def add(self, text: str) -> Iterator[str]:
        *complete, last = text.split("\n")
        if complete:
            complete[0] = "".join(self._pieces) + complete[0]
            self._pieces.clear()
            self._size = 0
            for line in complete:
                yield from _cut(line)
        self._pieces.append(last)
        self._size += len(last)
        if self._size > MAX_LINE:
            line = "".join(self._pieces)
            cut = (len(line) - 1) // MAX_LINE * MAX_LINE
            yield from _cut(line[:cut])
            self._pieces = [line[cut:]]
            self._size = len(line) - cut

    def rest(self) -> Iterator[str]:
        line = "".join(self._pieces)
        self._pieces.clear()
        self._size = 0
        if line:
            yield from _cut(line)


def _cut(line: str) -> Iterator[str]:
    while len(line) > MAX_LINE:
        yield line[:MAX_LINE]
        line = line[MAX_LINE:]
    yield line


def collapse(text: str) -> str:
    """Text with runs of whitespace made one space, as a browser shows it."""
    return " ".join(text.split())


def code_point(number: int) -> str:
    """The character an escape names; U+FFFD for NUL, a surrogate or a number past Unicode."""
    valid = 0 < number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF
    return chr(number) if valid else "\ufffd"


def shorten(text: str, size: int = 60) -> str:
    """A bounded repr for problem messages."""
    return repr(text) if len(text) <= size else repr(text[:size]) + "..."


def codec_name(label: str | None) -> str | None:
    """The Python codec for a charset label, as a browser would read it; None when unknown."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
        b"".decode(name)  # refuses codecs that are not text encodings (base64, rot13...)
    except (LookupError, ValueError):
        return None
    return "cp1252" if name in _WINDOWS_1252 else name


def bom_codec(head: bytes) -> str | None:
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return None


class Decoder:
    """An incremental decoder that never fails: undecodable bytes become U+FFFD, and a BOM, when
    there is one, is removed and wins over the charset."""

    def __init__(self, charset: str) -> None:
        self._charset = charset
        self._head = b""
        self._decoder: codecs.IncrementalDecoder | None = None

    def decode(self, data: bytes, final: bool = False) -> str:
        if self._decoder is None:
            self._head += data
            if len(self._head) < len(codecs.BOM_UTF8) and not final:
                return ""
            data, self._head = self._head, b""
            name = bom_codec(data)
            if name is None:
                name = self._charset
            else:
                data = data[len(codecs.BOM_UTF8) if name == "utf-8" else len(codecs.BOM_UTF16) :]
            self._decoder = codecs.getincrementaldecoder(name)("replace")
        return self._decoder.decode(data, final)


def decoder(charset: str | None, sink: LinkSink) -> Decoder:
    """A decoder for the charset given, utf-8 when none or unknown (noted in the sink)."""
    name = codec_name(charset)
    if charset and name is None:
        sink.problem(f"unknown charset {shorten(charset)}, read as utf-8")
    return Decoder(name or "utf-8")


def xml_root(head: bytes) -> str:
    """The lowercased name of an XML document's root element, '' when the head shows none."""
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    match = _XML_ROOT.match(head[:SNIFF_SIZE])
    return match.group(1).decode("ascii").lower() if match else ""


def local_name(tag: str) -> str:
    """An XML element name without its namespace ("{ns}loc", "image:loc" -> "loc")."""
    return tag.rpartition("}")[2].rpartition(":")[2]


class EntityFixer:
    """Rewrites the entity references of an XML byte stream that libxml2 would choke on.

    In recovery mode, once libxml2 has met an undefined entity (an HTML one such as &nbsp;, common
    in feeds) or a bare "&" (common in sitemap URLs), it drops every later &amp; and &lt;, which
    garbles the URLs that follow. HTML entities become character references, other entities are
    dropped unexpanded (as libxml2 would), and a "&" that starts no reference becomes &amp;. CDATA
    sections are left alone.
    """

    def __init__(self) -> None:
        self._held = b""
        self._in_cdata = False

    def fix(self, data: bytes, final: bool = False) -> bytes:
        data, self._held = self._held + data, b""
        out: list[bytes] = []
        position = 0
        while position < len(data):
            if self._in_cdata:
                end = data.find(b"]]>", position)
                if end < 0:
                    keep = len(data) if final else max(position, len(data) - 2)
                    out.append(data[position:keep])
                    self._held = data[keep:]
                    break
                out.append(data[position : end + 3])
                position = end + 3
                self._in_cdata = False
                continue
            start = data.find(_CDATA, position)
            if start < 0:
                keep = len(data) if final else _safe_end(data, position)
                out.append(_ENTITY.sub(_fix_entity, data[position:keep]))
                self._held = data[keep:]
                break
            out.append(_ENTITY.sub(_fix_entity, data[position:start]))
            position = start
            self._in_cdata = True
        return b"".join(out)


# A "&" and the valid reference that may follow it.
_ENTITY = re.compile(rb"&(#[0-9]{1,8};|#[xX][0-9A-Fa-f]{1,8};|[A-Za-z][A-Za-z0-9]{0,31};)?")
_XML_ENTITIES = frozenset({b"amp;", b"lt;", b"gt;", b"quot;", b"apos;"})
_LONGEST_REFERENCE = 40
_CDATA = b"<![CDATA["


def _fix_entity(match: re.Match[bytes]) -> bytes:
    reference = match.group(1)
    if reference is None:
        return b"&amp;"
    if reference.startswith(b"#") or reference in _XML_ENTITIES:
        return match.group()
    code = name2codepoint.get(reference[:-1].decode("ascii"))
    return b"&#%d;" % code if code is not None else b""


def _safe_end(data: bytes, position: int) -> int:
    """Where the bytes that can be fixed now end: a reference or a CDATA start that the next
    bytes may complete is held back."""
    end = len(data)
    ampersand = data.rfind(b"&", position)
    if ampersand >= 0 and end - ampersand < _LONGEST_REFERENCE and b";" not in data[ampersand:]:
        end = ampersand
    bracket = data.rfind(b"<", position)
    if bracket >= 0 and len(data) - bracket < len(_CDATA) and _CDATA.startswith(data[bracket:]):
        end = min(end, bracket)
    return end
