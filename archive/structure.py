"""Structure files: one per archived URL, fixed-size capture records sorted by capture time.

The byte layout is documented in docs/formats.md. A structure file is searched in place with
`os.pread`: a lookup reads the header and about log2(n) eight-byte capture times, then the one
record it returns, so a file of a million captures answers in microseconds without any index.
"""

import enum
import errno
import itertools
import os
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from .errors import ClientFault, CorruptFile
from .hashing import check_name, is_valid_name

MAGIC = b"DLWEBSTR"
VERSION = 1
MAX_URL_BYTES = 65_535

_HEADER_FIXED = struct.Struct(">8sHHII")  # magic, version, record size, header size, URL length
_RECORD = struct.Struct(
    ">q32s32sHBBqI"
)  # time, content, header block, status, kind, flags, offset, crc
RECORD_SIZE = _RECORD.size
_TIME = struct.Struct(">q")
_KIND_AT = struct.calcsize(">q32s32sH")  # the kind's offset in a record: after time to status
# plan_append reads the records spanned by the captures it looks for at once while they are at
# most this many times as many, plus this many (about 88 KB), else it searches for each.
_SPAN_READ_FACTOR = 16
# count_days reads the records this many at a time (about 5.8 MB).
DAYS_BATCH = 65_536
DAY = 86_400_000_000  # microseconds
_SPAN_READ_MIN = 1_000
_CRC_SPAN = RECORD_SIZE - 4
# The range of a record's signed 64-bit fields (time, offset).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class RecordKind(enum.IntEnum):
    """What a capture record stands for."""

    RESPONSE = 1
    REVISIT = 2
    NOT_MODIFIED = 3
    STREAM_SEGMENT = 4
    # Kept so that a WARC export can write them again; never replayed: lookups pass over them.
    REQUEST = 5
    METADATA = 6
    # In the structure file of a URL up to its `?`: the URL of the same path with a query whose
    # structure file is named by the record's content field, first captured at the record's
    # time. Fuzzy lookup finds a URL's variants by these; never replayed.
    VARIANT = 7
    # A WARC revisit whose original is not archived yet (exchange/pending.py): its content
    # describes the revisit. Lookups find it, so that a reader can say why it cannot be replayed,
    # unless a capture at the same time replaces it (the revisit, written once its original came).
    PENDING = 8
    # In a recorded stream's structure file, at a chunk's first point: the content is the chunk's
    # log (archive/streams/log.py: its points on both clocks, titles, the gap before it).
    STREAM_LOG = 9


# The kinds by their names (a capture sent as JSON spells them in lower case).
_KINDS = dict(RecordKind.__members__)
REPLAYED_KINDS = frozenset(
    (RecordKind.RESPONSE, RecordKind.REVISIT, RecordKind.NOT_MODIFIED, RecordKind.STREAM_SEGMENT)
)
_REPLAYED_CODES = frozenset(int(kind) for kind in REPLAYED_KINDS)
_PENDING_CODE = int(RecordKind.PENDING)
_KIND_CODES = frozenset(int(kind) for kind in RecordKind)
# The URL whose structure file is the registry of pending revisits (exchange/pending.py): one of
# the harbors' domain, which no crawl or WARC file archives and which the proxy answers itself.
PENDING_REGISTRY_URL = "http://pending-revisits.dlweb/"
# Where an import keeps the WARC records that are not captures (warcinfo, conversion, a metadata or
# resource record of another scheme than http(s)), as metadata records, one URL by WARC type
# (archive/warc/reader.py, `kept_url`): of the harbors' domain too, so never replayed.
KEPT_RECORDS_URL = "http://records.dlweb/"


# A capture of a content written in full (a response) or as a revisit of an earlier one: which of
# the two a WARC file holds depends on what came before it in that file, not on the capture.
_WRITTEN_EITHER_WAY = frozenset((RecordKind.RESPONSE, RecordKind.REVISIT))
_SIDE_KINDS = frozenset((RecordKind.REQUEST, RecordKind.METADATA))
# A bundled record's metadata field (exchange/bundles.py): where its bytes start in the bundle,
# bits 32 to 49, is where it was kept; the other bits, its length (bits 0 to 16) and 28 bits of
# its SHA-256, say what it is. A record bundled before those bits were kept has them 0.
BUNDLE_START_BITS = ((1 << 18) - 1) << 32
BUNDLE_LENGTH_BITS = (1 << 17) - 1


