"""`dlweb export`: captures of the archive as one standard WARC 1.1 file.

The structure files are listed by the master and read from their holders; the captures chosen
(by URL prefix and date) are written in time order. The first capture of a content becomes a
response record with its header block and payload; a later capture of the same content becomes
a revisit record pointing at that first one (WARC-Refers-To-Target-URI and -Date), so the export
is deduplicated as the archive is. Request and metadata records kept by an import are written
again, linked to the response they came with, and so is a revisit kept pending since its original
is not archived (exchange/pending.py), as it was read; so are the records kept that are not
captures (warcinfo, conversion, a crawler's log: archive/structure.py, KEPT_RECORDS_URL), a
warcinfo before the records of its time. A response archived under the lookup URL of a request
other than GET (archive/requestkey.py) is written under the URL it was made from, as the WARC
file it came from had it. A content too large to hold whole is read twice instead, once for
the digests its record's header gives, once to write it. The file is written under a temporary
name and renamed when complete.
"""

import asyncio
import functools
import hashlib
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from archive.atomic import atomic_file
from archive.cluster import ClusterClient, LargeContent
from archive.errors import DlwebError
from archive.header_block import declares_chunked, parse_header_block
from archive.reading import STREAMED_OVER
from archive.requestkey import original_url
from archive.structure import (
    KEPT_RECORDS_URL,
    PENDING_REGISTRY_URL,
    REPLAYED_KINDS,
    Capture,
    RecordFlag,
    RecordKind,
)
from archive.structure_walk import read_structures, walk_structures
from archive.timestamps import format_iso
from archive.url_index import NoUrlIndex, UrlKeys
from archive.warc.reader import kept_url, split_kept
from archive.warc.writer import (
    HTTP_RESPONSE,
    PROFILE_IDENTICAL,
    PROFILE_NOT_MODIFIED,
    GzipMember,
    Record,
    compress,
    make_record,
    record_header,
    spelled_digest,
)

from .bundles import bundled_body
from .pending import Revisit
from .warcinfo import EXPORT_INFO

# Captures whose small contents are fetched together, in packs (ClusterClient.get_small_contents),
# the next chunk's while one is written: at most 2 x 128 x 2 contents of at most 1 MiB in memory,
# besides what the client's cache keeps (`dlweb export` gives it one, for bundles read again).
FETCH_CHUNK = 128
COMPRESSORS = 2
COMPRESSING_AHEAD = 8
# A content of more than STREAMED_OVER bytes (as the proxy streams, and too large for a pack) is
# never held whole: its record is written as it is read, compressed by pieces of this size.
STREAMED_PIECE = 1024 * 1024
_KEPT_WARCINFO = kept_url("warcinfo")


@dataclass(frozen=True, slots=True)
class Selection:
    url_prefix: str | None = None
    start: int | None = None
    end: int | None = None
    # A search index folder whose URL-key index names the structure files of a prefix's URLs,
    # so that only those are read rather than every file of the archive.
    url_index: Path | None = None

    def wants(self, capture: Capture) -> bool:
        return (self.start is None or capture.time >= self.start) and (
            self.end is None or capture.time <= self.end
        )


@dataclass
class ExportSummary:
    structures: int = 0
    records: Counter[str] = field(default_factory=Counter)
    bytes: int = 0
    chosen_by: Path | None = None  # the search index whose URL keys chose the files read

    def line(self, out: Path) -> str:
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(self.records.items()))
        chosen = "" if self.chosen_by is None else f" (the URL-key index in {self.chosen_by})"
        return (
            f"wrote {out}: {sum(self.records.values()):,} records ({kinds or 'none'}),"
            f" {self.bytes / 1e6:,.1f} MB, from {self.structures:,} structure files{chosen}"
        )


