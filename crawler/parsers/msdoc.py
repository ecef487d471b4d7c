"""Word 97-2003 documents (.doc): the targets of HYPERLINK and INCLUDEPICTURE field codes, and the
text, read with olefile through the document's piece table.

Every stream read is first checked to be no larger than the file, so a chain of sectors that
loops cannot make olefile read more. A file whose piece table cannot be read (Word 6 or 95, a
damaged or truncated file) is searched for the two field codes only, in its bytes read as 8-bit
and as UTF-16 text: never for bare URLs, which random binary data would give.
"""

import io
import re
import struct
from typing import TYPE_CHECKING

from archive.deadline import Deadline

from .common import MAX_LINKS
from .documents import MAX_INSTRUCTION, DocumentParser, Unreadable

if TYPE_CHECKING:
    from olefile import OleFileIO

CONTENT_TYPES = ("application/msword",)
SUFFIXES = (".doc",)
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
WORD_MAGIC = 0xA5EC
WORD_97 = 0xC1  # the first nFib of Word 97, whose text a piece table maps
MAX_FIELD_DEPTH = 100
MAX_PIECES = 1_000_000
_ENCRYPTED = 0x0100  # FIB flags: fEncrypted
_TABLE_1 = 0x0200  # FIB flags: fWhichTblStm
_CLX_PAIR = 33  # the index of fcClx/lcbClx in the FIB's offsets and lengths
_FIELD_MARKS = re.compile("([\x13\x14\x15])")
_FIELD_CODE = re.compile(r"(?:HYPERLINK|INCLUDEPICTURE)\s[^\x00-\x08\x0b-\x1f]{0,2048}")
# What Word's control characters show: paragraph and cell marks, breaks, special hyphens; the
# rest (pictures, notes' anchors) nothing.
_SHOWN = str.maketrans(
    {
        **{chr(code): None for code in range(0x20) if code not in (9, 10)},
        "\r": "\n",
        "\x07": "\t",
        "\x0b": "\n",
        "\x0c": "\n",
        "\x1e": "-",
    }
)


def sniff(head: bytes) -> bool:
    return head.startswith(OLE_MAGIC)


