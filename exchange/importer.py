"""`dlweb import`: WARC and ARC records into the cluster, each content stored once.

A thread reads the files (exchange/batches.py, archive/warc/reader.py: parsing, hashing, checking)
and hands over batches; the event loop turns each batch into captures and inserts it with the
cluster client, which uploads only the contents the index node does not know yet. Revisit records
are resolved to the content of the record they repeat: from the records already read, by their
payload digest, or else from the archive (WARC-Refers-To-Target-URI and -Date, or the same URL's
earlier captures); one whose original is in neither is kept pending until an import brings it
(exchange/pending.py), or left as it is when the archive keeps it pending already. A record is
inserted only once it was read whole and checked, so a damaged one leaves nothing. The response
to a request other than GET or HEAD (a POST of a form or of JSON) is inserted under the lookup URL
its request makes (archive/requestkey.py), as pywb indexes it, so that the proxy finds it by the
method and body a browser sends again. The captures of records read again, from the same file or
from an export of the archive, are not added twice (archive/structure.py, `Capture.identity`).
The records that are not captures (a warcinfo, a conversion, a crawler's log under `metadata://`
or `urn:`) are kept whole for export, as metadata records at a URL of KEPT_RECORDS_URL; but the
warcinfo a dlweb export starts with, which each export makes anew.
"""

import asyncio
import dataclasses
import functools
import hashlib
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from archive.cluster import ClusterClient, NewCapture
from archive.errors import DlwebError, NotFound
from archive.header_block import declares_chunked, encode_header_block
from archive.insert_queue import InsertQueue
from archive.requestkey import lookup_url
from archive.structure import (
    PENDING_REGISTRY_URL,
    REPLAYED_KINDS,
    Capture,
    RecordFlag,
    RecordKind,
)
from archive.timestamps import BadTime, parse_time
from archive.urlkey import BadUrl, canonical_url, structure_name
from archive.warc.dechunk import Dechunker
from archive.warc.digests import Digest, sha256_digest
from archive.warc.reader import Ignored, Item, Problem, SourceRecord, kept_fields

from .batches import BatchReader, discard_all
from .bundles import Bundle, Bundler, slice_field
from .pending import (
    BadDescription,
    Revisit,
    SeenUrls,
    Stored,
    described,
    pending_capture,
    registry_entry,
    resolved_entry,
    unresolved,
)
from .warcinfo import EXPORT_INFO

INSERTS_AHEAD = 3
REFERS_TO_SLACK = 1_000_000  # WARC-Refers-To-Date is often given to the second
SAME_URL_CANDIDATES = 5
# Revisits looked for in the archive at once, at the end of a file or of an import.
LOOKUPS_AT_ONCE = 16
NOT_MODIFIED_PROFILE = "server-not-modified"
MAX_ORIGINALS = 500_000  # about 200 MB of memory at most
# A request body larger than this (an upload) is folded into its lookup URL from its start only.
MAX_FOLDED_BODY = 16 * 1024 * 1024
_PLAIN_METHODS = (b"GET ", b"HEAD ")
EXPORT_WARCINFO = "the warcinfo of a dlweb export"


