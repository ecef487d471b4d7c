"""A ZIP file's layout, checked as hostile before any of its entries is read.

zipfile trusts the central directory: it holds it whole in memory whatever the number of entries
it claims, gives the last of two entries of one name, and reads an entry where the directory says
without comparing the entry's own (local) header. A WACZ package is refused here, naming the
entry, when it has too many entries or too large a directory, two entries of one name, a name
that is absolute or climbs out (`..`), an encrypted entry, a compression other than none or
deflate, a deflated entry that would inflate more than MAX_RATIO times its size, a local header
that disagrees with the directory, or entries whose bytes overlap (the layout of zip bombs).
Entries stored uncompressed are then read straight from the file (StoredEntry).
"""

import io
import re
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from archive.errors import DlwebError

MAX_ENTRIES = 10_000
MAX_DIRECTORY = 16 * 1024 * 1024
# A deflated entry inflates to at most this many times its size (text rarely reaches 20; zip
# bombs reach a thousand), plus a little for small entries.
MAX_RATIO = 100
RATIO_SLACK = 64 * 1024
_END = b"PK\x05\x06"
_END_SIZE = 22
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_LOCAL = b"PK\x03\x04"
_LOCAL_SIZE = 30
_ENCRYPTED = 0x1
_DESCRIPTOR = 0x8
_UTF8 = 0x800
_UNKNOWN = 0xFFFFFFFF
# Characters no entry name of a package holds: controls and the Windows separator.
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\\]")


class BadPackage(DlwebError):
    """A ZIP file whose layout is refused."""


@dataclass(frozen=True, slots=True)
class Entry:
    """An entry of a checked ZIP file: its directory record and where its bytes start."""

    info: zipfile.ZipInfo
    data_start: int

    @property
    def name(self) -> str:
        return self.info.filename


def shown(name: str) -> str:
    """An entry name as a message shows it: at most 200 characters."""
    return name if len(name) <= 200 else name[:200] + "..."


def directory_size(fh: IO[bytes]) -> tuple[int, int]:
    """The number of entries and the size of the central directory that the end record (ZIP64's
    when there is one) claims, read before zipfile loads the directory."""
    size = fh.seek(0, io.SEEK_END)
    tail_start = max(0, size - (_END_SIZE + 0xFFFF))
    fh.seek(tail_start)
    tail = fh.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        raise BadPackage("not a ZIP file: no end of central directory")
    fields = struct.unpack("<4s4H2LH", tail[at : at + _END_SIZE])
    entries, directory = fields[4], fields[5]
    if entries == 0xFFFF or directory == _UNKNOWN:
        locator = tail[at - 20 : at] if at >= 20 else b""
        if locator[:4] != _END64_LOCATOR:
            raise BadPackage("a ZIP64 end record without its locator")
        fh.seek(struct.unpack("<4sLQL", locator)[2])
        record = fh.read(56)
        if len(record) < 56 or record[:4] != _END64:
            raise BadPackage("a ZIP64 locator that points at no ZIP64 end record")
        entries, directory = struct.unpack("<4sQ2H2L4Q", record)[7:9]
    return entries, directory


def checked_entries(path: Path, package: zipfile.ZipFile, fh: IO[bytes]) -> list[Entry]:
    """Every entry of `package` (opened from `fh`), its layout checked; BadPackage names the
    first problem and its entry."""
    infos = package.infolist()
    if len(infos) > MAX_ENTRIES:
        raise BadPackage(f"{len(infos)} entries, more than {MAX_ENTRIES}")
    seen: set[str] = set()
    entries = []
    for info in infos:
        name = info.filename
        if name in seen:
            raise BadPackage(f"{shown(name)} is in the ZIP file twice")
        seen.add(name)
        _check_entry(info)
        entries.append(Entry(info, _data_start(fh, info)))
    ends = sorted((e.info.header_offset, e.data_start + e.info.compress_size, e) for e in entries)
    for (_, end, entry), (start, _, after) in zip(ends, ends[1:], strict=False):
        if end > start:
            raise BadPackage(f"{shown(entry.name)} and {shown(after.name)} overlap in the file")
    if ends and ends[-1][1] > package.start_dir:
        raise BadPackage(f"{shown(ends[-1][2].name)} runs into the central directory")
    return entries