@dataclass(frozen=True, slots=True)
class _Entry:
    url: str
    capture: Capture

    @property
    def order(self) -> tuple[int, bool, str, int, str]:
        """Time order, a warcinfo kept before the records of its time (those of the file it
        describes), and each response just before the request and metadata it came with (a
        pending revisit too, which is written as a revisit)."""
        kind = self.capture.kind
        rank = int(RecordKind.REVISIT if kind is RecordKind.PENDING else kind)
        warcinfo = self.url == _KEPT_WARCINFO
        return self.capture.time, not warcinfo, original_url(self.url), rank, self.url


@dataclass(frozen=True, slots=True)
class _First:
    """The record that carried a content first, for the revisits of it."""

    uri: str
    date: str
    payload_digest: str


async def export_warc(
    client: ClusterClient,
    out: Path,
    selection: Selection,
    on_record: Callable[[int, int], None] | None = None,
) -> ExportSummary:
    """Write the selected captures to `out`; `on_record(done, total)` reports progress."""
    summary = ExportSummary()
    entries = await _select(client, selection, summary)
    entries.sort(key=lambda e: e.order)
    with atomic_file(out, shared=True) as fh:
        warcinfo = make_record(
            "warcinfo",
            None,
            time.time_ns() // 1000,
            [EXPORT_INFO],
            [("WARC-Filename", out.name), ("Content-Type", "application/warc-fields")],
        )
        fh.write(compress(warcinfo))
        summary.records["warcinfo"] += 1
        await _write_entries(client, fh, entries, summary, on_record)
        summary.bytes = fh.tell()
    return summary


async def _select(
    client: ClusterClient, selection: Selection, summary: ExportSummary
) -> list[_Entry]:
    entries: list[_Entry] = []

    def visit(_name: str, url: str, captures: list[Capture]) -> None:
        if url == PENDING_REGISTRY_URL or (
            selection.url_prefix is not None and not url.startswith(selection.url_prefix)
        ):
            return
        # A pending revisit that a capture at its time replaces was resolved since.
        captured = (
            {c.time for c in captures if c.kind in REPLAYED_KINDS}
            if any(c.kind is RecordKind.PENDING for c in captures)
            else set()
        )
        entries.extend(
            _Entry(url, c) for c in captures if _exported(c, captured) and selection.wants(c)
        )

    names = _prefixed(selection)
    if names is None:
        summary.structures += await walk_structures(client, visit)
        return entries
    summary.chosen_by = selection.url_index

    def found(name: str, url: str | None, captures: list[Capture]) -> None:
        if url is not None:
            summary.structures += 1
            visit(name, url, captures)

    await read_structures(client, names, found)
    return entries


def _prefixed(selection: Selection) -> list[str] | None:
    """The structure files of the URLs under the selection's prefix, by its URL-key index; None
    when every file must be read (no prefix, no index, or a prefix no range of keys holds)."""
    if selection.url_prefix is None or selection.url_index is None:
        return None
    try:
        with UrlKeys(selection.url_index) as keys:
            found = keys.with_prefix(selection.url_prefix)
    except NoUrlIndex:
        return None
    return None if found is None else [name for _, name in found]


def _exported(capture: Capture, captured: set[int]) -> bool:
    """Whether a record makes a WARC record: not a variant record, which indexes the URLs of
    one path for fuzzy lookups, nor a pending revisit resolved since (a capture at its time)."""
    if capture.kind is RecordKind.PENDING:
        return capture.time not in captured
    return capture.kind is not RecordKind.VARIANT


class _Plan:
    """What one capture becomes, decided in export order, and the files it needs."""

    def __init__(self, entry: _Entry, first_of_content: bool) -> None:
        self.entry = entry
        capture = entry.capture
        self.revisit = capture.kind in REPLAYED_KINDS and (
            not first_of_content or capture.kind is RecordKind.NOT_MODIFIED
        )
        self.header = capture.header
        self.content = None if self.revisit else capture.content
        self.names = [self.header] if self.content is None else [self.header, self.content]
        # A response's or resource's content of more than STREAMED_OVER bytes is streamed; a
        # request's or metadata record's is read whole, to split its kept fields off its block.
        self.whole_up_to = (
            STREAMED_OVER if capture.kind in REPLAYED_KINDS and not self.revisit else None
        )


