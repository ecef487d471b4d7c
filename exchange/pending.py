"""Revisits whose original is not archived yet: kept as pending captures, resolved later.

A revisit record repeats the payload of an earlier record, its original, which it names by its
payload digest and often by URL and date (WARC-Refers-To-Target-URI and -Date). WARC files are
often imported in another order than they were written, so an original may come in a later file or
a later import. Until then the revisit cannot be replayed, but it is not dropped: it is kept as a
pending capture (RecordKind.PENDING) at its own URL and time, whose content is a description of the
revisit (its URL, date, status, WARC fields and HTTP header block: enough to write its capture
later, or to export it again), and entered in one registry, the structure file of
PENDING_REGISTRY_URL (archive/structure.py), by a pending record naming the same description.

Each import reads the registry once, at its end, and resolves the entries whose original it may
have brought: the revisit capture is written at the same URL and time, where lookups then answer
with it instead of the pending one (archive/structure.py), and the entry is marked resolved by a
copy of it flagged RESOLVED, since structure files are only ever appended to. Which entries an
import may resolve is told by marks of URLs kept in each entry's metadata field, so that an
import that brought none of their originals reads no description.
"""

import hashlib
import json
import zlib
from dataclasses import dataclass, replace

from archive.cluster import NewCapture
from archive.errors import DlwebError
from archive.structure import PENDING_REGISTRY_URL, Capture, RecordFlag, RecordKind
from archive.urlkey import BadUrl, canonical_url
from archive.warc.digests import Digest, parse_digest
from archive.warc.reader import RECOMPUTED_FIELDS, SourceRecord

# The fields of a pending revisit an export does not write again: those its writer makes anew or
# recomputes, but its payload digest, which names its original's payload.
NOT_WRITTEN_AGAIN = frozenset({"warc-type", "warc-record-id", "warc-date", "warc-target-uri"}) | (
    RECOMPUTED_FIELDS - {"warc-payload-digest"}
)
_MARK_BITS = 0x7FFFFFFF
# The URLs an import captured, as bits of their marks: 8 Mi bits (1 MiB), so that even an import
# of millions of records gives few false candidates (which cost a description read each).
_SEEN_BITS = 1 << 23


class BadDescription(DlwebError):
    """A content that should describe a pending revisit and does not."""