def _u16(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<H", data, offset)[0])


def _u32(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<I", data, offset)[0])


class _Field:
    """A field being read: its code until its separator, then its result."""

    def __init__(self) -> None:
        self.instruction = ""
        self.result = ""
        self.separated = False

    def add(self, text: str) -> None:
        if not self.separated and len(self.instruction) < MAX_INSTRUCTION:
            self.instruction += text
        elif self.separated and len(self.result) < MAX_INSTRUCTION:
            self.result += text


class MsDocParser(DocumentParser):
    kind = "doc"

    def __init__(self, url: str, charset: str | None) -> None:
        super().__init__(url, charset)
        self._fields: list[_Field] = []

    def _read(self, data: bytes, deadline: Deadline) -> None:
        import olefile  # here: only a Word 97-2003 document needs it

        try:
            with olefile.OleFileIO(io.BytesIO(data), raise_defects=olefile.DEFECT_INCORRECT) as ole:
                self._read_ole(ole, len(data), deadline)
        except Unreadable:
            raise
        except Exception:  # olefile's errors on a damaged file are of many types
            self._search(data, deadline)
            raise Unreadable("damaged or truncated OLE file, searched for field codes") from None

    def _read_ole(self, ole: "OleFileIO", limit: int, deadline: Deadline) -> None:
        if ole.exists("EncryptedPackage"):
            raise Unreadable("encrypted")
        if not ole.exists("WordDocument"):
            return  # an OLE file of another kind (a spreadsheet, a slide show): no links
        document = self._stream(ole, "WordDocument", limit)
        self._read_word(ole, document, limit, deadline)

    def _stream(self, ole: "OleFileIO", name: str, limit: int) -> bytes:
        """A stream, refused if it claims to be larger than the file."""
        if ole.get_size(name) > limit:
            raise Unreadable(f"stream {name} larger than the file")
        stream: bytes = ole.openstream(name).read()
        return stream

    def _read_word(self, ole: "OleFileIO", document: bytes, limit: int, deadline: Deadline) -> None:
        if len(document) < 0x20 or _u16(document, 0) != WORD_MAGIC:
            raise Unreadable("not a Word document")
        flags = _u16(document, 0x0A)
        if flags & _ENCRYPTED:
            raise Unreadable("encrypted")
        if _u16(document, 2) < WORD_97:
            self._search(document, deadline)
            return
        table_name = "1Table" if flags & _TABLE_1 else "0Table"
        if not ole.exists(table_name):
            raise Unreadable(f"no {table_name} stream")
        table = self._stream(ole, table_name, limit)
        try:
            text = _piece_text(document, table, deadline)
        except (struct.error, IndexError) as exc:
            self._search(document, deadline)
            raise Unreadable("damaged piece table, searched for field codes") from exc
        self._read_text(text, deadline)

    def _read_text(self, text: str, deadline: Deadline) -> None:
        """Follows the fields of the document's text; the rest is visible text."""
        for part in _FIELD_MARKS.split(text):
            deadline.check()
            if part == "\x13":
                if len(self._fields) < MAX_FIELD_DEPTH:
                    self._fields.append(_Field())
            elif part == "\x14":
                if self._fields:
                    self._fields[-1].separated = True
            elif part == "\x15":
                if self._fields:
                    self._end_field(self._fields.pop())
            elif part:
                self._add_text(part)

    def _end_field(self, field: _Field) -> None:
        result = field.result.translate(_SHOWN)
        self.add_field(field.instruction, result)
        if self._fields:
            self._fields[-1].add(result)

    def _add_text(self, text: str) -> None:
        if self._fields:
            self._fields[-1].add(text)
        if all(field.separated for field in self._fields):
            self._text.add(text.translate(_SHOWN))

    def _search(self, data: bytes, deadline: Deadline) -> None:
        """Adds the links of the field codes found in bytes read as 8-bit and as UTF-16 text."""
        found: dict[str, None] = {}
        for text in (
            data.decode("latin-1"),
            data.decode("utf-16-le", "replace"),
            data[1:].decode("utf-16-le", "replace"),
        ):
            deadline.check()
            for match in _FIELD_CODE.finditer(text):
                if len(found) >= MAX_LINKS:
                    break
                found.setdefault(match.group(), None)
        for instruction in found:
            self.add_field(instruction)


def _piece_text(document: bytes, table: bytes, deadline: Deadline) -> str:
    """The document's text, put together from the pieces the piece table lists."""
    pieces = _pieces(_clx(document, table))
    texts: list[str] = []
    total = 0
    for start, end, place in pieces:
        deadline.check()
        count = end - start
        total += count
        if count <= 0 or total > len(document):
            raise Unreadable("piece table names more text than the document holds")
        compressed = bool(place & 0x40000000)
        offset = place & 0x3FFFFFFF
        if compressed:
            chunk = document[offset // 2 : offset // 2 + count]
            texts.append(chunk.decode("cp1252", "replace"))
        else:
            chunk = document[offset : offset + 2 * count]
            texts.append(chunk.decode("utf-16-le", "replace"))
    return "".join(texts)


def _clx(document: bytes, table: bytes) -> bytes:
    """The Clx structure of the table stream, which holds the piece table."""
    csw = _u16(document, 32)
    cslw = _u16(document, 34 + 2 * csw)
    counts = 36 + 2 * csw + 4 * cslw
    if _u16(document, counts) <= _CLX_PAIR:
        raise Unreadable("no piece table")
    pair = counts + 2 + 8 * _CLX_PAIR
    offset, length = _u32(document, pair), _u32(document, pair + 4)
    if offset + length > len(table):
        raise Unreadable("piece table out of its stream")
    return table[offset : offset + length]


def _pieces(clx: bytes) -> list[tuple[int, int, int]]:
    """The pieces (first and last character, place in the WordDocument stream) of a Clx."""
    position = 0
    while position < len(clx) and clx[position] == 1:  # a Prc: formatting, skipped
        position += 3 + _u16(clx, position + 1)
    if position >= len(clx) or clx[position] != 2:
        raise Unreadable("no piece table")
    size = _u32(clx, position + 1)
    plc = clx[position + 5 : position + 5 + size]
    count = (len(plc) - 4) // 12
    if count <= 0 or count > MAX_PIECES:
        raise Unreadable("no piece table")
    positions = struct.unpack_from(f"<{count + 1}I", plc, 0)
    descriptors = 4 * (count + 1)
    return [
        (positions[i], positions[i + 1], _u32(plc, descriptors + 8 * i + 2)) for i in range(count)
    ]