@dataclass
class ImportSummary:
    files: int = 0
    records: Counter[str] = field(default_factory=Counter)
    captures: int = 0
    added: int = 0
    new_contents: int = 0
    stored_bytes: int = 0
    read_bytes: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    # Revisits whose original is not archived yet: kept so by this import, resolved by it, and
    # pending in the archive once it ended.
    pending_kept: int = 0
    pending_resolved: int = 0
    pending_left: int = 0

    @property
    def deduplicated_bytes(self) -> int:
        return max(0, self.read_bytes - self.stored_bytes)

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(self.records.items()))
        total = sum(self.records.values())
        lines = [
            f"read {self.files} file{'s' if self.files != 1 else ''}:"
            f" {total:,} records imported ({kinds or 'none'})",
            f"  {self.added:,} new captures ({self.captures - self.added:,} already archived)",
            f"  {self.new_contents:,} new contents, {_mb(self.stored_bytes)} stored;"
            f" {_mb(self.deduplicated_bytes)} deduplicated",
        ]
        if self.pending_kept or self.pending_resolved or self.pending_left:
            lines.append(
                f"  {self.pending_left:,} revisits pending, their originals not archived yet"
                f" ({self.pending_kept:,} kept by this import); {self.pending_resolved:,}"
                " pending revisits resolved"
            )
        if self.ignored:
            reasons = "; ".join(f"{why}: {n:,}" for why, n in sorted(self.ignored.items()))
            lines.append(f"  {sum(self.ignored.values()):,} records not imported ({reasons})")
        if self.problems:
            counts = Counter(_problem_kind(p.reason) for p in self.problems)
            reasons = "; ".join(f"{why}: {n:,}" for why, n in sorted(counts.items()))
            lines.append(
                f"  {len(self.problems):,} records skipped with problems ({reasons}; listed above)"
            )
        return lines


_PROBLEM_KINDS = (
    ("lookup URL", "lookup URL not archivable"),
    ("does not match", "digest mismatch"),
    ("larger than the limit", "too large"),
    ("outside the dates", "date out of range"),
    ("gzip", "damaged gzip member"),
    ("truncated record", "truncated record"),
    ("does not end where", "wrong Content-Length"),
    ("malformed", "malformed header"),
)


def _problem_kind(reason: str) -> str:
    """The kind of a problem, for the summary's count by reason."""
    return next((kind for text, kind in _PROBLEM_KINDS if text in reason), "unsupported record")


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


@dataclass
class _Pending:
    """A revisit whose original was not among the records read before it."""

    record: SourceRecord
    digest: Digest | None


# A revisit record as read, or as kept pending.
_Revisiting = SourceRecord | Revisit


