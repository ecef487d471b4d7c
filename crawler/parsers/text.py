"""Plain text: the http(s) URLs written in it, each with the words before it as link text."""

import re

from ..links import LinkKind
from .common import Lines, LinkSink, ParseResult, TextBuffer, decoder

CONTENT_TYPES = ("text/plain",)
SUFFIXES = (".txt",)
LOOK_BEHIND = 60  # characters before a URL, on its line, taken as its text

_URL = re.compile(r"https?://[^\s<>\"'`]+", re.I)
_TRAILING = ".,;:!?*"
_CLOSING = {")": "(", "]": "[", "}": "{"}


def text_urls(line: str) -> list[tuple[str, str]]:
    """The URLs of a line of text, each with the text before it."""
    found = []
    for match in _URL.finditer(line):
        start = match.start() - LOOK_BEHIND
        before = line[max(start, 0) : match.start()]
        if start > 0 and not line[start - 1].isspace():  # the window starts inside a word
            before = before.partition(" ")[2]
        found.append((_trim(match.group()), before))
    return found


def _trim(url: str) -> str:
    """A URL without the punctuation that ends the sentence around it; a closing bracket stays
    when it closes one opened in the URL (https://en.wikipedia.org/wiki/Foo_(bar))."""
    unclosed = {
        closing: url.count(opening) - url.count(closing) for closing, opening in _CLOSING.items()
    }
    end = len(url)
    while end:
        last = url[end - 1]
        if last in _CLOSING and unclosed[last] < 0:
            unclosed[last] += 1
        elif last not in _TRAILING:
            break
        end -= 1
    return url[:end]


class TextParser:
    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._decoder = decoder(charset, self._sink)
        self._lines = Lines()
        self._text = TextBuffer()

    def feed(self, chunk: bytes) -> None:
        for line in self._lines.add(self._decoder.decode(chunk)):
            self._line(line)

    def close(self) -> ParseResult:
        for line in self._lines.add(self._decoder.decode(b"", final=True)):
            self._line(line)
        for line in self._lines.rest():
            self._line(line, last=True)
        if self._text.cut:
            self._sink.problem("text cut at 2 MB")
        return self._sink.result(self._text.text())

    def _line(self, line: str, last: bool = False) -> None:
        line = line.rstrip("\r")
        self._text.add(line if last else line + "\n")
        for url, before in text_urls(line):
            self._sink.add(url, LinkKind.PAGE, False, before)
