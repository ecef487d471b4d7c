"""Server-side image maps: the map files that NCSA httpd, Apache (rect URL x,y x,y) and CERN
httpd (rectangle (x,y) (x,y) URL) read to send a click on an ismap image to a page. Every
target is a page.

As those servers do, a relative URL is taken from the server's root unless a `base` line says
otherwise ("base map" for the map's own URL). Apache's special values (map, menu, referer,
nocontent, error) name no new page.
"""

import re

from ..links import LinkKind
from .common import SNIFF_SIZE, Lines, LinkSink, ParseResult, decoder, shorten

CONTENT_TYPES = ("application/x-httpd-imap", "text/x-imagemap")
SUFFIXES = (".map",)
MAX_SIZE = 256 * 1024  # bytes read; a map of a thousand shapes takes a few dozen KiB

_DIRECTIVES = {
    "rect": "rect",
    "rectangle": "rect",
    "circle": "circle",
    "circ": "circle",
    "poly": "poly",
    "polygon": "poly",
    "point": "point",
    "default": "default",
    "def": "default",
    "base": "base",
    "base_uri": "base",
}
_NOT_SHAPES = frozenset({"default", "base"})
_SPECIAL_VALUES = frozenset({"map", "menu", "referer", "nocontent", "error"})
# NCSA and Apache: directive, value, then coordinates, with menu text in quotes before or
# after them.
_NCSA = re.compile(
    r'([A-Za-z_]++)\s++([^\s"(]\S*+)(?:\s++"([^"]*+)")?([\d\s.,+\-]*+)(?:"([^"]*+)")?\s*+'
)
# CERN: directive, points in brackets (and a circle's radius), then the URL.
_CERN = re.compile(
    r"([A-Za-z_]++)\s*+"
    r"((?:\(\s*+[\d.+\-]++\s*+,\s*+[\d.+\-]++\s*+\)\s*+)++(?:[\d.]++\s++)?)(\S++)\s*+"
)
_DIGIT = re.compile(r"\d")


def map_line(line: str) -> tuple[str, str, str] | None:
    """The directive, value and menu text of a line of a map file (stripped, not a comment);
    None when it is not one."""
    match = _NCSA.fullmatch(line) or _CERN.fullmatch(line)
    if match is None:
        return None
    directive = _DIRECTIVES.get(match.group(1).lower())
    if directive is None:
        return None
    if match.re is _CERN:
        return (directive, match.group(3), "") if directive not in _NOT_SHAPES else None
    coordinates = match.group(4)
    if directive not in _NOT_SHAPES and not _DIGIT.search(coordinates):
        return None
    return directive, match.group(2), match.group(3) or match.group(5) or ""


def sniff(head: bytes) -> bool:
    """Whether the first lines that are neither blank nor comments are all map lines."""
    head = head[:SNIFF_SIZE]
    lines = head.removeprefix(b"\xef\xbb\xbf").decode("latin-1").split("\n")
    if len(head) == SNIFF_SIZE:
        lines.pop()  # it may be cut
    meaningful = [line.strip() for line in lines if line.strip()[:1] not in ("", "#")]
    return bool(meaningful) and all(map_line(line) is not None for line in meaningful)


class ImageMapParser:
    """A map file read line by line, up to MAX_SIZE bytes."""

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._sink.base = self._sink.resolve("/") or url
        self._decoder = decoder(charset, self._sink)
        self._lines = Lines()
        self._size = 0
        self._number = 0
        self._is_map: bool | None = None  # known from the first meaningful line

    def feed(self, chunk: bytes) -> None:
        room = MAX_SIZE - self._size
        self._size += len(chunk)
        for line in self._lines.add(self._decoder.decode(chunk[: max(room, 0)])):
            self._line(line)

    def close(self) -> ParseResult:
        for line in self._lines.add(self._decoder.decode(b"", final=True)):
            self._line(line)
        if self._size > MAX_SIZE:  # its last line is cut: not read
            self._sink.problem(f"imagemap: document cut at {MAX_SIZE} bytes")
        else:
            for line in self._lines.rest():
                self._line(line)
        return self._sink.result()

    def _line(self, line: str) -> None:
        self._number += 1
        line = line.strip()
        if self._is_map is False or not line or line.startswith("#"):
            return
        entry = map_line(line)
        if entry is None:
            if self._is_map is None:
                self._sink.problem(f"imagemap: not an image map: {shorten(line)}")
                self._is_map = False
            else:
                self._sink.problem(f"imagemap: line {self._number} not read: {shorten(line)}")
            return
        self._is_map = True
        directive, value, text = entry
        if directive == "base":
            self._base(value)
        elif value.lower() not in _SPECIAL_VALUES:
            self._sink.add(value, LinkKind.PAGE, False, text)

    def _base(self, value: str) -> None:
        if value.lower() == "map":
            self._sink.base = self._sink.url
        elif value.lower() not in _SPECIAL_VALUES:
            self._sink.base = self._sink.resolve(value) or self._sink.base
