"""Reading WARC (1.0, 1.1) and ARC files record by record, and getting past damaged ones.

FastWARC parses the record headers of a sound WARC file, in about a third of warcio's time; from
the first record it cannot vouch for (and in an ARC file) warcio does, since it tells what is
wrong with a record. This module reads each record's block itself, through the readers of
warc/block_readers.py, so that the HTTP header block is kept byte for byte, chunked encoding is
removed and nothing else (a gzip body stays gzip), a record's bytes are checked against its block
digest (else its payload digest) and every body is hashed with SHA-256 while it streams to a
spool. A damaged record becomes a Problem naming the file, the byte offset of the record and the
reason; reading goes on at the next gzip member or the next `WARC/1.` line, so the good records
after it are read too.

Files are hostile: reading stays linear in the size of the file whatever its bytes. Both readers
read gzip members inflated by warc/gunzip.py, which lets a member inflate only as far as its
record needs; warcio reads lines and headers of bounded size (warc/bounded.py); the places to go
on from after a damaged record are found in one pass (_Finder), and the bytes read again while
looking among a damaged record's bytes for the next record are bounded (_Rescans).
"""

import contextlib
import dataclasses
import os
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fastwarc import ArchiveIterator as FastIterator
from fastwarc import WarcHeader, WarcRecordType
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from ..errors import DlwebError
from ..header_block import MAX_HEADER_BLOCK, declares_chunked, status_of
from ..structure import KEPT_RECORDS_URL
from ..timestamps import BadTime, check_capture_time, parse_time
from ..urlkey import canonical_url
from .block_readers import (
    EMPTY,
    CountingReader,
    DechunkingReader,
    DigestingReader,
    PrefixedReader,
    Readable,
    digesting,
    drain,
)
from .bounded import BoundedIterator, ManyBlankLines, TooLong
from .digests import Digest, parse_digest
from .gunzip import GZIP_MAGIC, MEMBER_PROBE, DamagedMember, GzipMembers, starts_member
from .spool import Spool

READ_SIZE = 256 * 1024
MAX_HTTP_HEADER = MAX_HEADER_BLOCK
SCAN_SIZE = 256 * 1024
HTTP_TYPES = ("response", "revisit", "request")
IMPORTED_TYPES = (
    "response",
    "revisit",
    "resource",
    "request",
    "metadata",
    "warcinfo",
    "conversion",
)
# Records that are not captures, kept whole for export under a URL of KEPT_RECORDS_URL: every
# warcinfo and conversion record, and a metadata or resource record of another scheme than http(s)
# (a crawler's log, its manifest, its arguments).
KEPT_TYPES = ("warcinfo", "conversion")
KEPT_OTHER_SCHEMES = ("metadata", "resource")
# Fields recomputed from the block when a record is written again.
BLOCK_FIELDS = frozenset({"content-length", "warc-block-digest", "warc-payload-digest"})
# Those, and the fields a capture's records are given anew when written again (their ids, and
# their links to the records written with them).
RECOMPUTED_FIELDS = BLOCK_FIELDS | {
    "warc-record-id",
    "warc-concurrent-to",
    "warc-warcinfo-id",
    "warc-filename",
}
# Where reading may go on after a damaged record: the next gzip member, or the next line that
# starts `WARC/1.` in any case (warcio reads `warc/1.0` as `WARC/1.0`).
_NEXT_MEMBER = re.compile(re.escape(GZIP_MAGIC))
_NEXT_WARC_LINE = re.compile(rb"\n(?i:warc)/1\.")
# The end of an HTTP header block, as warcio finds it: the first line that is empty once its
# trailing white space is stripped, so that lines ended by CRLF, LF or CR CR LF all end it.
_HEAD_END = re.compile(rb"\n[\t\x0b\x0c\r\x1c-\x1f ]*\n")
_NOT_DECODED = "\ufffd"
# WARC-Type by FastWARC's record type (a bit each), read without looking the field up again.
_FASTWARC_TYPES = {
    int(getattr(WarcRecordType, name)): name
    for name in ("warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion")
}
# A bug of FastWARC's own (a Rust panic) reaches Python as pyo3's PanicException, a BaseException
# no module exports; warcio reads on from there, as after a record FastWARC cannot vouch for.
_FASTWARC_PANICS: tuple[type[BaseException], ...] = tuple(
    kind for kind in BaseException.__subclasses__() if kind.__name__ == "PanicException"
)
# Records kept for export only; their body is stored whole, after the WARC fields they keep.
SIDE_TYPES = ("request", "metadata")


