"""Reading WARC (1.0, 1.1) and ARC files record by record, and getting past damaged ones.

FastWARC parses the record headers and undoes the gzip members of a sound WARC file, in about a
third of warcio's time; from the first record it cannot vouch for (and in an ARC file) warcio
does, since it tells what is wrong with a record. This module reads each record's block itself,
so that the HTTP header block is kept byte for byte, chunked encoding is removed and nothing else
(a gzip body stays gzip), a record's bytes are checked against its block digest (else its payload
digest) and every body is hashed with SHA-256 while it streams to a spool. A damaged record
becomes a Problem naming the file, the byte offset of the record and the reason; reading goes on
at the next gzip member or the next `WARC/1.` line, so the good records after it are read too.
"""

import contextlib
import dataclasses
import os
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from fastwarc import ArchiveIterator as FastIterator
from fastwarc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import DecompressingBufferedReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException
from warcio.utils import BUFF_SIZE
from zlib_ng import zlib_ng

from ..errors import DlwebError
from ..header_block import declares_chunked, status_of
from ..timestamps import BadTime, parse_time
from ..urlkey import canonical_url
from .dechunk import Dechunker
from .digests import Digest, parse_digest
from .spool import Spool

READ_SIZE = 256 * 1024
MAX_HTTP_HEADER = 256 * 1024
SCAN_SIZE = 1024 * 1024
HTTP_TYPES = ("response", "revisit", "request")
IMPORTED_TYPES = ("response", "revisit", "resource", "request", "metadata")
NOT_IMPORTED = {
    "warcinfo": "describes the WARC file, not a capture",
    "conversion": "a conversion record; the original it converts is imported instead",
}
# Fields recomputed or re-linked when a record is written again.
RECOMPUTED_FIELDS = frozenset(
    {
        "content-length",
        "warc-block-digest",
        "warc-payload-digest",
        "warc-record-id",
        "warc-concurrent-to",
        "warc-warcinfo-id",
        "warc-filename",
    }
)
GZIP_MAGIC = b"\x1f\x8b\x08"
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
# zlib-ng's stub declares its error as an instance; it is the exception class.
_INFLATE_ERRORS = (zlib.error, cast(type[Exception], zlib_ng.error), EOFError)
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
    """A sound record that has no place in the archive (warcinfo, a dns: response...)."""

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


def kept_fields(fields: list[tuple[str, str]]) -> bytes:
    """The WARC fields an export writes again, as `Name: value` lines, then an empty line."""
    lines = [f"{k}: {v}\r\n" for k, v in fields if k.lower() not in RECOMPUTED_FIELDS]
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
    not UTF-8 (warcio decodes them as Latin-1, FastWARC puts U+FFFD) or lines ended by a bare
    CR or LF (warcio ends the field there, FastWARC goes on)."""


# What ends FastWARC's reading at a record warcio then reads again.
_DOUBTS: tuple[type[BaseException], ...] = (
    OSError,
    _BadRecord,
    _Unsure,
    ValueError,
    *_FASTWARC_PANICS,
)


class _FastGunzip(DecompressingBufferedReader):  # type: ignore[misc]
    """warcio's reader, inflating gzip members with zlib-ng (the same format, decoded in
    about two thirds of zlib's time: inflating is a third of an import's reading)."""

    DECOMPRESSORS = {
        **DecompressingBufferedReader.DECOMPRESSORS,
        "gzip": lambda: zlib_ng.decompressobj(16 + zlib_ng.MAX_WBITS),
    }


class _Iterator(ArchiveIterator):  # type: ignore[misc]
    """warcio's iterator, counting instead of printing a record that runs past its length."""

    INC_RECORD = ""

    def __init__(self, fh: IO[bytes], **options: Any) -> None:
        super().__init__(fh, block_size=BUFF_SIZE, **options)
        self.reader = _FastGunzip(self.fh, block_size=BUFF_SIZE)


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
        doubted = yield from _read_sound(fh, path, max_record, spool_dir, progress)
        if doubted is not None:
            yield from _read_any(fh, path, gzipped, doubted, max_record, spool_dir, progress)
        if progress is not None:
            progress(fh.seek(0, os.SEEK_END))


def _read_sound(
    fh: IO[bytes],
    path: Path,
    max_record: int,
    spool_dir: Path,
    progress: Callable[[int], None] | None,
) -> Generator[Item, None, int | None]:
    """Records read with FastWARC, each given out once the next one begins where it should
    (so it ended where its Content-Length says); None when the whole file was read, else the
    offset of the record warcio has to read from."""
    held: Item | None = None
    offset = 0
    try:
        for record in FastIterator(
            fh, parse_http=False, record_types=WarcRecordType.any_type, fsspec_args=False
        ):
            if held is not None:
                if progress is not None:
                    progress(record.stream_pos)
                yield held
                held = None
            offset = record.stream_pos
            held = _read_record(_from_fastwarc(record), path, offset, max_record, spool_dir)
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
    rec_type = _FASTWARC_TYPES.get(int(record.record_type)) or record.headers.get("WARC-Type", "")
    return _Raw(rec_type, list(fields), record.content_length, record.reader)


