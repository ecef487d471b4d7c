"""Bundles: the small request and metadata records of an import (and the records kept that are not
captures: warcinfo, a crawler's log), stored together as one content.

A crawl's WARC file holds a request record beside nearly every response. Each is small (about
half a kilobyte), unique (the WARC fields kept with it hold its URL and date, so it never
deduplicates) and read only by an export; stored one content each, they were a third of an
import's contents and cost as much to place, index and inventory as the payloads. So
consecutive small side records go into one content, a bundle, and each one's structure record
names the bundle, with the bundled flag, and its slice of it in the metadata field
(`slice_field`).

Where a bundle ends depends only on the records: after a record whose SHA-256 starts with a
multiple of BOUNDARY (64 records on average), at BUNDLE_RECORDS records or BUNDLE_BYTES bytes,
and at the end of each file. The same file always makes the same bundles, whatever the batches
it is read in, so importing it again changes nothing; the same records in another file (several
files joined into one, or an export of the archive) make the same bundles except around the joins
or in another order. A record's slice carries a checksum of its bytes, by which it is known in any
bundle (archive/structure.py, `Capture.identity`), so it is not added again either way.
"""

import hashlib
from dataclasses import dataclass

from archive.errors import CorruptFile
from archive.structure import BUNDLE_LENGTH_BITS, BUNDLE_START_BITS, Capture, RecordFlag
from archive.warc.reader import SIDE_TYPES, SourceRecord

BUNDLED_MAX_RECORD = 64 * 1024
BUNDLE_RECORDS = 256
BUNDLE_BYTES = 256 * 1024
BOUNDARY = 64
# The metadata field of a bundled record, from its lowest bit: its length (17 bits), 15 bits of its
# SHA-256, where it starts in the bundle (18 bits), 13 more bits of its SHA-256.
_LENGTH_BITS = 17
_LOW_CHECK_BITS = 15
_LOW_CHECK = (1 << _LOW_CHECK_BITS) - 1
_START_SHIFT = 32
_HIGH_CHECK_SHIFT = 50
# A record starts before BUNDLE_BYTES (the bundle closes once it holds that many) and is at most
# BUNDLED_MAX_RECORD long: both fit their bits.
assert ((BUNDLE_BYTES - 1) << _START_SHIFT) & ~BUNDLE_START_BITS == 0
assert (BUNDLED_MAX_RECORD & ~BUNDLE_LENGTH_BITS) == 0

__all__ = ["Bundle", "Bundler", "bundled_body", "slice_field"]


@dataclass(frozen=True, slots=True)
class Bundle:
    """A closed bundle: its name and bytes, and each record with its slice (start, length)."""

    name: str
    body: bytes
    records: list[tuple[SourceRecord, int, int]]


class Bundler:
    """Collects the side records of an import in file order and closes bundles."""

    def __init__(self) -> None:
        self._records: list[tuple[SourceRecord, bytes]] = []
        self._size = 0

    @staticmethod
    def takes(record: SourceRecord) -> bool:
        """Whether a record goes into a bundle (a larger one is a content of its own)."""
        side = record.type in SIDE_TYPES or record.kept
        return side and record.body.size <= BUNDLED_MAX_RECORD

    def add(self, record: SourceRecord) -> Bundle | None:
        """Add a record `takes` accepted; the bundle it closes, if it closes one."""
        body = record.body.body()
        assert isinstance(body, bytes), "a bundled record is small enough to stay in memory"
        self._records.append((record, body))
        self._size += len(body)
        if (
            int(record.body.name[:8], 16) % BOUNDARY == 0
            or len(self._records) >= BUNDLE_RECORDS
            or self._size >= BUNDLE_BYTES
        ):
            return self.close()
        return None

    def close(self) -> Bundle | None:
        """The bundle of the records added since the last one (None if there are none)."""
        if not self._records:
            return None
        body = b"".join(data for _, data in self._records)
        slices, start = [], 0
        for record, data in self._records:
            slices.append((record, start, len(data)))
            start += len(data)
        self._records, self._size = [], 0
        return Bundle(hashlib.sha256(body).hexdigest(), body, slices)


def slice_field(start: int, length: int, name: str) -> int:
    """The metadata field of a bundled record: where its bytes start in the bundle, how many
    they are, and 28 bits of their SHA-256 (`name`, in hex), by which the same record is known in
    another bundle (archive/structure.py, `Capture.identity`)."""
    check = int(name[8:15], 16)  # the bits after those that end bundles
    low, high = check & _LOW_CHECK, check >> _LOW_CHECK_BITS
    return high << _HIGH_CHECK_SHIFT | start << _START_SHIFT | low << _LENGTH_BITS | length


def bundled_body(capture: Capture, content: bytes) -> bytes:
    """A side record's stored body: the content itself, or its slice of a bundle."""
    if not capture.flags & RecordFlag.BUNDLED:
        return content
    start = (capture.offset & BUNDLE_START_BITS) >> _START_SHIFT
    length = capture.offset & BUNDLE_LENGTH_BITS
    if capture.offset < 0 or start + length > len(content):
        raise CorruptFile(
            f"bundled record at {capture.time}: slice {start}+{length} is outside its bundle"
            f" {capture.content} of {len(content)} bytes"
        )
    return content[start : start + length]