class RecordFlag(enum.IntFlag):
    NONE = 0
    TRUNCATED = 1  # the capture was cut short (size limit, time limit, connection lost)
    IMPORTED = 2  # came from a WARC file rather than from our crawler
    SYNTHETIC_HEADERS = 4  # the header block was made up (a WARC resource record has none)
    BUNDLED = 8  # a side record kept in a bundle: the metadata field gives its slice
    RESOLVED = 16  # an entry of the pending revisits' registry whose revisit was written since


class Mode(enum.StrEnum):
    EXACT = "exact"
    CLOSEST = "closest"
    BEFORE = "before"
    AFTER = "after"
    RANGE = "range"


class BadRecord(ClientFault):
    """A capture record whose fields are out of range."""


@dataclass(frozen=True, slots=True)
class Capture:
    """One version of a URL: when it was captured and which content and header block it refers to."""

    time: int
    content: str
    header: str
    status: int
    kind: RecordKind = RecordKind.RESPONSE
    flags: int = 0
    offset: int = 0

    def pack(self) -> bytes:
        check_name(self.content)
        check_name(self.header)
        self._check_ranges()
        try:
            kind = RecordKind(self.kind)
            body = _RECORD.pack(
                self.time,
                bytes.fromhex(self.content),
                bytes.fromhex(self.header),
                self.status,
                kind,
                self.flags,
                self.offset,
                0,
            )
        except (ValueError, struct.error) as exc:
            raise BadRecord(f"capture record cannot be stored: {exc}") from None
        return body[:_CRC_SPAN] + struct.pack(">I", zlib.crc32(body[:_CRC_SPAN]))

    def identity(self) -> tuple[object, ...]:
        """What makes two records the same capture, whichever file or tool brought it: its time,
        kind, status, content and header block, not where it came from (the flags) nor what an
        import noted of its source (the metadata field of a response or side record). A revisit
        is the same capture as a response of the same content; a bundled record is known by its
        length and checksum, whichever bundle holds it. Other kinds compare whole."""
        kind = self.kind
        if kind in _WRITTEN_EITHER_WAY:
            return (self.time, RecordKind.RESPONSE, self.status, self.content, self.header)
        if kind is RecordKind.NOT_MODIFIED:
            return (self.time, kind, self.status, self.content, self.header)
        if kind in _SIDE_KINDS:
            if self.flags & RecordFlag.BUNDLED:
                return (self.time, kind, True, self.offset & ~BUNDLE_START_BITS)
            return (self.time, kind, False, self.content)
        return (self.time, kind, self.status, self.content, self.header, self.flags, self.offset)

    def legacy_identity(self) -> tuple[object, ...] | None:
        """The identity of the same bundled record as kept before its checksum was (its length
        alone), which an import must find too; None for any other record."""
        if self.kind in _SIDE_KINDS and self.flags & RecordFlag.BUNDLED:
            return (self.time, self.kind, True, self.offset & BUNDLE_LENGTH_BITS)
        return None

    def _check_ranges(self) -> None:
        """Raise BadRecord naming the first number that does not fit its field of a record."""
        if not 0 <= self.status <= 999:
            raise BadRecord(f"HTTP status {self.status} is not between 0 and 999")
        if not 0 <= self.flags <= 255:
            raise BadRecord(f"flags {self.flags} do not fit in one byte")
        for field, value in (("time", self.time), ("offset", self.offset)):
            if not INT64_MIN <= value <= INT64_MAX:
                raise BadRecord(f"capture record cannot be stored: {field} {value} is not 64-bit")

    @classmethod
    def unpack(cls, raw: bytes, where: str) -> "Capture":
        time, content, header, status, kind, flags, offset, crc = _RECORD.unpack(raw)
        if zlib.crc32(raw[:_CRC_SPAN]) != crc:
            raise CorruptFile("record checksum mismatch", where=where)
        try:
            record_kind = RecordKind(kind)
        except ValueError:
            raise CorruptFile(f"unknown record kind {kind}", where=where) from None
        return cls(time, content.hex(), header.hex(), status, record_kind, flags, offset)

    def to_json(self) -> dict[str, object]:
        return {
            "time": self.time,
            "content": self.content,
            "header": self.header,
            "status": self.status,
            "kind": self.kind.name.lower(),
            "flags": self.flags,
            "offset": self.offset,
        }

    @classmethod
    def from_json(cls, data: object) -> "Capture":
        """Build a capture from JSON sent by a client, naming the first bad field."""
        if not isinstance(data, dict):
            raise BadRecord("a capture record must be a JSON object")
        try:
            time, status = data["time"], data["status"]
            content, header = data["content"], data["header"]
        except KeyError as exc:
            raise BadRecord(f"capture record lacks the field {exc.args[0]!r}") from None
        kind_name = data.get("kind", "response")
        flags, offset = data.get("flags", 0), data.get("offset", 0)
        # Plain ints, as JSON gives them, pass at once; anything else is looked at field by field.
        if not (type(time) is type(status) is type(flags) is type(offset) is int):
            for field, value in (
                ("time", time),
                ("status", status),
                ("flags", flags),
                ("offset", offset),
            ):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise BadRecord(f"capture field {field!r} must be an integer")
        for field, value in (("content", content), ("header", header)):
            if not is_valid_name(value):
                raise BadRecord(f"capture field {field!r} must be 64 lowercase hex digits")
        kind = _KINDS.get(kind_name.upper()) if isinstance(kind_name, str) else None
        if kind is None:
            raise BadRecord(f"capture kind {kind_name!r} is not one of {_kind_names()}")
        capture = cls(time, content, header, status, kind, flags, offset)
        capture._check_ranges()
        return capture


