"""CSS: the url() and @import references of a stylesheet, a <style> element or a style
attribute, all components the page needs."""

import re

from ..links import LinkKind
from .common import ByteBuffer, LinkSink, ParseResult, code_point, decoder, shorten

CONTENT_TYPES = ("text/css",)
SUFFIXES = (".css",)

_STRING = r""""(?:[^"\\\n]++|\\.)*+"|'(?:[^'\\\n]++|\\.)*+'"""
# Comments, @import "x", url(x) and the other strings, each read once: a string or a comment may
# be left open, and no input makes the expression scan the same text again and again.
_TOKEN = re.compile(
    rf"""/\*(?:[^*]++|\*(?!/))*+(?:\*/)?|@import\s*+({_STRING})"""
    rf"""|url\(\s*+({_STRING}|(?:[^()"'\s\\]++|\\.)*+)\s*+\)"""
    r"""|"(?:[^"\\\n]++|\\.)*+"?|'(?:[^'\\\n]++|\\.)*+'?""",
    re.I | re.S,
)
_ESCAPE = re.compile(r"\\(?:([0-9A-Fa-f]{1,6})\s?|(.))", re.S)
_CHARSET_RULE = re.compile(rb'@charset "([^"]{1,40})";')


def css_links(css: str, sink: LinkSink) -> None:
    """Reports the references of a piece of CSS as requisite components."""
    for token in _TOKEN.finditer(css):
        reference = token.group(1) or token.group(2)
        if reference is not None:
            if reference[:1] in ("'", '"'):
                reference = reference[1:-1]
            sink.add(_ESCAPE.sub(_unescape, reference), LinkKind.COMPONENT, True)
        elif token.group().startswith("/*") and (
            len(token.group()) < 4 or not token.group().endswith("*/")
        ):
            sink.problem(f"CSS comment not closed near {shorten(token.group())}")


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code is None:
        return match.group(2)
    return code_point(int(code, 16))


class CssParser:
    """A stylesheet, read whole once it has arrived (up to 2 MB)."""

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._charset = charset
        self._buffer = ByteBuffer()

    def feed(self, chunk: bytes) -> None:
        self._buffer.add(chunk)

    def close(self) -> ParseResult:
        data = self._buffer.data()
        charset = self._charset
        rule = _CHARSET_RULE.match(data)
        if charset is None and rule is not None:
            charset = rule.group(1).decode("ascii", "replace")
        css_links(decoder(charset, self._sink).decode(data, final=True), self._sink)
        if self._buffer.cut:
            self._sink.problem("document cut at 2 MB")
        return self._sink.result()