@dataclass(frozen=True, slots=True)
class Problem:
    """A record that cannot be imported: where it starts and why."""

    path: Path
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: offset {self.offset}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Ignored:
    """A sound record that has no place in the archive (a dns: response...)."""

    path: Path
    offset: int
    type: str
    reason: str


@dataclass(slots=True)
class SourceRecord:
    """A record read whole and checked, its body hashed into a spool."""

    path: Path
    offset: int
    type: str
    uri: str
    time: int
    fields: list[tuple[str, str]]
    http_header: bytes | None
    status: int
    body: Spool
    read_bytes: int
    payload_digest: Digest | None = None
    truncated: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    key: str = ""  # the canonical form of `uri` (archive/urlkey.py)
    kept: bool = False  # not a capture: kept whole under a URL of KEPT_RECORDS_URL

    def field(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.fields if k.lower() == wanted), None)


Item = SourceRecord | Problem | Ignored


@dataclass(frozen=True, slots=True)
class _Raw:
    """A record as either reader gives it: its type, its WARC fields (a list of its own), its
    declared length and the stream of its block."""

    type: str
    fields: list[tuple[str, str]]
    length: int
    stream: Any


def kept_fields(fields: list[tuple[str, str]], whole: bool = False) -> bytes:
    """The WARC fields an export writes again, as `Name: value` lines, then an empty line. A
    record kept `whole` (not a capture: a warcinfo, a crawler's log) keeps its id and its links
    too, so that the links between the records kept from one file (a log's WARC-Concurrent-To
    its manifest, every record's WARC-Warcinfo-ID) hold in an export."""
    dropped = BLOCK_FIELDS if whole else RECOMPUTED_FIELDS
    lines = [f"{k}: {v}\r\n" for k, v in fields if k.lower() not in dropped]
    return ("".join(lines) + "\r\n").encode("utf-8")


def split_kept(body: bytes) -> tuple[list[tuple[str, str]], bytes]:
    """The fields and the block of a side record's stored body."""
    head, _, block = (
        body.partition(b"\r\n\r\n") if not body.startswith(b"\r\n") else (b"", b"", body[2:])
    )
    fields = []
    for line in head.decode("utf-8", errors="replace").split("\r\n"):
        name, sep, value = line.partition(":")
        if sep and name.strip():
            fields.append((name.strip(), value.strip()))
    return fields, block


class _BadRecord(DlwebError):
    """A record that is damaged but whose end is known: reading goes on after it."""


class _Unsure(Exception):
    """A record FastWARC would read otherwise than warcio, so warcio reads it: fields that are
    not UTF-8 (warcio decodes them as Latin-1, FastWARC puts U+FFFD), lines ended by a bare
    CR or LF (warcio ends the field there, FastWARC goes on), or two Content-Length fields
    (warcio ends a header at a line of white space, CR CR LF say, where FastWARC reads on into
    the HTTP header block or the next record's header)."""


# What ends FastWARC's reading at a record warcio then reads again.
_DOUBTS: tuple[type[BaseException], ...] = (
    OSError,
    _BadRecord,
    _Unsure,
    ValueError,
    DamagedMember,
    *_FASTWARC_PANICS,
)
# What ends warcio's reading at a damaged record whose end is not known.
_LOST = (
    ArchiveLoadFailed,
    StatusAndHeadersParserException,
    TooLong,
    _BadRecord,
    ValueError,
    EOFError,
)


