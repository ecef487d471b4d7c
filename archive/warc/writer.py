"""Making WARC 1.1 records, each in a gzip member of its own so that readers can seek to any.

Records are written by hand rather than through warcio's writer because the block must be the
archived bytes exactly: warcio parses and re-serialises HTTP headers, which can change a header
block's spelling. Digests are SHA-256 in base32; record ids are derived from what the record
holds, so exporting the same captures twice gives the same records. A record is made (digests,
header) and compressed in two steps, so that a writer can compress several at once. A record
whose content is too large to hold gets its header from digests computed beforehand
(`record_header`) and is compressed piece by piece as the content is read (`GzipMember`).
"""

import base64
import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zlib_ng import zlib_ng

from ..timestamps import format_iso

WARC_VERSION = "WARC/1.1"
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
HTTP_RESPONSE = "application/http; msgtype=response"
HTTP_REQUEST = "application/http; msgtype=request"


# The fields of a record's header that a caller may give as they were read.
_KEEPABLE = frozenset({"warc-type", "warc-record-id", "warc-date", "warc-target-uri"})
# What ends every record, after its block.
_RECORD_END = b"\r\n\r\n"


def warc_digest(data: bytes | Sequence[bytes]) -> str:
    """`sha256:` and the base32 digest of the bytes, as WARC digest fields spell it."""
    digest = hashlib.sha256()
    for part in [data] if isinstance(data, bytes) else data:
        digest.update(part)
    return spelled_digest(digest.digest())


def spelled_digest(sha256: bytes) -> str:
    """A SHA-256 digest as WARC digest fields spell it (a content's name is its hex form)."""
    return "sha256:" + base64.b32encode(sha256).decode("ascii")


@dataclass(frozen=True, slots=True)
class Record:
    """A record made but not yet compressed: its header, its block, and what others link to."""

    record_id: str
    payload_digest: str | None
    header: bytes
    block: Sequence[bytes]


class GzipMember:
    """One record compressed into one gzip member piece by piece, so that a block too large to
    hold is written as it is read. zlib-ng lets go of the GIL while it compresses, so pieces (and
    records) can be compressed on other threads than the one reading, one piece of a member at a
    time and in order."""

    def __init__(self) -> None:
        # zlib-ng: the same deflate level as zlib's default, in about two thirds of the time.
        self._compressor = zlib_ng.compressobj(6, zlib_ng.DEFLATED, 31)

    def compress(self, parts: Iterable[bytes], last: bool = False) -> bytes:
        """The member's bytes for the record's next parts (deflate may keep some for later);
        with `last`, they end the record and the member."""
        pieces = [self._compressor.compress(part) for part in parts]
        if last:
            pieces.append(self._compressor.compress(_RECORD_END))
            pieces.append(self._compressor.flush())
        return b"".join(pieces)


def compress(record: Record) -> bytes:
    """The record as one gzip member."""
    return GzipMember().compress([record.header, *record.block], last=True)


def make_record(
    rec_type: str,
    uri: str | None,
    time: int,
    block: Sequence[bytes],
    fields: Sequence[tuple[str, str]] = (),
    payload_from: int | None = None,
) -> Record:
    """One record; `block` is its parts, `payload_from` the part the payload starts at (the parts
    before it are the HTTP header block), None for a record with no payload digest."""
    payload_digest = None if payload_from is None else warc_digest(block[payload_from:])
    record_id, header = record_header(
        rec_type,
        uri,
        time,
        fields,
        warc_digest(block),
        payload_digest,
        sum(len(part) for part in block),
    )
    return Record(record_id, payload_digest, header, block)


def record_header(
    rec_type: str,
    uri: str | None,
    time: int,
    fields: Sequence[tuple[str, str]],
    block_digest: str,
    payload_digest: str | None,
    length: int,
) -> tuple[str, bytes]:
    """The record id and the header of a record whose block has `length` bytes and these
    digests: the block follows the header, so they are known before it is written. A
    `WARC-Type`, `WARC-Record-ID`, `WARC-Date` or `WARC-Target-URI` among `fields` is written
    as given, in its place (a record kept as it was read), instead of the one made of
    `rec_type`, `time` and `uri`."""
    date = format_iso(time)
    given_id = next((v for k, v in fields if k.lower() == "warc-record-id"), None)
    record_id = given_id or (
        f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{rec_type} {uri} {date} {block_digest}')}>"
    )
    given = {name.lower() for name, _ in fields}
    made = [("WARC-Type", rec_type), ("WARC-Record-ID", record_id), ("WARC-Date", date)]
    if uri is not None:
        made.append(("WARC-Target-URI", uri))
    head = [(name, value) for name, value in made if name.lower() not in given & _KEEPABLE]
    head.extend(fields)
    head.append(("WARC-Block-Digest", block_digest))
    if payload_digest is not None:
        head.append(("WARC-Payload-Digest", payload_digest))
    head.append(("Content-Length", str(length)))
    lines = [WARC_VERSION, *(f"{name}: {value}" for name, value in head)]
    return record_id, ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
