"""WACZ packages written byte by byte, so that each can be made hostile in one way zipfile would
not write: an entry named twice, an encrypted entry, a local header that disagrees with the
central directory, entries whose bytes overlap."""

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from tests.security.warc_inputs import member, record

WARC = "archive/data.warc.gz"
PAGES = "pages/pages.jsonl"
DATAPACKAGE = "datapackage.json"
PAGES_LIST = b'{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}\n'
STORED, DEFLATED = 0, 8
ENCRYPTED = 0x1


@dataclass(frozen=True)
class Entry:
    """A ZIP entry: its bytes as stored, and what its headers say of them."""

    name: str
    content: bytes  # as it reads once inflated
    method: int = STORED
    flags: int = 0
    local_method: int | None = None  # what its local header says, when it disagrees
    declared_size: int | None = None  # what its headers say its size is, when they lie
    at: int | None = None  # where its local header is, when within another entry's bytes

    @property
    def stored(self) -> bytes:
        if self.method == STORED:
            return self.content
        deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        return deflate.compress(self.content) + deflate.flush()

    def header(self, method: int) -> bytes:
        """The fields a local header and a directory record share, after the version(s)."""
        size = len(self.content) if self.declared_size is None else self.declared_size
        crc = zlib.crc32(self.content)
        return struct.pack("<4H3L", self.flags, method, 0, 0x21, crc, len(self.stored), size)

    def written(self) -> bytes:
        """Its local header, name and stored bytes."""
        method = self.method if self.local_method is None else self.local_method
        name = self.name.encode()
        local = b"PK\x03\x04" + struct.pack("<H", 20) + self.header(method)
        return local + struct.pack("<2H", len(name), 0) + name + self.stored

    def central(self, offset: int) -> bytes:
        name = self.name.encode()
        return (
            b"PK\x01\x02"
            + struct.pack("<2H", 20, 20)
            + self.header(self.method)
            + struct.pack("<5H2L", len(name), 0, 0, 0, 0, 0o644 << 16, offset)
            + name
        )


def zip_bytes(entries: list[Entry]) -> bytes:
    """A ZIP file of the entries in order; an entry with `at` is not written again, its directory
    record pointing at its local header written within another entry's bytes."""
    offsets = []
    out = bytearray()
    for entry in entries:
        offsets.append(len(out) if entry.at is None else entry.at)
        if entry.at is None:
            out += entry.written()
    start = len(out)
    for entry, offset in zip(entries, offsets, strict=True):
        out += entry.central(offset)
    size = len(out) - start
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), size, start, 0)
    return bytes(out)


def overlapping(url: str) -> list[Entry]:
    """Sound entries after a stored entry whose bytes hold the whole of another entry, local
    header and all."""
    inner = Entry("extra/inner", b"inner bytes")
    prefix = b"outer bytes, then another entry: "
    outer = Entry("extra/outer", prefix + inner.written())
    inside = replace(inner, at=len(outer.written()) - len(inner.written()))
    return [outer, inside, *sound_entries(url)]


def listing(contents: dict[str, bytes], extra: str = "") -> bytes:
    """A datapackage.json listing each file with its hash and size; `extra` is JSON text put
    before the resources (a key given twice, a long description...)."""
    resources = [
        {
            "name": Path(name).name,
            "path": name,
            "hash": "sha256:" + hashlib.sha256(content).hexdigest(),
            "bytes": len(content),
        }
        for name, content in contents.items()
    ]
    head = '{"profile": "data-package", "wacz_version": "1.1.1", '
    return (head + extra + '"resources": ' + json.dumps(resources) + "}").encode()


def sound_entries(url: str) -> list[Entry]:
    """A WARC file holding one capture of `url`, and the list of pages."""
    return [Entry(WARC, member(record(url, b"packaged"))), Entry(PAGES, PAGES_LIST, DEFLATED)]


def package_bytes(entries: list[Entry], extra: str = "") -> bytes:
    """The entries and a datapackage.json listing them (the last of two of a name)."""
    contents = {entry.name: entry.content for entry in entries}
    return zip_bytes([*entries, Entry(DATAPACKAGE, listing(contents, extra))])


def package(path: Path, entries: list[Entry], extra: str = "") -> Path:
    path.write_bytes(package_bytes(entries, extra))
    return path