@dataclass(frozen=True, slots=True)
class _Layout:
    """A response or resource record around its content: its block is `before`, the content,
    then `after`, and its payload starts at before[payload_from]. The same whether the content is
    in memory or streamed, so that both make the same record."""

    rec_type: str
    url: str
    fields: list[tuple[str, str]]
    before: list[bytes]
    after: list[bytes]
    payload_from: int

    def block(self, content: bytes) -> list[bytes]:
        return [*self.before, content, *self.after]


async def _write_entries(
    client: ClusterClient,
    out: BinaryIO,
    entries: list[_Entry],
    summary: ExportSummary,
    on_record: Callable[[int, int], None] | None,
) -> None:
    plans = _plans(entries)
    firsts: dict[str, _First] = {}
    responses: dict[tuple[str, int], str] = {}
    output = _Output(out, len(plans), on_record)
    chunks = [plans[start : start + FETCH_CHUNK] for start in range(0, len(plans), FETCH_CHUNK)]

    def fetch(chunk: list[_Plan]) -> asyncio.Task[dict[str, bytes]]:
        return asyncio.ensure_future(
            client.get_small_contents([name for plan in chunk for name in plan.names])
        )

    fetching = fetch(chunks[0]) if chunks else None
    try:
        for index, chunk in enumerate(chunks):
            assert fetching is not None
            contents = await fetching
            # The next chunk's contents come while this one is written.
            fetching = fetch(chunks[index + 1]) if index + 1 < len(chunks) else None
            for plan in chunk:
                header, found = await _fetched(client, plan, contents)
                if isinstance(found, LargeContent):
                    # Written as it is read, after the records before it.
                    await output.flush()
                    layout = _layout(plan, header, found.size)
                    when = plan.entry.capture.time
                    record_id, payload_digest = await _write_streamed(
                        client, out, output.compressing, layout, when, found
                    )
                    _remember(plan, layout.url, record_id, payload_digest, firsts, responses)
                    summary.records[layout.rec_type] += 1
                    output.wrote()
                    continue
                rec_type, record = _record_of(plan, header, found, firsts, responses)
                summary.records[rec_type] += 1
                await output.add(record)
        await output.flush()
    finally:
        if fetching is not None:
            fetching.cancel()
        await output.close()


def _plans(entries: list[_Entry]) -> list[_Plan]:
    """What each capture becomes, in export order: the first capture of a content carries it,
    the later ones are revisits of it."""
    seen: set[str] = set()
    plans = []
    for entry in entries:
        content = entry.capture.content
        plans.append(_Plan(entry, content not in seen))
        if (
            entry.capture.kind in REPLAYED_KINDS
            and entry.capture.kind is not RecordKind.NOT_MODIFIED
        ):
            seen.add(content)
    return plans


async def _fetched(
    client: ClusterClient, plan: _Plan, contents: dict[str, bytes]
) -> tuple[bytes, bytes | LargeContent | None]:
    """The header block of a capture and its content: the bytes, their holder when they are too
    large to hold whole, or None for a revisit; from the contents fetched for its chunk, else
    fetched alone."""
    header = contents.get(plan.header)
    if header is None:
        header = await client.get_header_block(plan.header)
    found: bytes | LargeContent | None = None
    if plan.content is not None:
        found = contents.get(plan.content)
        if found is None:
            found = await client.content_or_holder(plan.content, plan.whole_up_to)
    return header, found