def _read_any(
    fh: IO[bytes],
    path: Path,
    gzipped: bool,
    start: int | None,
    max_record: int,
    spool_dir: Path,
    progress: Callable[[int], None] | None,
) -> Iterator[Item]:
    """Records read with warcio from `start` on, getting past damaged ones."""
    reported: set[int] = set()
    while start is not None:
        fh.seek(start)
        records = _Iterator(fh, no_record_parse=True, arc2warc=True)
        resume_after = None
        try:
            for record in records:
                offset = records.offset
                errors = records.err_count
                item = _read_record(_from_warcio(record), path, offset, max_record, spool_dir)
                records.read_to_end()
                if records.err_count > errors and not isinstance(item, Problem):
                    _discard(item)
                    item = Problem(
                        path, offset, "the record does not end where its Content-Length says"
                    )
                if isinstance(item, Problem):
                    reported.add(offset)
                    resume_after = offset
                if progress is not None:
                    progress(fh.tell())
                yield item
            resume_after = None
        except (
            ArchiveLoadFailed,
            StatusAndHeadersParserException,
            *_INFLATE_ERRORS,
        ) as exc:
            offset = records.offset
            if offset not in reported:
                reported.add(offset)
                yield Problem(path, offset, _describe(exc, gzipped))
            resume_after = offset if resume_after is None else min(resume_after, offset)
        except (_BadRecord, ValueError) as exc:
            offset = records.offset
            reported.add(offset)
            yield Problem(path, offset, str(exc))
            resume_after = offset
        finally:
            records.close()
        if resume_after is not None:
            # Always forward, even when warcio's offset of a damaged member is off.
            start = _next_start(fh, max(resume_after, start) + 1, gzipped)
        else:
            start = None
        if progress is not None and start is not None:
            progress(start)


def _from_warcio(record: Any) -> "_Raw":
    fields = list(record.rec_headers.headers)
    return _Raw(record.rec_type or "", fields, record.length, record.raw_stream)


def _describe(exc: BaseException, gzipped: bool) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, _INFLATE_ERRORS):
        return f"damaged gzip member: {text}"
    if gzipped and "\\x1f\\x8b" in text:
        return "damaged gzip member: it ends early, before its record does"
    if "non-chunked gzip" in text:
        return (
            "the file is one gzip stream holding many records, not one gzip member per record;"
            " rewrite it with `warcio recompress`"
        )
    return f"malformed record header: {text.splitlines()[0][:200]}"


def _next_start(fh: IO[bytes], position: int, gzipped: bool) -> int | None:
    """Where the next record may start: the next gzip member, or the next `WARC/1.` line."""
    pattern, width, skip = (
        (_NEXT_MEMBER, len(GZIP_MAGIC), 0) if gzipped else (_NEXT_WARC_LINE, len(b"\nWARC/1."), 1)
    )
    carry = b""
    fh.seek(position)
    base = position
    while True:
        data = fh.read(SCAN_SIZE)
        if not data:
            return None
        window = carry + data
        found = pattern.search(window)
        if found is not None:
            return base - len(carry) + found.start() + skip
        carry = window[-(width - 1) :]
        base += len(data)


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


def _read_record(record: _Raw, path: Path, offset: int, max_record: int, spool_dir: Path) -> Item:
    rec_type = record.type.lower()
    fields = _first_values(record.fields)
    length_text = fields.get("content-length")
    if length_text is None or not length_text.strip().isdigit():
        raise _BadRecord(f"malformed record header: Content-Length {length_text!r} is not a number")
    length: int = record.length
    if rec_type in NOT_IMPORTED:
        return Ignored(path, offset, rec_type, NOT_IMPORTED[rec_type])
    if rec_type not in IMPORTED_TYPES:
        return Problem(path, offset, f"{rec_type or 'untyped'} records are not supported")
    if fields.get("warc-segment-number") is not None:
        return Problem(path, offset, "segmented records are not supported")
    uri = fields.get("warc-target-uri", "").strip()
    if uri[:1] == "<" and uri[-1:] == ">" or " " in uri:
        uri, record = _uri_as_warcio_reads_it(record, uri)
    scheme = uri.partition(":")[0].lower()
    if scheme not in ("http", "https"):
        return Ignored(path, offset, rec_type, f"{uri[:100]!r} is not an http(s) URL")
    try:
        key = canonical_url(uri)
    except DlwebError as exc:
        return Problem(path, offset, str(exc))
    try:
        time = parse_time(fields.get("warc-date", ""))
    except BadTime:
        return Problem(path, offset, f"malformed WARC-Date {fields.get('warc-date')!r}")
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
    spool = Spool(spool_dir)
    try:
        item = _read_block(
            record, path, offset, rec_type, uri, time, length, spool, block_digest, payload_digest
        )
    except BaseException:
        spool.discard()
        raise
    if isinstance(item, SourceRecord):
        item.key = key
    return item