@dataclass(frozen=True, slots=True)
class _Source:
    """What the readers read from `start` on in a file: the file, or its gzip members inflated
    (positions then count inflated bytes)."""

    fh: IO[bytes]
    members: GzipMembers | None

    @classmethod
    def at(cls, fh: IO[bytes], start: int, gzipped: bool) -> "_Source":
        if gzipped:
            return cls(fh, GzipMembers(fh, start))
        fh.seek(start)
        return cls(fh, None)

    @property
    def stream(self) -> Any:
        return self.fh if self.members is None else self.members

    def origin(self, position: int) -> int:
        """Where the record at `position` (of the bytes read) starts in the file."""
        return position if self.members is None else self.members.origin(position)

    def allow(self, position: int, length: int, max_record: int) -> None:
        """Let the record at `position` inflate to its length, when it is imported or passed
        over (not when it is refused for its size: reading goes on at the next member)."""
        if self.members is not None:
            self.members.allow(position, length if length <= max_record else 0)

    def raw_position(self) -> int:
        """How far in the file the readers have read."""
        return self.fh.tell() if self.members is None else self.members.raw_position


def read_archive(
    path: Path,
    max_record: int,
    spool_dir: Path,
    progress: Callable[[int], None] | None = None,
    opened: IO[bytes] | None = None,
) -> Iterator[Item]:
    """Every record of a WARC or ARC file as a SourceRecord, an Ignored or a Problem.

    FastWARC reads a sound WARC file; from the first record it cannot vouch for (or from the
    start of an ARC file) warcio reads the rest, since it tells what is wrong and goes on after.
    `progress(offset)` is called after each record with the position in the file. `opened`, when
    given, is the file already open (a WARC read from a WACZ package), `path` only its name.
    """
    with open(path, "rb") if opened is None else contextlib.nullcontext(opened) as fh:
        gzipped = fh.read(2) == GZIP_MAGIC[:2]
        fh.seek(0)
        doubted = yield from _read_sound(fh, path, gzipped, max_record, spool_dir, progress)
        if doubted is not None:
            yield from _read_any(fh, path, gzipped, doubted, max_record, spool_dir, progress)
        if progress is not None:
            progress(fh.seek(0, os.SEEK_END))


def _read_sound(
    fh: IO[bytes],
    path: Path,
    gzipped: bool,
    max_record: int,
    spool_dir: Path,
    progress: Callable[[int], None] | None,
) -> Generator[Item, None, int | None]:
    """Records read with FastWARC, each given out once the next one begins where it should
    (so it ended where its Content-Length says); None when the whole file was read, else the
    offset of the record warcio has to read from."""
    source = _Source.at(fh, 0, gzipped)
    held: Item | None = None
    offset = 0
    try:
        # FastWARC reads the bytes as they are: gzip members come inflated, and no other
        # compression (zstd, lz4, gzip within gzip) is inflated past the cap.
        for record in FastIterator(
            source.stream,
            parse_http=False,
            record_types=WarcRecordType.any_type,
            fsspec_args=False,
            stream_detect=False,
        ):
            if held is not None:
                if progress is not None:
                    progress(source.raw_position())
                yield held
                held = None
            offset = source.origin(record.stream_pos)
            raw = _from_fastwarc(record)
            source.allow(record.stream_pos, raw.length, max_record)
            held = _read_record(raw, path, offset, max_record, spool_dir)
    except _DOUBTS:
        if held is not None:
            _discard(held)
        return offset
    if held is not None:
        yield held
    return None


def _from_fastwarc(record: Any) -> "_Raw":
    fields = record.headers.items()
    text = "".join(map("".join, fields))
    if _NOT_DECODED in text or "\n" in text or "\r" in text:
        raise _Unsure("WARC fields that are not UTF-8 or hold a line break")
    if len(record.headers.get_multiple(WarcHeader.CONTENT_LENGTH)) > 1:
        raise _Unsure("two Content-Length fields")
    rec_type = _FASTWARC_TYPES.get(int(record.record_type)) or record.headers.get("WARC-Type", "")
    return _Raw(rec_type, list(fields), record.content_length, record.reader)