def _known(identity: tuple[object, ...], capture: Capture, known: set[tuple[object, ...]]) -> bool:
    """Whether a capture's identity, or the one a record kept before bundles had checksums would
    have, is among those of the records stored."""
    if identity in known:
        return True
    legacy = capture.legacy_identity()
    return legacy is not None and legacy in known


def _kind_names() -> str:
    return ", ".join(kind.name.lower() for kind in RecordKind)


def encode_header(url: str) -> bytes:
    """The header of a new structure file, padded so that records start on an 8-byte boundary."""
    url_bytes = url.encode("utf-8")
    if not url_bytes or len(url_bytes) > MAX_URL_BYTES:
        raise BadRecord(f"URL of {len(url_bytes)} bytes; it must be 1 to {MAX_URL_BYTES}")
    unpadded = _HEADER_FIXED.size + len(url_bytes) + 4
    size = (unpadded + 7) // 8 * 8
    fixed = _HEADER_FIXED.pack(MAGIC, VERSION, RECORD_SIZE, size, len(url_bytes))
    crc = struct.pack(">I", zlib.crc32(fixed + url_bytes))
    return fixed + url_bytes + crc + b"\0" * (size - unpadded)


def encode_file(url: str, captures: Iterable[Capture]) -> bytes:
    ordered = sorted(captures, key=lambda c: c.time)
    return encode_header(url) + b"".join(c.pack() for c in ordered)


def find_header_size(fd: int, where: str, start: int = 0) -> tuple[int, str]:
    """Read and check a structure file header (at `start` in the open file); return its size
    and the URL it holds."""
    fixed = os.pread(fd, _HEADER_FIXED.size, start)
    if len(fixed) < _HEADER_FIXED.size:
        raise CorruptFile(f"truncated header ({len(fixed)} bytes)", where=where)
    magic, version, record_size, header_size, url_len = _HEADER_FIXED.unpack(fixed)
    if magic != MAGIC:
        raise CorruptFile(f"not a structure file (bad magic {magic!r})", where=where)
    if version != VERSION:
        raise CorruptFile(f"structure format version {version} is not supported", where=where)
    if record_size != RECORD_SIZE:
        raise CorruptFile(f"record size {record_size}, expected {RECORD_SIZE}", where=where)
    if url_len > MAX_URL_BYTES or header_size < _HEADER_FIXED.size + url_len + 4:
        raise CorruptFile("header sizes are inconsistent", where=where)
    rest = os.pread(fd, url_len + 4, start + _HEADER_FIXED.size)
    if len(rest) < url_len + 4:
        raise CorruptFile("truncated header", where=where)
    url_bytes, crc = rest[:url_len], rest[url_len:]
    if struct.pack(">I", zlib.crc32(fixed + url_bytes)) != crc:
        raise CorruptFile("header checksum mismatch", where=where)
    return header_size, url_bytes.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class DayCount:
    """The captures of a URL on one UTC day: how many, the first's and the last's times."""

    day: date
    count: int
    first: int
    last: int

    def to_json(self) -> list[object]:
        return [self.day.isoformat(), self.count, self.first, self.last]

    @classmethod
    def from_json(cls, data: object) -> "DayCount":
        """Read a day as a storage node sends it, `[day (ISO), count, first, last]`; BadRecord
        naming what is wrong."""
        if not isinstance(data, list) or len(data) != 4:
            raise BadRecord("a day count must be a list [day, count, first time, last time]")
        day, count, first, last = data
        if not all(type(value) is int for value in (count, first, last)):
            raise BadRecord(f"a day count's count and times must be integers: {data!r:.200}")
        try:
            return cls(date.fromisoformat(day), count, first, last)
        except (TypeError, ValueError):
            raise BadRecord(f"a day count's day must be an ISO date: {day!r:.40}") from None


