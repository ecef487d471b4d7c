"""Word documents of Office Open XML (.docx): the external relationships of the main part and of
its headers, footers and notes (hyperlinks; linked pictures and objects), HYPERLINK and
INCLUDEPICTURE field codes, and the text of the main part.

A docx is a zip: the number of members, the size each declares and the bytes read of each are
bounded, so a zip bomb is refused; the XML is read by lxml's pull parser, which expands no entity,
loads no DTD and opens no network connection, keeping only the paragraph being read.
"""

import io
import posixpath
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from lxml import etree

from archive.deadline import Deadline

from ..links import LinkKind
from .common import MAX_LINK_TEXT, MAX_LINKS, SNIFF_SIZE, local_name
from .documents import MAX_INSTRUCTION, DocumentParser, OutOfTime, Unreadable
from .xml_reader import XmlReader, pull_parser

CONTENT_TYPES = ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)
SUFFIXES = (".docx",)
MAX_MEMBERS = 5000
MAX_MEMBER_SIZE = 64 * 1024 * 1024  # uncompressed bytes of one member read
MAX_RELATIONSHIPS = 100_000  # of one part
MAX_FIELD_DEPTH = 100  # fields nested in the code of others
CHUNK = 64 * 1024
DEFAULT_MAIN_PART = "word/document.xml"
# The last segment of a relationship's type: what a reader opens, what it loads with the document.
PAGE_RELATIONSHIPS = frozenset({"hyperlink"})
COMPONENT_RELATIONSHIPS = frozenset({"image", "oleObject", "audio", "video", "media"})
_BREAKS = {"tab": "\t", "br": "\n", "cr": "\n", "p": "\n"}
_LOCAL_HEADER = b"PK\x03\x04"
_CENTRAL_HEADER = b"PK\x01\x02"
_LOCAL_HEADER_FORMAT = struct.Struct("<4sHHHHHIIIHH")
_WORD_CONTENT_TYPE = b"wordprocessingml.document.main"


def sniff(head: bytes) -> bool:
    """A zip whose first members show a Word document: a member under word/, or content types
    that name a WordprocessingML main part."""
    position = 0
    while head.startswith(_LOCAL_HEADER, position) and position + 30 <= len(head):
        fields = _LOCAL_HEADER_FORMAT.unpack_from(head, position)
        flags, method, size, name_size, extra_size = fields[2], fields[3], fields[7], *fields[9:]
        start = position + 30 + name_size + extra_size
        name = head[position + 30 : position + 30 + name_size]
        if name.startswith(b"word/"):
            return True
        if name == b"[Content_Types].xml":
            return _WORD_CONTENT_TYPE in _inflated(head[start : start + size], method)
        if flags & 0x08:  # the size follows the data: the next header cannot be found
            return False
        position = start + size
    return False


def _inflated(data: bytes, method: int) -> bytes:
    """What the start of a member holds, as far as the head shows it."""
    if method == zipfile.ZIP_STORED:
        return data
    if method != zipfile.ZIP_DEFLATED:
        return b""
    try:
        return zlib.decompressobj(-15).decompress(data, SNIFF_SIZE * 16)
    except zlib.error:
        return b""


def _attribute(element: Any, name: str) -> str | None:
    """An attribute found by its local name, whatever its namespace (transitional or strict)."""
    for key, value in element.attrib.items():
        if local_name(key) == name:
            return str(value)
    return None


class _Field:
    """A complex field being read: its code, and whether its result has started."""

    def __init__(self) -> None:
        self.instruction: list[str] = []
        self.size = 0
        self.separated = False

    def add(self, text: str) -> None:
        if self.size < MAX_INSTRUCTION:
            self.instruction.append(text)
            self.size += len(text)