def _read_any(
    fh: IO[bytes],
    path: Path,
    gzipped: bool,
    start: int,
    max_record: int,
    spool_dir: Path,
    progress: Callable[[int], None] | None,
) -> Iterator[Item]:
    """Records read with warcio from `start` on, getting past damaged ones: after a record whose
    end is not known, reading goes on at the next place after its start where a record may
    start, which may lie among its own bytes."""
    finder = _Finder(fh, gzipped)
    rescans = _Rescans(start, fh.seek(0, os.SEEK_END))
    reported: set[int] = set()
    position: int | None = start
    while position is not None:
        source = _Source.at(fh, position, gzipped)
        records = BoundedIterator(source.stream, no_record_parse=True, arc2warc=True)
        after = None  # where the record that reading goes on after starts
        try:
            for record in records:
                items, after = _read_warcio(records, record, source, path, max_record, spool_dir)
                if progress is not None:
                    progress(source.raw_position())
                for item in items:
                    if isinstance(item, Problem):
                        reported.add(item.offset)
                    yield item
                if after is not None:
                    break
        except DamagedMember as exc:
            after = exc.offset
            if after not in reported:
                reported.add(after)
                yield Problem(path, after, str(exc))
        except _LOST as exc:
            after = source.origin(records.offset)
            if after not in reported:
                reported.add(after)
                yield Problem(path, after, _describe(exc))
        finally:
            records.close()
        rescans.passed(position, source.raw_position())
        position = None if after is None else finder.after(after)
        if position is not None and position < rescans.high and rescans.spent:
            if not rescans.said:
                rescans.said = True
                yield Problem(path, position, rescans.reason())
            position = finder.after(rescans.high - 1)
        if progress is not None and position is not None:
            progress(position)


def _read_warcio(
    records: BoundedIterator,
    record: Any,
    source: _Source,
    path: Path,
    max_record: int,
    spool_dir: Path,
) -> tuple[list[Item], int | None]:
    """A record warcio read (with the damaged gzip member after it, when reading past it found
    one), and None, or where the record starts that reading goes on after when its end is not
    known."""
    offset = source.origin(records.offset)
    raw = _from_warcio(record)
    source.allow(records.offset, raw.length, max_record)
    errors = records.err_count
    item = _read_record(raw, path, offset, max_record, spool_dir)
    after = None
    try:
        records.read_to_end()
    except ManyBlankLines:
        # The next record is looked for past the blank lines.
        consumed = records.fh.tell() - records.reader.rem_length()
        after = source.origin(consumed) if source.members is not None else consumed - 1
    except DamagedMember as exc:
        if exc.offset != offset:
            # The record ended whole in the members before.
            return [item, Problem(path, exc.offset, str(exc))], exc.offset
        if isinstance(item, Problem):
            # Refused already (for its size, say): reading goes on after its member.
            return [item], offset
        _discard(item)
        raise
    except BaseException:
        _discard(item)
        raise
    if records.err_count > errors:
        if not isinstance(item, Problem):
            _discard(item)
            item = Problem(path, offset, "the record does not end where its Content-Length says")
        return [item], offset
    return [item], after


def _from_warcio(record: Any) -> "_Raw":
    fields = list(record.rec_headers.headers)
    # No length when the field is missing: _read_record refuses the record then.
    return _Raw(record.rec_type or "", fields, record.length or 0, record.raw_stream)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, _BadRecord):
        return text
    return f"malformed record header: {text.splitlines()[0][:200]}"