class Importer:
    def __init__(self, client: ClusterClient, report: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.report = report or (lambda line: print(line, file=sys.stderr))
        self.summary = ImportSummary()
        self.originals: dict[Digest, Stored] = {}
        # The URLs captured, for the pending revisits this import may resolve at its end.
        self.seen = SeenUrls()
        self.bundler = Bundler()
        # Called after each batch is inserted, with the bytes of the files imported so far.
        self.on_batch: Callable[[int, ImportSummary], None] | None = None

    async def run(self, reading: BatchReader) -> ImportSummary:
        """Import the batches of a started reader (which the caller closes)."""
        await self.client.connect()
        # Looked for while the first batches are read: when there is none, the lookup waits out
        # the whole lookup window, which the import then does not wait for at its end.
        registry = asyncio.create_task(self._registry_exists())
        inserts = InsertQueue(self.client, INSERTS_AHEAD)
        pending: list[_Pending] = []
        exchanges = _Exchanges()
        try:
            while (batch := await reading.next()) is not None:
                end_of_file = batch.end_of is not None
                items = exchanges.order(batch.items, end_of_file)
                captures, bodies = self._captures(items, pending, end_of_file)
                await inserts.put(captures, _body_of(bodies), functools.partial(discard_all, items))
                if self.on_batch is not None:
                    self.on_batch(batch.position, self.summary)
                if batch.end_of is not None:
                    self.summary.files += 1
                    await inserts.join()
                    await self._resolve_pending(pending, inserts)
                    pending = []
            await inserts.join()
            if await registry or self.summary.pending_kept:
                await self._resolve_registered(inserts)
        finally:
            registry.cancel()
            await asyncio.gather(registry, return_exceptions=True)
            await inserts.cancel()
        done = inserts.summary
        self.summary.captures = done.captures
        self.summary.added = done.added
        self.summary.new_contents = done.uploaded
        self.summary.stored_bytes = done.bytes
        return self.summary

    # -- the event loop --------------------------------------------------------------------------

    def _captures(
        self, items: list[Item], pending: list[_Pending], end_of_file: bool
    ) -> tuple[list[NewCapture], dict[str, bytes | Path]]:
        """The captures a batch becomes and the bodies they name; problems are reported,
        revisits of an original not read yet are kept in `pending`, and side records wait for
        their bundle to close (at the latest at the end of the file)."""
        captures: list[NewCapture] = []
        bodies: dict[str, bytes | Path] = {}
        for item in items:
            if isinstance(item, Problem):
                self._problem(item)
            elif isinstance(item, Ignored):
                self.summary.ignored[item.reason] += 1
            elif _export_warcinfo(item):
                self.summary.ignored[EXPORT_WARCINFO] += 1
            else:
                self.summary.read_bytes += item.read_bytes
                if self.bundler.takes(item):
                    self.summary.records[item.type] += 1
                    self._bundled(self.bundler.add(item), captures, bodies)
                elif (capture := self._capture(item, bodies, pending)) is not None:
                    captures.append(capture)
        if end_of_file:
            self._bundled(self.bundler.close(), captures, bodies)
        return captures, bodies

    @staticmethod
    def _bundled(
        bundle: Bundle | None, captures: list[NewCapture], bodies: dict[str, bytes | Path]
    ) -> None:
        """The captures of the records of a closed bundle, and the bundle as their content."""
        if bundle is None:
            return
        bodies[bundle.name] = bundle.body
        flags = RecordFlag.IMPORTED | RecordFlag.BUNDLED
        for record, start, length in bundle.records:
            stored = Stored(bundle.name, bundle.name, record.status, len(bundle.body))
            kind = "metadata" if record.kept else record.type
            captures.append(
                stored.capture(
                    record, kind, flags, offset=slice_field(start, length, record.body.name)
                )
            )

    def _problem(self, problem: Problem) -> None:
        self.summary.problems.append(problem)
        self.report(f"skipped: {problem}")

    def _capture(
        self, record: SourceRecord, bodies: dict[str, bytes | Path], pending: list[_Pending]
    ) -> NewCapture | None:
        """The capture a record becomes (None for a revisit resolved later); its bodies go in
        `bodies`."""
        if record.type == "revisit":
            digest = record.payload_digest
            original = self.originals.get(digest) if digest is not None else None
            if original is None:
                pending.append(_Pending(record, digest))
                return None
            self.summary.records["revisit"] += 1
            self.seen.add(record.key)
            return self._revisit(record, original, bodies)
        self.summary.records[record.type] += 1
        content = record.body.name
        bodies[content] = record.body.body()
        kind, flags, status = RecordKind.RESPONSE, RecordFlag.IMPORTED, record.status
        if record.type == "response":
            assert record.http_header is not None
            header = record.http_header
            if record.truncated or record.field("WARC-Truncated"):
                flags |= RecordFlag.TRUNCATED
        elif record.type == "resource" and not record.kept:
            content_type = record.field("Content-Type") or "application/octet-stream"
            header = encode_header_block(
                200,
                "OK",
                [("Content-Type", content_type), ("Content-Length", str(record.body.size))],
            )
            flags |= RecordFlag.SYNTHETIC_HEADERS
            status = 200
        else:
            # The stored body holds the WARC fields and the block: no header block of its own. A
            # record that is not a capture (warcinfo, a crawler's log...) is kept so too.
            kind = RecordKind.REQUEST if record.type == "request" else RecordKind.METADATA
            header = b""
        header_name = hashlib.sha256(header).hexdigest() if header else content
        if header:
            bodies[header_name] = header
        stored = Stored(content, header_name, status, record.body.size)
        if kind is RecordKind.RESPONSE:
            if record.payload_digest is not None:
                self._remember(record.payload_digest, stored)
            self._remember(sha256_digest(content), stored)
            self.seen.add(record.key)
        offset = record.payload_digest.key() if record.payload_digest else 0
        return stored.capture(record, kind.name.lower(), flags, len(header), offset)

    def _remember(self, digest: Digest, original: Stored) -> None:
        """Keep the latest originals by digest; past MAX_ORIGINALS the oldest are forgotten (a
        revisit of one is then resolved from the archive)."""
        self.originals.pop(digest, None)
        self.originals[digest] = original
        if len(self.originals) > MAX_ORIGINALS:
            del self.originals[next(iter(self.originals))]

    def _revisit(
        self, record: _Revisiting, original: Stored, bodies: dict[str, bytes | Path]
    ) -> NewCapture:
        """The capture of a revisit: its original's content, under its own header block if it
        has one."""
        stored, header = original, record.http_header or b""
        if header:
            header_name = hashlib.sha256(header).hexdigest()
            bodies[header_name] = header
            stored = Stored(original.content, header_name, record.status, original.size)
        profile = record.field("WARC-Profile") or ""
        kind = RecordKind.NOT_MODIFIED if NOT_MODIFIED_PROFILE in profile else RecordKind.REVISIT
        flags = RecordFlag.IMPORTED
        if record.field("WARC-Truncated"):
            flags |= RecordFlag.TRUNCATED
        return stored.capture(record, kind.name.lower(), flags, len(header))

    async def _resolve_pending(self, pending: list[_Pending], inserts: InsertQueue) -> None:
        """Revisits whose original came later in the file or is already in the archive; the
        others are kept pending (exchange/pending.py)."""
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def original_of(item: _Pending) -> Stored | None:
            found = self.originals.get(item.digest) if item.digest is not None else None
            if found is not None:
                return found
            async with gate:
                return await self._find_in_archive(item.record, item.digest)

        async def kept_already(item: _Pending, original: Stored | None) -> bool:
            if original is not None:
                return False
            async with gate:
                return await self._pending_already(Revisit.of(item.record))

        originals = await asyncio.gather(*map(original_of, pending))
        kept = await asyncio.gather(*map(kept_already, pending, originals))
        captures: list[NewCapture] = []
        entries: list[NewCapture] = []
        bodies: dict[str, bytes | Path] = {}
        for item, original, already in zip(pending, originals, kept, strict=True):
            record = item.record
            self.summary.records["revisit"] += 1
            if original is not None:
                self.seen.add(record.key)
                captures.append(self._revisit(record, original, bodies))
                continue
            if already:
                continue
            revisit = Revisit.of(record)
            name, body = described(revisit)
            bodies[name] = body
            captures.append(pending_capture(revisit, name, len(body)))
            entries.append(registry_entry(captures[-1]))
            self.summary.pending_kept += 1
        await inserts.put(captures, _body_of(bodies))
        await inserts.join()
        if entries:
            # Not counted as captures: the registry is the archive's own.
            await self.client.insert(entries, _body_of(bodies))

    async def _pending_already(self, revisit: Revisit) -> bool:
        """Whether the archive keeps this revisit pending already: imported before, from this
        file or from an export of the archive, whose description differs in the fields an
        export makes anew."""
        try:
            found = (await self.client.closest(revisit.uri, revisit.time, "exact")).capture
            if found.kind is not RecordKind.PENDING:
                return False
            kept = Revisit.decode(await self.client.get_content(found.content), found.content)
        except (NotFound, BadDescription):
            return False
        return kept.same_as(revisit)

    async def _registry_exists(self) -> bool:
        """Whether the registry of pending revisits holds an entry."""
        try:
            await self.client.closest(PENDING_REGISTRY_URL, 0)
        except NotFound:
            return False
        return True

    async def _resolve_registered(self, inserts: InsertQueue) -> None:
        """Resolve the pending revisits whose original this import brought, from the registry
        read once every capture of the import is stored."""
        try:
            _, records = await self.client.read_structure(
                structure_name(PENDING_REGISTRY_URL), PENDING_REGISTRY_URL
            )
        except NotFound:
            return
        waiting = unresolved(records)
        gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

        async def resolve(entry: Capture) -> tuple[Capture, bytes, Revisit, Stored | None]:
            async with gate:
                body = await self.client.get_content(entry.content)
                revisit = Revisit.decode(body, entry.content)
                digest = revisit.payload_digest
                original = self.originals.get(digest) if digest is not None else None
                if original is None:
                    original = await self._find_in_archive(revisit, digest)
            return entry, body, revisit, original

        candidates = [entry for entry in waiting if self.seen.may_resolve(entry)]
        captures: list[NewCapture] = []
        marks: list[NewCapture] = []
        bodies: dict[str, bytes | Path] = {}
        for entry, body, revisit, original in await asyncio.gather(*map(resolve, candidates)):
            if original is not None:
                captures.append(self._revisit(revisit, original, bodies))
                marks.append(resolved_entry(entry, len(body)))
                bodies[entry.content] = body
        if captures:
            await inserts.put(captures, _body_of(bodies))
            await inserts.join()
            # Marked only once the revisits are stored: an import that fails in between leaves
            # them to be resolved again (the same captures, which are not added twice).
            await self.client.insert(marks, _body_of(bodies))
        self.summary.pending_resolved = len(captures)
        self.summary.pending_left = len(waiting) - len(captures)

    async def _find_in_archive(self, record: _Revisiting, digest: Digest | None) -> Stored | None:
        """The original of a revisit in the archive: the capture its WARC-Refers-To-Target-URI
        and -Date name, else one of the latest captures of its own URL before it that has its
        payload digest."""
        target = record.field("WARC-Refers-To-Target-URI")
        date = record.field("WARC-Refers-To-Date")
        if target and date:
            try:
                at = parse_time(date)
                capture = (await self.client.closest(target.strip().strip("<>"), at)).capture
            except (NotFound, BadTime, BadUrl):
                capture = None
            # A pending revisit found there is not an original.
            if (
                capture is not None
                and capture.kind in REPLAYED_KINDS
                and abs(capture.time - at) <= REFERS_TO_SLACK
            ):
                return Stored(capture.content, capture.header, capture.status, 0)
        if digest is None:
            return None
        try:
            earlier = [c for c in await self.client.captures(record.uri) if c.time <= record.time]
            for capture in reversed(earlier[-SAME_URL_CANDIDATES:]):
                if capture.offset == digest.key() or digest == sha256_digest(capture.content):
                    return Stored(capture.content, capture.header, capture.status, 0)
                if digest.algorithm != "sha256":
                    data = await self.client.get_content(capture.content)
                    if hashlib.new(digest.algorithm, data).digest() == digest.value:
                        return Stored(capture.content, capture.header, capture.status, len(data))
        except NotFound:
            return None
        return None


@dataclass(frozen=True, slots=True)
class _Folded:
    """What a request other than GET or HEAD folds into the lookup URL of its response."""

    method: str
    content_type: str | None
    body: bytes


class _Exchanges:
    """Puts each response and revisit under the URL its request makes: the lookup URL of a
    request other than GET or HEAD, else its own URI.

    A request goes with a response when either names the other's WARC-Record-ID in
    WARC-Concurrent-To, or, when neither names a record, when they are next to each other with
    the same WARC-Target-URI; beside a GET request the URI alone decides, since the URL is the
    response's own either way. Some tools write the request before its response (wget), others
    after it (warcio, pywb), so a response with no request just before it is held back until
    the next request or response comes, into the next batch if need be: one record at most.
    """

    def __init__(self) -> None:
        self._held: SourceRecord | None = None
        # The last request no response took yet, and what it folds (None for GET and HEAD).
        self._request: SourceRecord | None = None
        self._folded: _Folded | None = None

    def order(self, items: list[Item], end_of_file: bool) -> list[Item]:
        """The items to insert now, in file order but for a response held back or let go."""
        out: list[Item] = []
        for item in items:
            if not isinstance(item, SourceRecord):
                out.append(item)
            elif item.type == "request":
                self._on_request(item, out)
            elif item.type in ("response", "revisit"):
                self._on_response(item, out)
            else:
                out.append(item)
        if end_of_file:
            if self._held is not None:
                out.append(self._held)
            self._held, self._request, self._folded = None, None, None
        return out

    def _on_request(self, request: SourceRecord, out: list[Item]) -> None:
        held, self._held = self._held, None
        head = request.http_header
        folded = _folded(request, head) if head and not head.startswith(_PLAIN_METHODS) else None
        self._request, self._folded = request, folded
        if held is not None:
            if folded is None:
                taken = held.uri == request.uri
                out.append(held)
            else:
                taken = _paired(held, request)
                out.append(_keyed(held, folded) if taken else held)
            if taken:
                self._request, self._folded = None, None
        out.append(request)

    def _on_response(self, response: SourceRecord, out: list[Item]) -> None:
        if self._held is not None:
            out.append(self._held)
            self._held = None
        request, folded = self._request, self._folded
        self._request, self._folded = None, None
        if request is None:
            self._held = response
        elif folded is None:
            if request.uri == response.uri:
                out.append(response)
            else:
                self._held = response
        elif _paired(response, request):
            out.append(_keyed(response, folded))
        else:
            self._held = response


def _folded(request: SourceRecord, head: bytes) -> _Folded:
    """The method, Content-Type and body of a request record, read while its body is at hand."""
    method = head.split(b" ", 1)[0].decode("latin-1")
    start = len(kept_fields(request.fields)) + len(head)
    stored = request.body.body()
    if isinstance(stored, Path):
        with open(stored, "rb") as fh:
            fh.seek(start)
            body = fh.read(MAX_FOLDED_BODY)
    else:
        body = stored[start : start + MAX_FOLDED_BODY]
    if declares_chunked(head):
        dechunker = Dechunker()
        body = dechunker.feed(body) + dechunker.finish()
    return _Folded(method, _header_value(head, b"content-type"), body)


def _header_value(head: bytes, name: bytes) -> str | None:
    """The first value of a field of an HTTP header block (`name` in lower case)."""
    for line in head.split(b"\n")[1:]:
        field, sep, value = line.partition(b":")
        if sep and field.strip().lower() == name:
            return value.strip().decode("latin-1")
    return None


def _paired(response: SourceRecord, request: SourceRecord) -> bool:
    response_links = _links(response)
    request_links = _links(request)
    if _record_id(request) in response_links or _record_id(response) in request_links:
        return True
    return not response_links and not request_links and response.uri == request.uri


def _links(record: SourceRecord) -> set[str]:
    """The records a record's WARC-Concurrent-To fields name."""
    return {_bare_id(v) for k, v in record.fields if k.lower() == "warc-concurrent-to"} - {""}


def _record_id(record: SourceRecord) -> str:
    return _bare_id(record.field("WARC-Record-ID") or "")


def _bare_id(value: str) -> str:
    return value.strip().strip("<>")


def _keyed(response: SourceRecord, folded: _Folded) -> Item:
    """The response under its lookup URL, or a problem when that URL cannot be archived."""
    key = lookup_url(folded.method, response.uri, folded.content_type, folded.body)
    if key == response.uri:
        return response
    try:
        canonical = canonical_url(key)
    except BadUrl as exc:
        response.body.discard()
        reason = f"the lookup URL of its {folded.method} request cannot be archived: {exc}"
        return Problem(response.path, response.offset, reason)
    return dataclasses.replace(response, uri=key, key=canonical)


def _export_warcinfo(record: SourceRecord) -> bool:
    """Whether a record is the warcinfo a dlweb export starts with, which describes that export
    only and is written anew by each: keeping it would make every re-import add one."""
    if record.type != "warcinfo":
        return False
    body = record.body.body()
    return isinstance(body, bytes) and body.endswith(b"\r\n\r\n" + EXPORT_INFO)


def _body_of(bodies: dict[str, bytes | Path]) -> Callable[[str], bytes | Path]:
    def body_of(name: str) -> bytes | Path:
        try:
            return bodies[name]
        except KeyError:
            raise DlwebError(f"the index node asked for {name}, which this import lacks") from None

    return body_of
