"""warcio's record iterator with every line it reads bounded, for hostile files.

warcio reads a line by adding each piece of it to the ones before (so a line of 16 MB with no line
break costs minutes) and with no end (so it holds the whole of such a line); it reads a record
header of any number of lines, and the blank lines after a record one by one, however many. The
reader here reads a line in one pass, each piece once, and refuses a line longer than MAX_LINE;
the iterator lets a record header (and, for `dlweb cdxj`, the HTTP header block it parses) take
at most `header_budget` bytes and `header_lines` lines, and passes over the blank lines after a
record a buffer at a time, MAX_TRAILER bytes of them at most. Inflating gzip members is left to
warc/gunzip.py: the iterator reads the inflated bytes.
"""

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any, Protocol

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.utils import BUFF_SIZE

from ..errors import DlwebError

MAX_LINE = 64 * 1024
MAX_WARC_HEADER = 64 * 1024
# A record header has a few tens of fields: a header of many short lines costs its reading per
# line, not per byte.
MAX_HEADER_LINES = 256
MAX_TRAILER = 64 * 1024
# warcio logs each WARC-Target-URI it mends, whole, whatever its length; the reader mends them
# as warcio does and says nothing of it.
logging.getLogger("warcio.recordloader").setLevel(logging.ERROR)
# Whole lines that are blank once their trailing white space is removed (bytes.rstrip's).
_BLANK_LINES = re.compile(rb"(?:[ \t\r\x0b\x0c]*\n)*")


class Readable(Protocol):
    """What the reader reads: a file, or gzip members inflated (warc/gunzip.py)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def tell(self) -> int: ...


class TooLong(DlwebError):
    """A line or a record header longer than allowed."""


class ManyBlankLines(Exception):
    """More than MAX_TRAILER bytes of blank lines after a record, which is sound: reading goes on
    at the next record found."""


class BoundedReader(BufferedReader):  # type: ignore[misc]
    """warcio's buffered reader, reading each line in one pass and no longer than allowed."""

    def __init__(self, stream: Readable, block_size: int = BUFF_SIZE) -> None:
        super().__init__(stream, block_size=block_size)
        self._budget: int | None = None
        self._lines: int | None = None
        self._limits = ""

    @contextlib.contextmanager
    def budget(self, size: int, lines: int | None, what: str) -> Iterator[None]:
        """Let the lines read inside take `size` bytes in all, and be no more than `lines`
        lines; TooLong names `what` past either."""
        self._budget, self._lines = size, lines
        self._limits = f"{what} longer than {size // 1024} KiB" + (
            "" if lines is None else f" or {lines} lines"
        )
        try:
            yield
        finally:
            self._budget = self._lines = None

    def skip_blank_lines(self, most: int) -> int:
        """Pass over whole blank lines, up to `most` bytes of them, a buffer at a time; how many
        bytes were passed over."""
        skipped = 0
        while skipped < most:
            self._fillbuff()
            if self.empty():
                break
            at = self.buff.tell()
            with self.buff.getbuffer() as data:
                found = _BLANK_LINES.match(data, at, min(len(data), at + most - skipped))
            end = found.end() if found is not None else at
            self.buff.seek(end)
            skipped += end - at
            if end < self.buff_size:
                break
        return skipped

    def readline(self, length: int | None = None) -> bytes:
        if length == 0:
            return b""
        if self._budget is not None:
            cap = self._budget + 1 if length is None else min(length, self._budget + 1)
        else:
            cap = MAX_LINE + 1 if length is None else length
        pieces: list[bytes] = []
        size = 0
        while size < cap:
            self._fillbuff()
            if self.empty():
                break
            piece: bytes = self.buff.readline(cap - size)
            pieces.append(piece)
            size += len(piece)
            if piece.endswith(b"\n"):
                break
        line = b"".join(pieces)
        if self._budget is not None:
            self._budget -= len(line)
            if self._lines is not None:
                self._lines -= 1
            if self._budget < 0 or self._lines is not None and self._lines < 0:
                raise TooLong(self._limits)
        elif length is None and size > MAX_LINE:
            raise TooLong(f"a line longer than {MAX_LINE // 1024} KiB")
        return line


class BoundedIterator(ArchiveIterator):  # type: ignore[misc]
    """warcio's iterator over a file read through BoundedReader (no gzip: it reads inflated
    bytes), counting instead of printing a record that runs past its length."""

    INC_RECORD = ""

    def __init__(
        self,
        stream: Readable,
        header_budget: int = MAX_WARC_HEADER,
        header_lines: int | None = MAX_HEADER_LINES,
        **options: Any,
    ) -> None:
        super().__init__(stream, block_size=BUFF_SIZE, **options)
        self.reader = BoundedReader(self.fh, block_size=BUFF_SIZE)
        self.header_budget = header_budget
        self.header_lines = header_lines

    def _next_record(self, next_line: bytes | None) -> Any:
        with self.reader.budget(self.header_budget, self.header_lines, "a record header"):
            return super()._next_record(next_line)

    def _consume_blanklines(self) -> tuple[bytes | None, int]:
        """warcio's, bounded: the blank lines after a record (passed over a buffer at a time),
        then the first line of the next one (its first MAX_LINE bytes, which is no record's start
        when it goes on). The first line after a record that is not blank is counted as an
        error."""
        empty_size = 0
        first_line = True
        while True:
            skipped = self.reader.skip_blank_lines(MAX_TRAILER + 1 - empty_size)
            empty_size += skipped
            if empty_size > MAX_TRAILER:
                raise ManyBlankLines
            line = self.reader.readline(MAX_LINE)
            if not line:
                return None, empty_size
            stripped = line.rstrip()
            if stripped and not (first_line and not skipped):
                return line, empty_size
            empty_size += len(line)
            if stripped:
                self.err_count += 1
            first_line = False