class _Finder:
    """Where a record may start after a damaged one: the next gzip member (a place that starts
    as one: its header and the start of its data inflate), or the next line that starts
    `WARC/1.`. Asked about places further and further on, it reads the file once."""

    def __init__(self, fh: IO[bytes], gzipped: bool) -> None:
        self._fh = fh
        self._gzipped = gzipped
        self._pattern, self._skip = (_NEXT_MEMBER, 0) if gzipped else (_NEXT_WARC_LINE, 1)
        self._width = len(GZIP_MAGIC) if gzipped else len(b"\nWARC/1.")
        self._base = 0
        self._window = b""  # the bytes of the file from `_base` on, as far as read

    def after(self, position: int) -> int | None:
        """The first place after `position` where a record may start; None if none."""
        at = position + 1 - self._skip  # where the pattern may begin
        if not self._base <= at <= self._base + len(self._window):
            self._base, self._window = at, b""
        while True:
            found = self._pattern.search(self._window, at - self._base)
            if found is None:
                end = self._base + len(self._window)
                if not self._more(max(at, end - self._width + 1)):
                    return None
                continue
            start = self._base + found.start()
            if not self._gzipped:
                return start + self._skip
            probe = self._window[found.start() : found.start() + MEMBER_PROBE]
            if len(probe) < MEMBER_PROBE and self._more(start):
                continue
            if starts_member(probe):
                return start
            at = start + 1

    def _more(self, kept: int) -> bool:
        """Read on into the window, keeping its bytes from `kept`; False at the end of the file."""
        self._fh.seek(self._base + len(self._window))
        data = self._fh.read(SCAN_SIZE)
        if not data:
            return False
        self._window = self._window[kept - self._base :] + data
        self._base = kept
        return True


class _Rescans:
    """How much of a file was read again while looking for records among the bytes of damaged
    ones: once that is as much as the file itself (a file of records nested in records, say),
    records are looked for only past the furthest byte read, so that reading stays linear."""

    def __init__(self, start: int, size: int) -> None:
        self.high = start  # the furthest byte read
        self._left = size - start + SCAN_SIZE  # what may still be read again
        self.said = False

    def passed(self, start: int, end: int) -> None:
        """Count a reading from `start` to `end`."""
        if start < self.high:
            self._left -= min(end, self.high) - start
        self.high = max(self.high, end)

    @property
    def spent(self) -> bool:
        return self._left < 0

    def reason(self) -> str:
        return (
            f"the damaged bytes up to offset {self.high} are not searched again for records:"
            " this file was read twice over already"
        )


def _discard(item: Item) -> None:
    if isinstance(item, SourceRecord):
        item.body.discard()


def _first_values(fields: list[tuple[str, str]]) -> dict[str, str]:
    """Each field's first value by its lowercase name, as warcio's get_header finds it, for one
    pass over the fields instead of one per field looked up."""
    values: dict[str, str] = {}
    for name, value in fields:
        values.setdefault(name.lower(), value)
    return values


def _uri_as_warcio_reads_it(record: _Raw, uri: str) -> tuple[str, _Raw]:
    """WARC-Target-URI mended as warcio mends it (FastWARC does not): without the angle
    brackets wget 1.19 wrote around it, and with spaces percent-encoded; the record's fields too,
    so that an export writes it so."""
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    uri = uri.replace(" ", "%20")
    fields = [(k, uri if k.lower() == "warc-target-uri" else v) for k, v in record.fields]
    return uri, dataclasses.replace(record, fields=fields)


@dataclass(slots=True)
class _Declared:
    """What a record's WARC fields declare, once checked, for reading its block (not frozen: a
    frozen dataclass is several times slower to make, and one is made for every record)."""

    path: Path
    offset: int
    type: str
    uri: str
    key: str
    time: int
    length: int
    block_digest: Digest | None
    payload_digest: Digest | None
    kept: bool


def kept_url(rec_type: str) -> str:
    """The URL whose structure file holds the kept records of a WARC type."""
    return f"{KEPT_RECORDS_URL}{rec_type}"


def _kept(rec_type: str, http: bool) -> bool:
    """Whether a record is one kept that is not a capture, by its type and whether its URI is
    an http(s) URL."""
    return rec_type in KEPT_TYPES or (rec_type in KEPT_OTHER_SCHEMES and not http)