class _Output:
    """The export file as records are added in order. Records are made in order here and
    compressed on COMPRESSORS threads (compressing lets go of the GIL) while the next contents
    are fetched; each is written once compressed, in order."""

    def __init__(
        self, out: BinaryIO, total: int, on_record: Callable[[int, int], None] | None
    ) -> None:
        self.out = out
        self.compressing = ThreadPoolExecutor(
            max_workers=COMPRESSORS, thread_name_prefix="dlweb-gzip"
        )
        self._compressed: deque[asyncio.Future[bytes]] = deque()
        self._loop = asyncio.get_running_loop()
        self._total = total
        self._on_record = on_record
        self._done = 0

    async def add(self, record: Record) -> None:
        """Have a record compressed on a thread, and write those before it until no more than
        COMPRESSING_AHEAD are left being compressed."""
        self._compressed.append(self._loop.run_in_executor(self.compressing, compress, record))
        await self._write_compressed(COMPRESSING_AHEAD)

    async def flush(self) -> None:
        """Write every record added, once compressed."""
        await self._write_compressed(0)

    def wrote(self) -> None:
        """Count a record written, for `on_record(done, total)`."""
        self._done += 1
        if self._on_record is not None:
            self._on_record(self._done, self._total)

    async def close(self) -> None:
        # What is being compressed is finished (the file is removed anyway), not the rest.
        await asyncio.to_thread(self.compressing.shutdown, True, cancel_futures=True)

    async def _write_compressed(self, left: int) -> None:
        while len(self._compressed) > left:
            self.out.write(await self._compressed.popleft())
            self.wrote()


def _record_of(
    plan: _Plan,
    header: bytes,
    content: bytes | None,
    firsts: dict[str, _First],
    responses: dict[tuple[str, int], str],
) -> tuple[str, Record]:
    """The record of one capture, and its WARC type; `content` is None for a revisit."""
    entry, capture = plan.entry, plan.entry.capture
    url, when = entry.url, capture.time
    if capture.kind in (RecordKind.REQUEST, RecordKind.METADATA):
        assert content is not None
        return _side_record(entry, content, responses)
    if capture.kind is RecordKind.PENDING:
        assert content is not None
        url = original_url(url)
        revisit = Revisit.decode(content, capture.content)
        fields = revisit.written_fields()
        record = make_record("revisit", url, when, [revisit.http_header or b""], fields)
        responses[(url, when)] = record.record_id
        return "revisit", record
    if content is None:
        url = original_url(url)
        first = firsts.get(capture.content)
        not_modified = capture.kind is RecordKind.NOT_MODIFIED
        fields = [
            ("Content-Type", HTTP_RESPONSE),
            ("WARC-Profile", PROFILE_NOT_MODIFIED if not_modified else PROFILE_IDENTICAL),
        ]
        if first is not None:
            fields += [
                ("WARC-Refers-To-Target-URI", first.uri),
                ("WARC-Refers-To-Date", first.date),
                ("WARC-Payload-Digest", first.payload_digest),
            ]
        record = make_record("revisit", url, when, [header], fields + _truncated(capture))
        responses[(url, when)] = record.record_id
        return "revisit", record
    layout = _layout(plan, header, len(content))
    record = make_record(
        layout.rec_type,
        layout.url,
        when,
        layout.block(content),
        layout.fields,
        payload_from=layout.payload_from,
    )
    assert record.payload_digest is not None
    _remember(plan, layout.url, record.record_id, record.payload_digest, firsts, responses)
    return layout.rec_type, record


def _side_record(
    entry: _Entry, content: bytes, responses: dict[tuple[str, int], str]
) -> tuple[str, Record]:
    """A request or metadata record, or a record kept that is not a capture, with its fields as
    they were read, in their order (its type, date and URI too), so that importing it again
    keeps the same body; and its WARC type."""
    capture, url, when = entry.capture, entry.url, entry.capture.time
    rec_type = capture.kind.name.lower()
    fields, block = split_kept(bundled_body(capture, content))
    if url.startswith(KEPT_RECORDS_URL):
        # Its own type, and its own URI if it had one (a warcinfo has none).
        rec_type = next((v for k, v in fields if k.lower() == "warc-type"), rec_type)
        return rec_type, make_record(rec_type, None, when, [block], fields)
    concurrent = responses.get((url, when))
    if concurrent is not None:
        fields.append(("WARC-Concurrent-To", concurrent))
    return rec_type, make_record(rec_type, url, when, [block], fields)


