"""The records of a gzipped WARC or ARC file, inflated member after member, under a cap.

Both readers (FastWARC and warcio, warc/reader.py) read the inflated bytes from here rather than
inflating themselves, so that a gzip member can never inflate past what its record needs: a small
file that inflates to gigabytes of blank lines or zeros after a record would otherwise cost an
import a thousand times its size. The reader allows each record its header, its length (at most
the largest record it imports) and a little room after it (`allow`); a member that goes on
inflating past that is a damaged member, reported as a damaged record is. Inflating is done by
pieces of at most PIECE bytes, so memory stays flat whatever a member holds.
"""

from collections import deque
from typing import IO, cast

from zlib_ng import zlib_ng

from ..errors import DlwebError

PIECE = 256 * 1024
RAW_READ = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b\x08"
# Room allowed for a record's WARC header, and again for the next record's, past which a member
# inflating further is damaged; and room for the blank lines after a record.
HEADER_ROOM = 64 * 1024
TRAILER_ROOM = 64 * 1024
# Bytes of a place that looks like a gzip member that are inflated to tell whether it is one.
MEMBER_PROBE = 1024
# zlib-ng's stub declares its error as an instance; it is the exception class.
INFLATE_ERROR = cast(type[Exception], zlib_ng.error)


class DamagedMember(DlwebError):
    """A gzip member that cannot be inflated, or inflates past its record; `offset` is where it
    starts in the file."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"damaged gzip member: {reason}")
        self.offset = offset


class GzipMembers:
    """A file-like object of the inflated bytes of the gzip members that start at `start` in
    `raw` (positions count inflated bytes from there); the file's end in the middle of a member
    ends the bytes (the record then reads as cut short)."""

    def __init__(self, raw: IO[bytes], start: int) -> None:
        raw.seek(start)
        self._raw = raw
        self.raw_position = start  # where the next byte read from `raw` comes from
        self._inflate = _inflater()
        self._pending = b""  # bytes read from `raw` that the inflater has not taken yet
        self._member = start
        self._given = 0
        # Where each member's bytes start among the inflated ones, and in the file, from the
        # member of the oldest record still asked about.
        self._members: deque[tuple[int, int]] = deque([(0, start)])
        self._limit = HEADER_ROOM + TRAILER_ROOM
        self._damage: DamagedMember | None = None

    def allow(self, record: int, length: int) -> None:
        """Let the members inflate up to the end of the record that starts at `record` (an
        inflated position), `length` bytes long once its header is read, with room after it."""
        self._limit = max(self._limit, record + 2 * HEADER_ROOM + length + TRAILER_ROOM)

    def origin(self, position: int) -> int:
        """Where the member holding the inflated byte at `position` starts in the file; members
        before it are forgotten."""
        while len(self._members) > 1 and self._members[1][0] <= position:
            self._members.popleft()
        return self._members[0][1]

    def tell(self) -> int:
        return self._given

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        """Up to `size` inflated bytes, from as many members as they take; a damaged member is
        raised once the bytes before it were given."""
        if self._damage is not None:
            raise self._damage
        if self._given >= self._limit:
            raise DamagedMember(
                self._member,
                f"it inflates past the end of its record (more than"
                f" {TRAILER_ROOM // 1024} KiB after it)",
            )
        wanted = min(PIECE if size is None or size < 0 else size, self._limit - self._given)
        begun, end = self._given, self._given + wanted
        pieces: list[bytes] = []
        try:
            while self._given < end:
                if self._inflate.eof and not self._next_member():
                    break
                data = self._pending or self._raw_read()
                if not data:
                    if self._given == self._members[-1][0]:
                        raise DamagedMember(self._member, "the file ends before it gives a byte")
                    break
                try:
                    out: bytes = self._inflate.decompress(data, end - self._given)
                except INFLATE_ERROR as exc:
                    raise DamagedMember(self._member, str(exc)) from None
                # Past a member's end, what follows it is in unused_data (zlib-ng leaves a stale
                # copy in unconsumed_tail).
                self._pending = b"" if self._inflate.eof else self._inflate.unconsumed_tail
                pieces.append(out)
                self._given += len(out)
        except DamagedMember as exc:
            if self._given == begun:
                raise
            self._damage = exc
        return b"".join(pieces)

    def _raw_read(self) -> bytes:
        data = self._raw.read(RAW_READ)
        self.raw_position += len(data)
        return data

    def _next_member(self) -> bool:
        """Start inflating the member after the one that ended; False at the end of the file."""
        rest = self._inflate.unused_data + self._pending
        while len(rest) < len(GZIP_MAGIC) and (more := self._raw_read()):
            rest += more
        if not rest:
            return False
        start = self.raw_position - len(rest)
        if not rest.startswith(GZIP_MAGIC):
            raise DamagedMember(start, "bytes that are no gzip member follow the one before")
        self._inflate, self._pending, self._member = _inflater(), rest, start
        if self._members[-1][0] == self._given:
            # The member before gave no byte: no record starts in it.
            self._members[-1] = (self._given, start)
        else:
            self._members.append((self._given, start))
        return True


def starts_member(data: bytes) -> bool:
    """Whether the MEMBER_PROBE bytes `data` (fewer at the end of the file) start as a gzip
    member does: a header, then deflated data giving a first byte (bytes that only look like a
    member's first three are no place to read on from)."""
    inflate = _inflater()
    try:
        return bool(inflate.decompress(data, 1)) or inflate.eof or len(data) < MEMBER_PROBE
    except INFLATE_ERROR:
        return False


def _inflater() -> "zlib_ng._Decompress":
    return zlib_ng.decompressobj(16 + zlib_ng.MAX_WBITS)