def _read_record(record: _Raw, path: Path, offset: int, max_record: int, spool_dir: Path) -> Item:
    rec_type = record.type.lower()
    fields = _first_values(record.fields)
    length_text = fields.get("content-length")
    if length_text is None or not length_text.strip().isdigit():
        shown = None if length_text is None else length_text[:40]
        raise _BadRecord(f"malformed record header: Content-Length {shown!r} is not a number")
    length: int = record.length
    if rec_type not in IMPORTED_TYPES:
        return Problem(path, offset, f"{rec_type[:40] or 'untyped'} records are not supported")
    if fields.get("warc-segment-number") is not None:
        return Problem(path, offset, "segmented records are not supported")
    uri = fields.get("warc-target-uri", "").strip()
    if uri[:1] == "<" and uri[-1:] == ">" or " " in uri:
        uri, record = _uri_as_warcio_reads_it(record, uri)
    http = uri.partition(":")[0].lower() in ("http", "https")
    kept = _kept(rec_type, http)
    if kept:
        uri = kept_url(rec_type)
    elif not http:
        # One reason for all (the summary counts records by reason): no URL quoted.
        return Ignored(path, offset, rec_type, "not an http(s) URL")
    try:
        key = canonical_url(uri)
    except DlwebError as exc:
        return Problem(path, offset, str(exc))
    date = fields.get("warc-date", "")
    try:
        time = parse_time(date)
    except BadTime:
        return Problem(path, offset, f"malformed WARC-Date {date[:40]!r}")
    try:
        check_capture_time(time)
    except BadTime as exc:
        return Problem(path, offset, f"WARC-Date {date[:40]!r}: {exc}")
    if length > max_record:
        return Problem(
            path,
            offset,
            f"record of {length} bytes is larger than the limit of {max_record} bytes"
            " (--max-record-size)",
        )
    try:
        block_digest = parse_digest(fields.get("warc-block-digest"))
        payload_digest = parse_digest(fields.get("warc-payload-digest"))
    except ValueError as exc:
        return Problem(path, offset, str(exc))
    declared = _Declared(
        path, offset, rec_type, uri, key, time, length, block_digest, payload_digest, kept
    )
    spool = Spool(spool_dir)
    try:
        item = _read_block(record, declared, spool)
    except BaseException:
        spool.discard()
        raise
    if not isinstance(item, SourceRecord):
        spool.discard()
    return item


def _read_block(record: _Raw, declared: _Declared, spool: Spool) -> Item:
    """The record with its block read into `spool` through readers that count it, hash it for
    its digests and remove its chunked encoding; a Problem when it does not hold what its fields
    declare."""
    counted = CountingReader(record.stream)
    # wget writes the digest of an empty block on its revisits, which hold headers: as warcio
    # does, a revisit's block is not checked (its payload is the original's anyway).
    block_digest = None if declared.type == "revisit" else declared.block_digest
    block, block_check = digesting(counted, block_digest)
    split = _read_head(declared, block)
    if isinstance(split, Problem):
        return split
    head, status, rest = split
    payload, dechunked, payload_checks = _payload_readers(declared, head, rest, block_check)
    if declared.type in SIDE_TYPES or declared.kept:
        spool.write(kept_fields(record.fields, declared.kept))
        if head is not None:
            spool.write(head)
    while data := payload.read(READ_SIZE):
        spool.write(data)
    read, length = counted.count, declared.length
    if read < length:
        raise _truncated(read, length)
    path, offset = declared.path, declared.offset
    if block_check is not None and not block_check.matches():
        return Problem(path, offset, f"WARC-Block-Digest {block_digest} does not match the block")
    if payload_checks and not any(check.matches() for check in payload_checks):
        return Problem(
            path,
            offset,
            f"WARC-Payload-Digest {declared.payload_digest} does not match the payload",
        )
    return SourceRecord(
        path,
        offset,
        declared.type,
        declared.uri,
        declared.time,
        record.fields,
        head,
        status,
        spool,
        read,
        declared.payload_digest,
        dechunked is not None and dechunked.broken,
        key=declared.key,
        kept=declared.kept,
    )