class StructureReader:
    """Binary search over an open structure file, or over one held at `start` in a larger file
    (`length` bytes long)."""

    def __init__(self, fd: int, where: str, start: int = 0, length: int | None = None) -> None:
        self._fd = fd
        self.where = where
        header_size, self.url = find_header_size(fd, where, start)
        self.base = start + header_size
        end = os.fstat(fd).st_size if length is None else start + length
        body = end - self.base
        if body < 0:
            raise CorruptFile("truncated header", where=where)
        if body % RECORD_SIZE:
            raise CorruptFile(
                f"truncated structure file: {body % RECORD_SIZE} trailing bytes "
                f"after {body // RECORD_SIZE} whole records",
                where=where,
            )
        self.count = body // RECORD_SIZE

    def time_at(self, index: int) -> int:
        raw = os.pread(self._fd, 8, self.base + index * RECORD_SIZE)
        value: int = _TIME.unpack(raw)[0]
        return value

    def record(self, index: int) -> Capture:
        raw = os.pread(self._fd, RECORD_SIZE, self.base + index * RECORD_SIZE)
        if len(raw) != RECORD_SIZE:
            raise CorruptFile(f"record {index} is truncated", where=self.where)
        return Capture.unpack(raw, f"{self.where} record {index}")

    def records(self, start: int = 0, stop: int | None = None) -> list[Capture]:
        stop = self.count if stop is None else min(stop, self.count)
        if start >= stop:
            return []
        raw = os.pread(self._fd, (stop - start) * RECORD_SIZE, self.base + start * RECORD_SIZE)
        return [
            Capture.unpack(raw[i : i + RECORD_SIZE], f"{self.where} record {start + n}")
            for n, i in enumerate(range(0, len(raw), RECORD_SIZE))
        ]

    def check_all(self, batch: int = 4096) -> None:
        """Read every record, raising CorruptFile at the first bad one or one out of order."""
        last = None
        for start in range(0, self.count, batch):
            for capture in self.records(start, start + batch):
                if last is not None and capture.time < last:
                    raise CorruptFile(f"records out of time order near {start}", where=self.where)
                last = capture.time

    def bisect_left(self, time: int) -> int:
        """Index of the first record at or after `time`."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.time_at(mid) < time:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def bisect_right(self, time: int) -> int:
        """Index just past the last record at or before `time`."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.time_at(mid) <= time:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def replayed_from(self, index: int, step: int) -> int | None:
        """The nearest record a lookup may answer with (a capture, or a pending revisit that no
        capture at the same time replaces) at `index` or past it going by `step` (1 or -1), or
        None."""
        while 0 <= index < self.count:
            kind = self._kind_at(index)
            if kind in _REPLAYED_CODES or kind == _PENDING_CODE and not self._replaced(index):
                return index
            index += step
        return None

    def _kind_at(self, index: int) -> int:
        kind = os.pread(self._fd, 1, self.base + index * RECORD_SIZE + _KIND_AT)
        return kind[0] if kind else 0

    def count_days(self, start: int, stop: int) -> list[DayCount]:
        """The captures (WARC request, metadata and other side records aside) at `start` to `stop`
        counted per UTC day, oldest first.

        Only each record's time and kind are read, straight from the file, a batch at a time, so
        that a URL of a million captures costs a few tens of milliseconds and a few megabytes; the
        records' checksums are left to the scrub. numpy is loaded on a first count: a node starts
        without it."""
        import numpy

        # A record's time and kind, all a count needs of it (docs/formats.md).
        layout = numpy.dtype(
            {
                "names": ["time", "kind"],
                "formats": [">i8", "u1"],
                "offsets": [0, _KIND_AT],
                "itemsize": RECORD_SIZE,
            }
        )
        replayed = numpy.array([int(kind) for kind in REPLAYED_KINDS], numpy.uint8)
        first, end = self.bisect_left(start), self.bisect_right(stop)
        pieces = []  # each batch's days: their numbers, counts, first and last times
        for at in range(first, end, DAYS_BATCH):
            size = min(DAYS_BATCH, end - at) * RECORD_SIZE
            raw = os.pread(self._fd, size, self.base + at * RECORD_SIZE)
            if len(raw) != size:
                raise CorruptFile(f"records {at} and after are truncated", where=self.where)
            records = numpy.frombuffer(raw, layout)
            times = records["time"][numpy.isin(records["kind"], replayed)].astype(numpy.int64)
            if not len(times):
                continue
            # The records are in time order: each day's records are a run.
            days = times // DAY
            starts = numpy.r_[0, numpy.flatnonzero(numpy.diff(days)) + 1]
            ends = numpy.r_[starts[1:], len(days)]
            pieces.append((days[starts], ends - starts, times[starts], times[ends - 1]))
        if not pieces:
            return []
        days, counts, firsts, lasts = (
            numpy.concatenate(column) for column in zip(*pieces, strict=True)
        )
        # A day across the end of a batch came in two pieces: add them up.
        opens = numpy.r_[True, days[1:] != days[:-1]]
        closes = numpy.r_[opens[1:], True]
        dates = days[opens].astype("datetime64[D]").tolist()
        counted = numpy.add.reduceat(counts, numpy.flatnonzero(opens)).tolist()
        return [
            DayCount(*day)
            for day in zip(
                dates, counted, firsts[opens].tolist(), lasts[closes].tolist(), strict=True
            )
        ]

    def _replaced(self, index: int) -> bool:
        """True when a capture has the same time as the pending revisit at `index`: the revisit
        written once its original was archived, which lookups answer with instead."""
        time = self.time_at(index)
        for step in (-1, 1):
            other = index + step
            while 0 <= other < self.count and self.time_at(other) == time:
                if self._kind_at(other) in _REPLAYED_CODES:
                    return True
                other += step
        return False

    def find(self, mode: Mode, time: int) -> int | None:
        """Index of the record a single-answer query picks, or None; request and metadata
        records are passed over."""
        if mode is Mode.EXACT:
            index = self.replayed_from(self.bisect_left(time), 1)
            return index if index is not None and self.time_at(index) == time else None
        if mode is Mode.BEFORE:
            return self.replayed_from(self.bisect_right(time) - 1, -1)
        if mode is Mode.AFTER:
            return self.replayed_from(self.bisect_left(time), 1)
        if mode is Mode.CLOSEST:
            first_after = self.bisect_left(time)
            after = self.replayed_from(first_after, 1)
            before = self.replayed_from(first_after - 1, -1)
            if before is None or after is None:
                return after if before is None else before
            return before if time - self.time_at(before) <= self.time_at(after) - time else after
        raise ValueError(f"mode {mode} has no single answer")

    def range(self, start: int, stop: int, limit: int) -> list[Capture]:
        """Records with start <= time <= stop, at most `limit` of them."""
        first = self.bisect_left(start)
        last = self.bisect_right(stop)
        return self.records(first, min(last, first + limit))