def _check_entry(info: zipfile.ZipInfo) -> None:
    name = info.filename
    parts = PurePosixPath(name).parts
    drive = bool(parts) and ":" in parts[0]
    if not parts or name.startswith("/") or ".." in parts or _BAD_NAME.search(name) or drive:
        raise BadPackage(f"{shown(name)!r}: an entry name that is absolute or leaves the package")
    if info.flag_bits & _ENCRYPTED:
        raise BadPackage(f"{shown(name)} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise BadPackage(
            f"{shown(name)} is compressed with method {info.compress_type}, not stored or deflated"
        )
    if info.compress_type == zipfile.ZIP_DEFLATED:
        if info.file_size > MAX_RATIO * info.compress_size + RATIO_SLACK:
            raise BadPackage(
                f"{shown(name)} would inflate from {info.compress_size} to {info.file_size}"
                f" bytes, more than {MAX_RATIO} times"
            )
    elif info.file_size != info.compress_size:
        raise BadPackage(f"{shown(name)} is stored with two different sizes")


def _data_start(fh: IO[bytes], info: zipfile.ZipInfo) -> int:
    """Where an entry's bytes start, once its local header is found to agree with the central
    directory (a reader that goes by the local headers sees the same entries)."""
    name = info.filename
    if info.header_offset < 0:
        raise BadPackage(f"{shown(name)}: the central directory places it before the file starts")
    fh.seek(info.header_offset)
    header = fh.read(_LOCAL_SIZE)
    if len(header) < _LOCAL_SIZE or header[:4] != _LOCAL:
        raise BadPackage(f"{shown(name)}: no local header where the central directory says")
    fields: tuple[int, ...] = struct.unpack("<4s5H3L2H", header)[1:]
    flags, method, crc, compressed, size, name_length, extra_length = fields[1:3] + fields[5:]
    local_name = fh.read(name_length)
    encoded = info.orig_filename.encode("utf-8" if info.flag_bits & _UTF8 else "cp437")
    differs = [
        what
        for what, local, central in (
            ("name", local_name, encoded),
            ("compression", method, info.compress_type),
            ("encryption", flags & _ENCRYPTED, info.flag_bits & _ENCRYPTED),
        )
        if local != central
    ]
    if not flags & _DESCRIPTOR:
        differs += [
            what
            for what, local, central in (
                ("CRC", crc, info.CRC),
                ("compressed size", compressed, info.compress_size),
                ("size", size, info.file_size),
            )
            if local != _UNKNOWN and local != central
        ]
    if differs:
        differences = ", ".join(differs)
        raise BadPackage(
            f"{shown(name)}: its local header and the central directory differ ({differences})"
        )
    return info.header_offset + _LOCAL_SIZE + name_length + extra_length


class StoredEntry(io.RawIOBase):
    """The bytes of an entry stored uncompressed, read straight from the file: seeking back
    costs nothing (zipfile reads an entry again from its start to seek back, which reading on
    after damaged records does)."""

    def __init__(self, fh: IO[bytes], start: int, size: int) -> None:
        super().__init__()
        self._fh, self._start, self._size, self._at = fh, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: "memoryview | bytearray") -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._size - self._at)
        if wanted <= 0:
            return 0
        self._fh.seek(self._start + self._at)
        got = self._fh.readinto(memoryview(buffer)[:wanted])  # type: ignore[attr-defined]
        self._at += got
        return int(got)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        self._at = max(0, base + offset)
        return self._at

    def tell(self) -> int:
        return self._at
