"""JavaScript: the string literals that look like URLs, and the markup a script writes.

Scripts build URLs in ways no parser can follow; reporting the literals that plainly are URLs, or
that hold HTML (document.write), finds most of what a browser would load. Literals joined by "+"
alone are read as one.
"""

import re
from collections.abc import Callable

from ..links import LinkKind
from .common import ByteBuffer, LinkSink, ParseResult, code_point, decoder

CONTENT_TYPES = (
    "application/javascript",
    "text/javascript",
    "application/x-javascript",
    "text/x-javascript",
    "application/ecmascript",
    "text/ecmascript",
    "text/jscript",
)
SUFFIXES = (".js", ".mjs")

# Reports the links of a piece of HTML (the HTML parser's fragment_links).
MarkupReader = Callable[[str, LinkSink], None]

RESOURCE_EXTENSIONS = frozenset(
    {
        "js",
        "css",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "ico",
        "woff",
        "woff2",
        "ttf",
        "mp4",
        "mp3",
        "json",
    }
)
PAGE_EXTENSIONS = frozenset({"html", "htm", "php", "asp", "aspx", "jsp"})
MAX_FRAGMENTS = 1000  # pieces of markup read in one script; each takes an HTML parser

# Comments, then the three kinds of string literal; a literal may not span lines, except a
# template. Comments are matched so that the quotes in them are not taken for literals. A literal
# left open matches too (to be ignored), so that no input makes the expression scan again and again.
_TOKEN = re.compile(
    r"""//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/)?"""
    r"""|'((?:[^'\\\n]++|\\.)*+)'?|"((?:[^"\\\n]++|\\.)*+)"?|`((?:[^`\\]++|\\.)*+)`?""",
    re.S,
)
_JOIN = re.compile(r"\s*\+\s*")
_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]{1,6}\}|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|\r\n|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_MARKUP = re.compile(r"<[A-Za-z]")
_ABSOLUTE = re.compile(r"https?://[^\s/?#]+", re.I)
_NETWORK_PATH = re.compile(r"//[A-Za-z0-9\-]+\.[A-Za-z0-9.\-]+(?:[:/?#]|$)")
_URL_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


def script_links(source: str, sink: LinkSink, markup: MarkupReader) -> None:
    """Reports the links of a script: its URL literals and the links of the HTML it holds."""
    fragments = 0
    for literal in _literals(source):
        if _MARKUP.search(literal):
            fragments += 1
            if fragments <= MAX_FRAGMENTS:
                markup(literal, sink)
            continue
        kind = url_kind(literal.strip())
        if kind is not None:
            sink.add(literal.strip(), kind, kind is LinkKind.COMPONENT)
    if fragments > MAX_FRAGMENTS:
        sink.problem(f"{fragments - MAX_FRAGMENTS} pieces of markup in a script not read")


def url_kind(literal: str) -> LinkKind | None:
    """The kind of link a literal names when it looks like a URL, else None."""
    if not literal or _URL_CHARACTERS.fullmatch(literal) is None:
        return None
    if literal.startswith("//") and not _NETWORK_PATH.match(literal):
        return None
    path = literal.partition("#")[0].partition("?")[0]
    name = path.rpartition("/")[2]
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    if extension in RESOURCE_EXTENSIONS:
        return LinkKind.COMPONENT
    if _ABSOLUTE.match(literal) or extension in PAGE_EXTENSIONS:
        return LinkKind.PAGE
    if literal.startswith("/") and len(literal) > 1:
        return LinkKind.PAGE
    return None


def _literals(source: str) -> list[str]:
    """The string literals of a script, those joined by "+" alone made one."""
    literals: list[list[str]] = []
    joined_until = -1  # where the last literal ended, when the next may be joined to it
    for match in _TOKEN.finditer(source):
        body = match.group(match.lastindex) if match.lastindex else None
        closed = body is not None and len(match.group()) == len(body) + 2
        if body is None or not closed or match.lastindex == 3 and "${" in body:
            joined_until = -1  # a comment, a literal left open, a template with substitutions
            continue
        value = _ESCAPE.sub(_unescape, body)
        if joined_until >= 0 and _JOIN.fullmatch(source, joined_until, match.start()):
            literals[-1].append(value)
        else:
            literals.append([value])
        joined_until = match.end()
    return ["".join(pieces) for pieces in literals]


def _unescape(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape[0] in "ux" and len(escape) > 1:
        return code_point(int(escape.strip("ux{}"), 16))
    if escape in ("\n", "\r\n", "\r"):  # a line continuation
        return ""
    return _SIMPLE_ESCAPES.get(escape, escape)


class JavaScriptParser:
    """A script file, read whole once it has arrived (up to 2 MB)."""

    def __init__(self, url: str, charset: str | None, markup: MarkupReader) -> None:
        self._sink = LinkSink(url)
        self._charset = charset
        self._markup = markup
        self._buffer = ByteBuffer()

    def feed(self, chunk: bytes) -> None:
        self._buffer.add(chunk)

    def close(self) -> ParseResult:
        source = decoder(self._charset, self._sink).decode(self._buffer.data(), final=True)
        script_links(source, self._sink, self._markup)
        if self._buffer.cut:
            self._sink.problem("document cut at 2 MB")
        return self._sink.result()
