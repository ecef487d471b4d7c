"""What the parsers of whole documents (PDF, Word, RTF) share: the buffer that keeps a document
whole, a reading that never raises and has a deadline, and the reading of Word's field codes."""

import re
from abc import ABC, abstractmethod

from archive.deadline import Deadline

from ..links import LinkKind
from .common import ByteBuffer, LinkSink, ParseResult, TextBuffer

MAX_DOCUMENT = 16 * 1024 * 1024  # bytes kept: the crawler parses no larger document
MAX_SECONDS = 5.0  # spent reading one document; what was found by then is kept
MAX_INSTRUCTION = 4096  # characters kept of a field code

# The fields whose target a reader opens (a hyperlink) or loads with the document (a picture).
FIELD_KINDS = {"HYPERLINK": LinkKind.PAGE, "INCLUDEPICTURE": LinkKind.COMPONENT}
# Switches that take an argument: a hyperlink's bookmark, tooltip and frame; a picture's converter.
_SWITCHES_WITH_ARGUMENT = frozenset({"\\l", "\\o", "\\t", "\\c"})
_FIELD_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"?|(\S+)', re.S)


class Unreadable(Exception):
    """Stops the reading of a document; the message says why, for the problems."""


class OutOfTime(Unreadable):
    """The deadline for one document passed."""


def _out_of_time(seconds: float) -> OutOfTime:
    return OutOfTime(f"reading stopped after {seconds:g} s")


def field_link(instruction: str) -> tuple[str, LinkKind] | None:
    """The target of a HYPERLINK or INCLUDEPICTURE field code and its kind; None for another
    field, or a hyperlink to a bookmark of the document."""
    tokens = [
        (match.group(1).replace("\\\\", "\\"), True)
        if match.group(1) is not None
        else (match.group(2), False)
        for match in _FIELD_TOKEN.finditer(instruction[:MAX_INSTRUCTION])
    ]
    if not tokens or tokens[0][0].upper() not in FIELD_KINDS:
        return None
    kind = FIELD_KINDS[tokens[0][0].upper()]
    skip = False
    for token, quoted in tokens[1:]:
        if skip:
            skip = False
        elif not quoted and token.startswith("\\"):
            skip = token.lower() in _SWITCHES_WITH_ARGUMENT
        else:
            return token, kind
    return None


class DocumentParser(ABC):
    """Keeps a whole document, then reads it in close(); what the reading raises becomes a
    problem named after the format, and what was found before is kept."""

    kind = "document"  # the format's name, which starts its problems

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._text = TextBuffer()
        self._buffer = ByteBuffer(MAX_DOCUMENT)

    def feed(self, chunk: bytes) -> None:
        self._buffer.add(chunk)

    def close(self) -> ParseResult:
        if self._buffer.cut:
            self.problem(f"cut at {MAX_DOCUMENT // (1024 * 1024)} MiB")
        try:
            self._read(self._buffer.data(), Deadline(MAX_SECONDS, _out_of_time))
        except Unreadable as exc:
            self.problem(str(exc))
        except Exception as exc:  # a library's error on a damaged file may be of any type
            self.problem(f"unreadable ({type(exc).__name__})")
        if self._text.cut:
            self.problem("text cut at 2 MB")
        return self._sink.result(self._text.text())

    def problem(self, text: str) -> None:
        self._sink.problem(f"{self.kind}: {text}")

    def add_field(self, instruction: str, text: str = "") -> None:
        """Adds the link of a field code, if it has one."""
        found = field_link(instruction)
        if found is not None:
            url, kind = found
            self._sink.add(url, kind, kind is LinkKind.COMPONENT, text)

    @abstractmethod
    def _read(self, data: bytes, deadline: Deadline) -> None:
        """Read the whole document: its links into the sink, its text, its problems."""
