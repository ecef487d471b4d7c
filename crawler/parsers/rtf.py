"""RTF: the targets of HYPERLINK and INCLUDEPICTURE fields, each hyperlink with its shown text, and
the text a reader shows, read in one pass over the tokens.

Destinations a reader does not show (font and color tables, pictures, objects, those marked
\\*) are skipped; \\'hh and \\uN escapes are decoded. Groups nested deeper than MAX_DEPTH are
counted, not kept, so any nesting costs no more than its braces.
"""

import codecs
import re
from dataclasses import dataclass

from archive.deadline import Deadline

from .common import code_point
from .documents import MAX_INSTRUCTION, DocumentParser

CONTENT_TYPES = ("application/rtf", "text/rtf", "application/x-rtf")
SUFFIXES = (".rtf",)
MAX_DEPTH = 1000
DEADLINE_EVERY = 4096  # tokens between two looks at the deadline
# A control word and its parameter; a hex escape; a control symbol; a brace; line ends, which
# RTF ignores; a run of text. Each alternative starts with its own character: no backtracking.
_TOKEN = re.compile(
    rb"\\([A-Za-z]{1,32})(-?[0-9]{1,10})? ?|\\'([0-9A-Fa-f]{2})|\\(.)|([{}])|[\r\n]+|([^\\{}\r\n]+)|\\",
    re.S,
)
# Destinations whose content is not shown.
_SKIPPED = frozenset(
    {
        "fonttbl",
        "colortbl",
        "stylesheet",
        "info",
        "pict",
        "object",
        "objdata",
        "nonshppict",
        "shpinst",
        "themedata",
        "colorschememapping",
        "datastore",
        "latentstyles",
        "listtable",
        "listoverridetable",
        "rsidtbl",
        "generator",
        "xmlnstbl",
        "filetbl",
        "revtbl",
        "pgdsctbl",
    }
)
_SHOWN_WORDS = {
    "par": "\n",
    "line": "\n",
    "sect": "\n",
    "page": "\n",
    "row": "\n",
    "tab": "\t",
    "cell": "\t",
    "emdash": "\u2014",
    "endash": "\u2013",
    "bullet": "\u2022",
    "lquote": "\u2018",
    "rquote": "\u2019",
    "ldblquote": "\u201c",
    "rdblquote": "\u201d",
    "emspace": " ",
    "enspace": " ",
}
_SHOWN_SYMBOLS = {b"\\": "\\", b"{": "{", b"}": "}", b"~": "\u00a0", b"_": "-", b"\n": "\n"}
_NORMAL, _INSTRUCTION, _RESULT = range(3)


def sniff(head: bytes) -> bool:
    return head.lstrip().startswith(b"{\\rtf")


class _Field:
    """A field: its code and its shown result, each kept up to MAX_INSTRUCTION characters."""

    def __init__(self) -> None:
        self.instruction = ""
        self.result = ""


@dataclass(slots=True)
class _Group:
    """What a group's content is: shown, skipped, or part of a field."""

    skip: bool = False
    mode: int = _NORMAL
    field: _Field | None = None  # the field this group's content belongs to
    owns: _Field | None = None  # the field this group holds, read when it closes
    skip_after_unicode: int = 1  # characters that stand for a \uN escape, for older readers

    def child(self) -> "_Group":
        """The state a group opened in this one starts with."""
        return _Group(self.skip, self.mode, self.field, None, self.skip_after_unicode)