class StructureFile:
    """An open structure file, or one held at `start` in a larger file (`length` bytes long,
    read only); use as a context manager. Given `fd`, `path` open already (a volume that holds
    many files), it reads that descriptor and leaves it open."""

    def __init__(
        self,
        path: Path | str,
        writable: bool = False,
        start: int = 0,
        length: int | None = None,
        fd: int | None = None,
    ) -> None:
        self.path = Path(path)
        self._owned = fd is None
        if fd is None:
            fd = os.open(self.path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC)
        self._fd = fd
        try:
            self.reader = StructureReader(fd, str(path), start, length)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._owned:
            os.close(self._fd)

    def __enter__(self) -> "StructureFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def plan_append(self, captures: Sequence[Capture]) -> tuple[list[Capture], bool]:
        """The captures that are not stored yet, and whether they all go after the last record.
        A capture is stored when a record of the same identity is (`Capture.identity`); of those
        of one identity given together, the first is kept.

        Only captures no later than the last record are looked for in the file: a capture after
        it cannot be there, so appending newer captures to a file of any size costs no search.
        The records in the time span of those looked for are read at once when the span is not
        much longer than their number (a batch imported again), else each is searched for."""
        reader = self.reader
        last = reader.time_at(reader.count - 1) if reader.count else None
        firsts: dict[tuple[object, ...], Capture] = {}
        for capture in captures:
            firsts.setdefault(capture.identity(), capture)
        # Ties keep their order.
        unique = sorted(firsts.items(), key=lambda identified: identified[1].time)
        earlier = [c for _, c in unique if last is not None and c.time <= last]
        stored: list[Capture] = []
        if earlier:
            start = reader.bisect_left(earlier[0].time)
            stop = reader.bisect_right(earlier[-1].time)
            if stop - start <= _SPAN_READ_FACTOR * len(earlier) + _SPAN_READ_MIN:
                stored = reader.records(start, stop)
            else:
                for capture in earlier:
                    first = reader.bisect_left(capture.time)
                    stored.extend(reader.records(first, reader.bisect_right(capture.time)))
        known = {record.identity() for record in stored}
        fresh = [c for identity, c in unique if not _known(identity, c, known)]
        in_order = last is None or not fresh or fresh[0].time >= last
        return fresh, in_order

    def append_in_order(self, captures: Sequence[Capture], fsync: bool = True) -> None:
        """Write records after the last one: the caller checked they are in order. Without
        `fsync`, the caller makes them durable (a storage node's group commit)."""
        data = b"".join(c.pack() for c in captures)
        end = self.reader.base + self.reader.count * RECORD_SIZE
        written = os.pwrite(self._fd, data, end)
        if written != len(data):
            os.ftruncate(self._fd, end)
            # A regular file takes fewer bytes than asked only when its disk is full.
            raise OSError(errno.ENOSPC, f"{self.path}: short write while appending")
        if fsync:
            os.fsync(self._fd)
        self.reader.count += len(captures)

    def merged_bytes(self, captures: Sequence[Capture]) -> bytes:
        """The whole file with belated captures inserted in order, for an atomic rewrite."""
        appended = self._appended_bytes(captures)
        if appended is not None:
            return appended
        existing = self.reader.records()
        return encode_file(self.reader.url, [*existing, *captures])

    def _appended_bytes(self, captures: Sequence[Capture]) -> bytes | None:
        """`merged_bytes` of captures in order that all go after the last record: the records'
        bytes as they are, each checked as `Capture.unpack` checks it, then the captures', with
        no record decoded and encoded again. None when a record fails a check or the records
        are out of order (decoding them then names the bad one, or sorting puts them in order)."""
        times = [capture.time for capture in captures]
        if any(earlier > later for earlier, later in itertools.pairwise(times)):
            return None
        size = self.reader.count * RECORD_SIZE
        raw = os.pread(self._fd, size, self.reader.base)
        if len(raw) != size or not _intact_in_order(raw, times[0] if times else INT64_MAX):
            return None
        return encode_header(self.reader.url) + raw + b"".join(c.pack() for c in captures)


def _intact_in_order(raw: bytes, end: int) -> bool:
    """Whether the records in `raw` pass `Capture.unpack`'s checks (checksum, kind), are in time
    order and none is after `end`."""
    view = memoryview(raw)
    last = INT64_MIN
    for at in range(0, len(raw), RECORD_SIZE):
        time = int.from_bytes(view[at : at + 8], "big", signed=True)
        crc = int.from_bytes(view[at + _CRC_SPAN : at + RECORD_SIZE], "big")
        if (
            time < last
            or view[at + _KIND_AT] not in _KIND_CODES
            or zlib.crc32(view[at : at + _CRC_SPAN]) != crc
        ):
            return False
        last = time
    return last <= end