def _read_block(
    record: _Raw,
    path: Path,
    offset: int,
    rec_type: str,
    uri: str,
    time: int,
    length: int,
    spool: Spool,
    block_digest: Digest | None,
    payload_digest: Digest | None,
) -> Item:
    stream = record.stream
    # wget writes the digest of an empty block on its revisits, which hold headers: as warcio
    # does, a revisit's block is not checked (its payload is the original's anyway).
    if rec_type == "revisit":
        block_digest = None
    block_hash = block_digest.hasher() if block_digest else None
    read = 0

    def next_piece() -> bytes:
        nonlocal read
        data: bytes = stream.read(READ_SIZE)
        read += len(data)
        if block_hash is not None:
            block_hash.update(data)
        return data

    head: bytes | None = None
    data = next_piece()
    status = 0
    if rec_type in HTTP_TYPES and data:
        head, data = _split_head(data, next_piece)
        if head is None:
            spool.discard()
            _drain(next_piece)
            return Problem(
                path,
                offset,
                f"malformed HTTP header block: no blank line ends it in its first"
                f" {MAX_HTTP_HEADER // 1024} KiB",
            )
        if rec_type != "request":
            try:
                status = status_of(head, "HTTP header block")
            except DlwebError as exc:
                spool.discard()
                _drain(next_piece)
                return Problem(path, offset, f"malformed {exc}")
    if rec_type == "response" and head is None:
        spool.discard()
        return Problem(path, offset, "malformed response record: it holds no HTTP header block")
    # What a payload digest covers: the block after the HTTP headers, as written in the file. A
    # block digest checked covers those bytes already, so the payload digest is then taken as the
    # writer gave it (revisits find their original by it), not computed a second time.
    raw_hash = (
        payload_digest.hasher()
        if payload_digest and block_hash is None and rec_type != "revisit"
        else None
    )
    dechunker = (
        Dechunker()
        if rec_type == "response" and head is not None and declares_chunked(head)
        else None
    )
    decoded_hash = (
        payload_digest.hasher() if payload_digest and raw_hash is not None and dechunker else None
    )
    if rec_type in SIDE_TYPES:
        spool.write(kept_fields(record.fields))
        if head is not None:
            spool.write(head)
    while data:
        if raw_hash is not None:
            raw_hash.update(data)
        body = dechunker.feed(data) if dechunker is not None else data
        if decoded_hash is not None:
            decoded_hash.update(body)
        spool.write(body)
        data = next_piece()
    truncated = False
    if dechunker is not None:
        rest = dechunker.finish()
        spool.write(rest)
        if decoded_hash is not None:
            decoded_hash.update(rest)
        truncated = dechunker.broken
    if read < length:
        spool.discard()
        raise _BadRecord(f"truncated record: the file ends after {read} of its {length} bytes")
    if block_hash is not None and block_digest and block_hash.digest() != block_digest.value:
        spool.discard()
        return Problem(path, offset, f"WARC-Block-Digest {block_digest} does not match the block")
    if payload_digest and raw_hash is not None:
        matches = raw_hash.digest() == payload_digest.value or (
            decoded_hash is not None and decoded_hash.digest() == payload_digest.value
        )
        if not matches:
            spool.discard()
            return Problem(
                path, offset, f"WARC-Payload-Digest {payload_digest} does not match the payload"
            )
    return SourceRecord(
        path,
        offset,
        rec_type,
        uri,
        time,
        record.fields,
        head,
        status,
        spool,
        read,
        payload_digest,
        truncated,
    )


def _split_head(data: bytes, more: Any) -> tuple[bytes | None, bytes]:
    """The HTTP header block at the start of a block (through its blank line, see _HEAD_END),
    and the rest; None when no blank line comes in MAX_HTTP_HEADER bytes."""
    while True:
        end = _HEAD_END.search(data)
        if end is not None:
            return data[: end.end()], data[end.end() :]
        if len(data) > MAX_HTTP_HEADER:
            return None, b""
        piece = more()
        if not piece:
            # A block of headers only (a revisit, a bodiless response or request), or of a
            # status line only, may end without the blank line: as for warcio, the block ends
            # the headers.
            return data, b""
        data += piece


def _drain(more: Any) -> None:
    while more():
        pass