@dataclass(frozen=True, slots=True)
class Revisit:
    """What a revisit record says, enough to write its capture once its original is archived."""

    uri: str  # the URL its capture is stored under (a POST's lookup URL, archive/requestkey.py)
    time: int
    status: int
    fields: tuple[tuple[str, str], ...]
    http_header: bytes | None

    @classmethod
    def of(cls, record: SourceRecord) -> "Revisit":
        return cls(record.uri, record.time, record.status, tuple(record.fields), record.http_header)

    def field(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.fields if k.lower() == wanted), None)

    def written_fields(self) -> list[tuple[str, str]]:
        """The WARC fields an export writes again, in their order."""
        return [kv for kv in self.fields if kv[0].lower() not in NOT_WRITTEN_AGAIN]

    def same_as(self, other: "Revisit") -> bool:
        """Whether two descriptions are of the same revisit, read from its source or from an
        export of it: the same URL, time, status, HTTP header block and the fields written
        again."""
        return (self.uri, self.time, self.status, self.http_header) == (
            other.uri,
            other.time,
            other.status,
            other.http_header,
        ) and self.written_fields() == other.written_fields()

    @property
    def payload_digest(self) -> Digest | None:
        try:
            return parse_digest(self.field("WARC-Payload-Digest"))
        except ValueError:
            return None

    @property
    def original_url(self) -> str:
        """Where its original is to be captured: the URL it refers to, else its own."""
        target = self.field("WARC-Refers-To-Target-URI")
        if target and self.field("WARC-Refers-To-Date"):
            return target.strip().strip("<>")
        return self.uri

    def marks(self) -> int:
        """The metadata field of its records: the marks of its original's URL and of its own,
        so that an import that captured either may try to resolve it."""
        return url_mark(self.original_url) << 32 | url_mark(self.uri)

    def encode(self) -> bytes:
        """The description stored as a content: JSON, the same bytes for the same record."""
        header = None if self.http_header is None else self.http_header.decode("latin-1")
        described = {
            "url": self.uri,
            "time": self.time,
            "status": self.status,
            "fields": [list(kv) for kv in self.fields],
            "http_header": header,
        }
        return json.dumps(described, sort_keys=True, separators=(",", ":")).encode("ascii")

    @classmethod
    def decode(cls, data: bytes, name: str) -> "Revisit":
        """The revisit a stored description (the content `name`) describes."""
        try:
            described = json.loads(data)
            header = described["http_header"]
            revisit = cls(
                described["url"],
                described["time"],
                described["status"],
                tuple((str(k), str(v)) for k, v in described["fields"]),
                None if header is None else header.encode("latin-1"),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BadDescription(f"content {name} does not describe a pending revisit") from None
        if not (isinstance(revisit.uri, str) and type(revisit.time) is type(revisit.status) is int):
            raise BadDescription(f"content {name} does not describe a pending revisit")
        return revisit


@dataclass(frozen=True, slots=True)
class Stored:
    """What a capture of an import names in the store: its content and header block, with its
    status and the content's size (for a revisit, those of the original it repeats)."""

    content: str
    header: str
    status: int
    size: int

    def capture(
        self,
        record: SourceRecord | Revisit,
        kind: str,
        flags: RecordFlag = RecordFlag.IMPORTED,
        header_size: int = 0,
        offset: int = 0,
    ) -> NewCapture:
        """Its capture at a record's URL and time."""
        return NewCapture(
            record.uri,
            record.time,
            self.content,
            self.header,
            self.status,
            self.size,
            header_size,
            kind,
            int(flags),
            offset,
        )


def url_mark(url: str) -> int:
    """31 bits of the CRC-32 of a URL's canonical form (0 for a URL that has none)."""
    try:
        return zlib.crc32(canonical_url(url).encode("utf-8")) & _MARK_BITS
    except BadUrl:
        return 0


class SeenUrls:
    """The URLs an import captured, kept as bits of their marks in a fixed 1 MiB: whether it may
    have brought the original of a registry entry (false positives happen, misses never)."""

    def __init__(self) -> None:
        self._bits = bytearray(_SEEN_BITS // 8)

    def add(self, key: str) -> None:
        """Note a canonical URL (SourceRecord.key) captured."""
        bit = zlib.crc32(key.encode("utf-8")) % _SEEN_BITS
        self._bits[bit >> 3] |= 1 << (bit & 7)

    def may_resolve(self, entry: Capture) -> bool:
        """Whether the import captured one of the URLs a registry entry's marks stand for."""
        return self._has(entry.offset >> 32) or self._has(entry.offset & _MARK_BITS)

    def _has(self, mark: int) -> bool:
        bit = mark % _SEEN_BITS
        return bool(self._bits[bit >> 3] & 1 << (bit & 7))


def described(revisit: Revisit) -> tuple[str, bytes]:
    """The name and bytes of the content describing a revisit."""
    body = revisit.encode()
    return hashlib.sha256(body).hexdigest(), body


def pending_capture(revisit: Revisit, name: str, size: int) -> NewCapture:
    """The pending capture at the revisit's URL and time, naming its description `name`."""
    description = Stored(name, name, revisit.status, size)
    return description.capture(revisit, RecordKind.PENDING.name.lower(), offset=revisit.marks())


def registry_entry(pending: NewCapture) -> NewCapture:
    """The registry's entry for a pending capture."""
    return replace(pending, url=PENDING_REGISTRY_URL)


def resolved_entry(entry: Capture, size: int) -> NewCapture:
    """The copy of a registry entry that marks it resolved."""
    return NewCapture(
        url=PENDING_REGISTRY_URL,
        time=entry.time,
        content=entry.content,
        header=entry.header,
        status=entry.status,
        size=size,
        header_size=0,
        kind=RecordKind.PENDING.name.lower(),
        flags=int(entry.flags | RecordFlag.RESOLVED),
        offset=entry.offset,
    )


def unresolved(records: list[Capture]) -> list[Capture]:
    """The registry's entries that no copy marks resolved."""
    done = {(r.time, r.content) for r in records if r.flags & RecordFlag.RESOLVED}
    return [
        r
        for r in records
        if r.kind is RecordKind.PENDING
        and not r.flags & RecordFlag.RESOLVED
        and (r.time, r.content) not in done
    ]