def _layout(plan: _Plan, header: bytes, size: int) -> _Layout:
    """The record of the first capture of a content of `size` bytes."""
    capture = plan.entry.capture
    url = original_url(plan.entry.url)
    if capture.flags & RecordFlag.SYNTHETIC_HEADERS:
        return _Layout("resource", url, [("Content-Type", _content_type(header))], [], [], 0)
    before, after = [header], []
    if declares_chunked(header):
        # The payload as one chunk, since the archived header block says it was sent chunked.
        before.append(f"{size:x}\r\n".encode() if size else b"")
        after.append(b"\r\n0\r\n\r\n" if size else b"0\r\n\r\n")
    fields = [("Content-Type", HTTP_RESPONSE), *_truncated(capture)]
    return _Layout("response", url, fields, before, after, payload_from=1)


def _truncated(capture: Capture) -> list[tuple[str, str]]:
    return [("WARC-Truncated", "unspecified")] if capture.flags & RecordFlag.TRUNCATED else []


def _remember(
    plan: _Plan,
    url: str,
    record_id: str,
    payload_digest: str,
    firsts: dict[str, _First],
    responses: dict[tuple[str, int], str],
) -> None:
    """What later records name: the first record of a content (its revisits) and the response
    of a URL and time (its request and metadata records)."""
    when = plan.entry.capture.time
    firsts.setdefault(plan.entry.capture.content, _First(url, format_iso(when), payload_digest))
    responses[(url, when)] = record_id


async def _write_streamed(
    client: ClusterClient,
    out: BinaryIO,
    compressing: ThreadPoolExecutor,
    layout: _Layout,
    when: int,
    held: LargeContent,
) -> tuple[str, str]:
    """Write the record of a content too large to hold, as it is read, compressed by pieces of
    about STREAMED_PIECE bytes (one on a thread while the next is read); its record id and
    payload digest. Each read of the content is verified: a wrong one ends the export."""
    block_digest, payload_digest = await _streamed_digests(client, layout, held)
    length = sum(len(part) for part in layout.before) + held.size
    length += sum(len(part) for part in layout.after)
    record_id, head = record_header(
        layout.rec_type, layout.url, when, layout.fields, block_digest, payload_digest, length
    )
    loop = asyncio.get_running_loop()
    member = GzipMember()
    compressed: asyncio.Future[bytes] | None = None
    pieces, size = [head, *layout.before], 0
    async for piece in client.stream_content(held):
        pieces.append(piece)
        size += len(piece)
        if size >= STREAMED_PIECE:
            if compressed is not None:
                out.write(await compressed)
            compressed = loop.run_in_executor(compressing, member.compress, pieces)
            pieces, size = [], 0
    if compressed is not None:
        out.write(await compressed)
    end = functools.partial(member.compress, [*pieces, *layout.after], last=True)
    out.write(await loop.run_in_executor(compressing, end))
    return record_id, payload_digest


async def _streamed_digests(
    client: ClusterClient, layout: _Layout, held: LargeContent
) -> tuple[str, str]:
    """The block and payload digests of a record whose content is streamed: its header comes
    before its block, so they are known first. A content's name is its SHA-256, so a block or
    payload that is the content alone takes no reading; one with more (the header block, chunk
    framing) takes a first read of the content."""
    named = spelled_digest(bytes.fromhex(held.name))
    payload_before = layout.before[layout.payload_from :]
    more = any(layout.after)
    block = hashlib.sha256(b"".join(layout.before)) if more or any(layout.before) else None
    payload = hashlib.sha256(b"".join(payload_before)) if more or any(payload_before) else None
    hashes = [digest for digest in (block, payload) if digest is not None]
    if hashes:
        async for piece in client.stream_content(held):
            for digest in hashes:
                digest.update(piece)
        for digest in hashes:
            digest.update(b"".join(layout.after))
    return (
        named if block is None else spelled_digest(block.digest()),
        named if payload is None else spelled_digest(payload.digest()),
    )


def _content_type(header: bytes) -> str:
    try:
        return parse_header_block(header).get("Content-Type") or "application/octet-stream"
    except DlwebError:
        return "application/octet-stream"