class RtfParser(DocumentParser):
    kind = "rtf"

    def __init__(self, url: str, charset: str | None) -> None:
        super().__init__(url, charset)
        self._groups = [_Group()]
        self._over = 0  # groups opened past MAX_DEPTH, not kept
        self._codec = "cp1252"
        self._pending = bytearray()  # \'hh bytes, decoded together (a character may take two)
        self._to_skip = 0  # characters still to skip after a \uN escape
        self._star = False  # the last token was \*

    def _read(self, data: bytes, deadline: Deadline) -> None:
        position = 0
        while position < len(data):
            position = self._tokens(data, position, deadline)
        self._flush()

    def _tokens(self, data: bytes, position: int, deadline: Deadline) -> int:
        """Reads tokens from `position` on; returns where to go on after binary data, or the
        end of the document."""
        for count, match in enumerate(_TOKEN.finditer(data, position)):
            if count % DEADLINE_EVERY == 0:
                deadline.check()
            which = match.lastindex
            if which == 3:
                self._hex(int(match.group(3), 16))
                continue
            self._flush()
            if which == 1 or which == 2:
                word, parameter = match.group(1, 2)
                skipped = self._word(word.decode(), parameter, len(data) - match.end())
                if skipped:
                    return match.end() + skipped
            elif which == 4:
                self._symbol(match.group(4))
            elif which == 5:
                self._brace(match.group(5))
            elif which == 6:
                self._plain(match.group(6))
        return len(data)

    def _brace(self, brace: bytes) -> None:
        if brace == b"{":
            if len(self._groups) >= MAX_DEPTH:
                if not self._over:
                    self.problem(f"groups nested deeper than {MAX_DEPTH}")
                self._over += 1
            else:
                self._groups.append(self._groups[-1].child())
        elif self._over:
            self._over -= 1
        elif len(self._groups) > 1:
            closed = self._groups.pop()
            if closed.owns is not None:
                self._end_field(closed.owns)
        self._star = False

    def _word(self, word: str, parameter: bytes | None, left: int) -> int:
        """Acts on a control word; returns the bytes of binary data that follow it, skipped."""
        value = int(parameter) if parameter is not None else None
        group = self._groups[-1]
        star, self._star = self._star, False
        if word == "bin":
            return min(max(value or 0, 0), left)
        if word == "field":
            group.owns = group.field = _Field()
        elif word == "fldinst":
            group.mode = _INSTRUCTION
        elif word == "fldrslt":
            group.mode = _RESULT
        elif star or word in _SKIPPED:
            group.skip = True
        elif word == "u" and value is not None:
            self._shown(code_point(value % 0x10000))
            self._to_skip = group.skip_after_unicode
        elif word == "uc" and value is not None:
            group.skip_after_unicode = max(value, 0)
        elif word == "ansicpg" and value is not None:
            self._codec = _codec(value) or self._codec
        elif word in _SHOWN_WORDS:
            self._shown(_SHOWN_WORDS[word])
        return 0

    def _symbol(self, symbol: bytes) -> None:
        if symbol == b"*":
            self._star = True
            return
        self._star = False
        if symbol in _SHOWN_SYMBOLS:
            self._shown(_SHOWN_SYMBOLS[symbol])

    def _plain(self, text: bytes) -> None:
        self._star = False
        if self._to_skip:
            skipped = min(self._to_skip, len(text))
            text, self._to_skip = text[skipped:], self._to_skip - skipped
        self._shown(text.decode(self._codec, "replace"))

    def _hex(self, byte: int) -> None:
        self._star = False
        if self._to_skip:
            self._to_skip -= 1
        else:
            self._pending.append(byte)

    def _flush(self) -> None:
        if self._pending:
            text = self._pending.decode(self._codec, "replace")
            self._pending.clear()
            self._shown(text)

    def _shown(self, text: str) -> None:
        """Text of the document, shown or part of a field's code, as its group says."""
        group = self._groups[-1]
        if group.skip or self._over or not text:
            return
        if group.mode == _INSTRUCTION:
            if group.field is not None and len(group.field.instruction) < MAX_INSTRUCTION:
                group.field.instruction += text
            return
        self._text.add(text)
        field = group.field
        if group.mode == _RESULT and field is not None and len(field.result) < MAX_INSTRUCTION:
            field.result += text

    def _end_field(self, field: _Field) -> None:
        self.add_field(field.instruction, field.result)


def _codec(codepage: int) -> str | None:
    """The codec of an ANSI code page, None when Python has none."""
    try:
        return codecs.lookup(f"cp{codepage}").name
    except LookupError:
        return None