class DocxParser(DocumentParser):
    kind = "docx"

    def __init__(self, url: str, charset: str | None) -> None:
        super().__init__(url, charset)
        self._link_texts: dict[str, str] = {}  # by relationship id, from the main part
        self._hyperlinks: list[str] = []  # the relationship ids of the hyperlinks open
        self._fields: list[_Field] = []
        self._field_codes: list[str] = []

    def _read(self, data: bytes, deadline: Deadline) -> None:
        if data.count(_CENTRAL_HEADER) > MAX_MEMBERS:
            raise Unreadable(f"more than {MAX_MEMBERS} members")
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, EOFError) as exc:  # names not UTF-8: ValueError
            raise Unreadable("not a zip file, or a damaged one") from exc
        with archive:
            if len(archive.infolist()) > MAX_MEMBERS:
                raise Unreadable(f"more than {MAX_MEMBERS} members")
            main = self._main_part(archive, deadline)
            if main not in archive.NameToInfo:
                raise Unreadable(f"no main part {main}")
            try:
                self._read_main(archive, main, deadline)
            except OutOfTime:
                raise
            except Unreadable as exc:  # its relationships may still be read
                self.problem(str(exc))
            for relationships in self._relationship_parts(archive, main):
                self._relationships(archive, relationships, main, deadline)
            for instruction in self._field_codes:
                self.add_field(instruction)

    def _main_part(self, archive: zipfile.ZipFile, deadline: Deadline) -> str:
        """The main part's name, as the package's relationships give it."""
        if "_rels/.rels" not in archive.NameToInfo:
            return DEFAULT_MAIN_PART
        for element in self._elements(archive, "_rels/.rels", deadline):
            if local_name(element.tag) == "Relationship" and (
                element.get("Type", "").endswith("/officeDocument")
            ):
                target = str(element.get("Target", ""))
                return posixpath.normpath(target.lstrip("/"))
        return DEFAULT_MAIN_PART

    def _relationship_parts(self, archive: zipfile.ZipFile, main: str) -> list[str]:
        """The main part's relationships first, then those of the parts beside it."""
        folder, name = posixpath.split(main)
        prefix = posixpath.join(folder, "_rels", "")
        own = prefix + name + ".rels"
        others = sorted(
            member
            for member in archive.NameToInfo
            if member.startswith(prefix) and member.endswith(".rels") and member != own
        )
        return ([own] if own in archive.NameToInfo else []) + others

    def _relationships(
        self, archive: zipfile.ZipFile, part: str, main: str, deadline: Deadline
    ) -> None:
        """Adds the external targets of a relationships part."""
        own = posixpath.basename(part) == posixpath.basename(main) + ".rels"
        count = 0
        for element in self._elements(archive, part, deadline):
            if local_name(element.tag) != "Relationship":
                continue
            count += 1
            if count > MAX_RELATIONSHIPS:
                raise Unreadable(f"more than {MAX_RELATIONSHIPS} relationships in {part}")
            if element.get("TargetMode") != "External":
                continue
            kind = element.get("Type", "").rpartition("/")[2]
            text = self._link_texts.get(element.get("Id", ""), "") if own else ""
            target = element.get("Target", "")
            if kind in PAGE_RELATIONSHIPS:
                self._sink.add(target, LinkKind.PAGE, False, text)
            elif kind in COMPONENT_RELATIONSHIPS:
                self._sink.add(target, LinkKind.COMPONENT, True)

    def _read_main(self, archive: zipfile.ZipFile, main: str, deadline: Deadline) -> None:
        for event, element in self._events(archive, main, deadline):
            if event == "start":
                self._start(element)
            else:
                self._end(element)

    def _start(self, element: Any) -> None:
        name = local_name(element.tag)
        if name == "hyperlink":
            self._hyperlinks.append(_attribute(element, "id") or "")
        elif name == "fldChar":
            self._field_char(_attribute(element, "fldCharType"))
        elif name == "fldSimple":
            self._field_link(_attribute(element, "instr") or "")

    def _end(self, element: Any) -> None:
        name = local_name(element.tag)
        if name == "t":
            self._add_text(element.text or "")
        elif name == "instrText" and self._fields and not self._fields[-1].separated:
            self._fields[-1].add(element.text or "")
        elif name in _BREAKS:
            self._add_text(_BREAKS[name])
        elif name == "hyperlink" and self._hyperlinks:
            self._hyperlinks.pop()
        if name == "p":
            XmlReader.forget(element)

    def _field_char(self, kind: str | None) -> None:
        """Follows a complex field: its code lies between its begin and separate marks."""
        if kind == "begin" and len(self._fields) < MAX_FIELD_DEPTH:
            self._fields.append(_Field())
        elif kind == "separate" and self._fields and not self._fields[-1].separated:
            self._fields[-1].separated = True
            self._field_link("".join(self._fields[-1].instruction))
        elif kind == "end" and self._fields:
            field = self._fields.pop()
            if not field.separated:
                self._field_link("".join(field.instruction))

    def _field_link(self, instruction: str) -> None:
        """Keeps a field's code, read for its link after the relationships."""
        if len(self._field_codes) < MAX_LINKS:
            self._field_codes.append(instruction)

    def _add_text(self, text: str) -> None:
        self._text.add(text)
        if self._hyperlinks and self._hyperlinks[-1]:
            rid = self._hyperlinks[-1]
            self._link_texts[rid] = (self._link_texts.get(rid, "") + text)[:MAX_LINK_TEXT]

    def _elements(self, archive: zipfile.ZipFile, part: str, deadline: Deadline) -> Iterator[Any]:
        """The elements of a part, each at its end."""
        for event, element in self._events(archive, part, deadline):
            if event == "end":
                yield element

    def _events(
        self, archive: zipfile.ZipFile, part: str, deadline: Deadline
    ) -> Iterator[tuple[str, Any]]:
        """lxml's events for a part, read in chunks within MAX_MEMBER_SIZE."""
        parser = pull_parser(recover=False)
        try:
            for chunk in self._chunks(archive, part):
                deadline.check()
                parser.feed(chunk)
                yield from parser.read_events()
            parser.close()
        except etree.XMLSyntaxError as exc:
            raise Unreadable(f"malformed XML in {part}") from exc
        yield from parser.read_events()

    def _chunks(self, archive: zipfile.ZipFile, part: str) -> Iterator[bytes]:
        """A member's bytes, refused past MAX_MEMBER_SIZE whatever size it declares."""
        info = archive.getinfo(part)
        if info.file_size > MAX_MEMBER_SIZE:
            raise Unreadable(f"member too large: {part} ({info.file_size} bytes)")
        read = 0
        try:
            with archive.open(info) as member:
                while chunk := member.read(CHUNK):
                    read += len(chunk)
                    if read > MAX_MEMBER_SIZE:
                        raise Unreadable(f"member too large: {part}")
                    yield chunk
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, ValueError) as exc:
            raise Unreadable(f"member unreadable: {part} ({type(exc).__name__})") from exc