def _truncated(read: int, length: int) -> _BadRecord:
    return _BadRecord(f"truncated record: the file ends after {read} of its {length} bytes")


def _payload_readers(
    declared: _Declared, head: bytes | None, rest: Readable, block_check: DigestingReader | None
) -> tuple[Readable, DechunkingReader | None, tuple[DigestingReader, ...]]:
    """The reader of a payload as it is stored: dechunked when its HTTP headers say it was sent
    chunked (the DechunkingReader, else None), and the readers that hash it for its payload
    digest, as written in the file and as stored: the digest may match either."""
    # What a payload digest covers: the block after the HTTP headers, as written in the file. A
    # block digest checked covers those bytes already, so the payload digest is then taken as the
    # writer gave it (revisits find their original by it), not computed a second time.
    computed = (
        None if block_check is not None or declared.type == "revisit" else declared.payload_digest
    )
    raw, raw_check = digesting(rest, computed)
    if declared.type != "response" or head is None or not declares_chunked(head):
        return raw, None, () if raw_check is None else (raw_check,)
    dechunked = DechunkingReader(raw)
    decoded, decoded_check = digesting(dechunked, computed)
    checks = () if raw_check is None or decoded_check is None else (raw_check, decoded_check)
    return decoded, dechunked, checks


def _read_head(
    declared: _Declared, block: Readable
) -> tuple[bytes | None, int, Readable] | Problem:
    """The HTTP header block that starts the block of an HTTP record, its status (0 for a
    request) and a reader of the rest of the block; a Problem, the block read to its end, when
    the header block is malformed or a response has none."""
    rec_type, path, offset = declared.type, declared.path, declared.offset
    if rec_type not in HTTP_TYPES:
        return None, 0, block
    data = block.read(READ_SIZE)
    if not data:
        if declared.length:
            # No byte of a block that declares some: the file ends there, or FastWARC read on
            # past the record's header to the end of the file (see _Unsure) and warcio reads
            # the record again.
            raise _truncated(0, declared.length)
        if rec_type == "response":
            return Problem(path, offset, "malformed response record: it holds no HTTP header block")
        return None, 0, EMPTY
    head, rest = _split_head(data, block)
    if head is None:
        drain(block, READ_SIZE)
        return Problem(
            path,
            offset,
            f"malformed HTTP header block: no blank line ends it in its first"
            f" {MAX_HTTP_HEADER // 1024} KiB",
        )
    status = 0
    if rec_type != "request":
        try:
            status = status_of(head, "HTTP header block")
        except DlwebError as exc:
            drain(block, READ_SIZE)
            return Problem(path, offset, f"malformed {exc}")
    return head, status, PrefixedReader(rest, block)


def _split_head(data: bytes, block: Readable) -> tuple[bytes | None, bytes]:
    """The HTTP header block at the start of a block (through its blank line, see _HEAD_END),
    and the rest; None when it takes more than MAX_HTTP_HEADER bytes. Each piece is searched
    once: from the last line break of the pieces before it, where an end may begin."""
    buffer = bytearray(data)
    searched = 0
    while True:
        end = _HEAD_END.search(buffer, searched)
        if end is not None:
            if end.end() > MAX_HTTP_HEADER:
                return None, b""
            return bytes(buffer[: end.end()]), bytes(buffer[end.end() :])
        if len(buffer) > MAX_HTTP_HEADER:
            return None, b""
        searched = max(buffer.rfind(b"\n"), 0)
        piece = block.read(READ_SIZE)
        if not piece:
            # A block of headers only (a revisit, a bodiless response or request), or of a
            # status line only, may end without the blank line: as for warcio, the block ends
            # the headers.
            return bytes(buffer), b""
        buffer += piece
