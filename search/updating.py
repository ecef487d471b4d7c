"""Bringing a search index in step with structure files: what a rebuild does for every file of
the archive and the indexer for each file the master says changed.

For each file, the versions of its URL (versions.py) are compared with those the catalog says are
indexed (catalog.py): a version gone or changed (an older capture imported later starts it
earlier, or its payload differs) is deleted by its `version` term, a new one is read from the
cluster (its header block first, so that the payload of an image or a video is never fetched),
extracted (extract.py) on worker processes (extract_workers.py) while the next ones are fetched, and
added in place of any document of the same term. Nothing is visible before `commit`, which writes tantivy, then the
catalog with the new position in the change feed. A recorded stream's chunk log is a version too,
whose titles are each a document of their own (stream_titles.py), all under the log's term.

The archive is not trusted: a version whose reading fails, or whose document tantivy refuses (a
date it cannot hold, a URL too long to key), is set aside with its reason, logged and listed in
the catalog, and the others are indexed; one such version never stops an update.
"""

import asyncio
import logging
from collections import Counter, deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import tantivy

from archive.cluster import ClusterClient, LargeContent
from archive.errors import DlwebError, NotFound
from archive.header_block import HeaderBlock, parse_header_block
from archive.requestkey import original_url
from archive.streams.log import LOG_TYPE, REGISTRY_URL
from archive.structure import PENDING_REGISTRY_URL, REPLAYED_KINDS, Capture, RecordKind

from .catalog import Catalog, FileEntry, SetAside
from .domains import host_of, registered_domain
from .errors import NotIndexed
from .extract import (
    EXTRACTION_FAILED,
    MAX_BYTES,
    MAX_ERROR,
    TOO_LARGE,
    Extracted,
    Failed,
    indexed_type,
)
from .extract_workers import Extractors, Outcome
from .index import Page, new_writer, version_key
from .stream_titles import STREAM_TITLE_TYPE, StreamTitles
from .versions import Version, versions

log = logging.getLogger(__name__)

CHUNK = 128  # versions whose header blocks, then payloads, are fetched together
IN_FLIGHT = 2  # chunks extracted or added at once
NO_DOCUMENT = "set aside: the index cannot take it"  # tantivy refused its document
SET_ASIDE_SHOWN = 10  # the last versions set aside that a summary keeps
MAX_URL_SHOWN = 300  # characters of a URL set aside kept in the log and the catalog


@dataclass
class UpdateSummary:
    """What updates read and indexed, and why they left captures out."""

    files: int = 0
    versions: int = 0  # read from the cluster to be indexed
    documents: int = 0  # added to the index
    removed: int = 0  # versions deleted from the index
    skipped: Counter[str] = field(default_factory=Counter)  # set aside too, by reason
    # The last versions set aside (the catalog lists them all).
    set_aside: deque[SetAside] = field(default_factory=lambda: deque(maxlen=SET_ASIDE_SHOWN))

    def as_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "versions": self.versions,
            "documents": self.documents,
            "removed": self.removed,
            "skipped": dict(sorted(self.skipped.items())),
            "set_aside": [entry.as_json() for entry in self.set_aside],
        }


@dataclass
class Indexed:
    """What indexing fetched versions did: the documents added, the versions left out by
    reason, and those set aside."""

    documents: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    set_aside: list[SetAside] = field(default_factory=list)

    def add(self, other: "Indexed") -> None:
        self.documents += other.documents
        self.skipped.update(other.skipped)
        self.set_aside += other.set_aside


@dataclass(frozen=True, slots=True)
class FileState:
    """A structure file as read from the cluster: its URL and records, or none when it is gone."""

    name: str
    url: str | None
    captures: list[Capture]


@dataclass(frozen=True, slots=True)
class Fetched:
    version: Version
    header: HeaderBlock
    payload: bytes
    structure: str  # the name of the structure file that lists it


def page_versions(state: FileState) -> list[Version]:
    """The versions of a file's URL that are pages: none for a response to another method than
    GET (archived under a lookup URL), the registry of pending revisits or that of recorded
    streams (whose logs are the first of each stream's, indexed there)."""
    if (
        state.url is None
        or state.url in (PENDING_REGISTRY_URL, REGISTRY_URL)
        or original_url(state.url) != state.url
    ):
        return []
    return versions(state.url, state.captures)


class Updater:
    """Updates of one index folder: its tantivy writer and its catalog."""

    def __init__(
        self, index: tantivy.Index, folder: Path, client: ClusterClient, fresh: bool = False
    ) -> None:
        self.client = client
        self.fresh = fresh  # a new, empty index: nothing to replace
        self.writer = new_writer(index)
        self.catalog = Catalog(folder)
        self.extractors = Extractors()
        self.summary = UpdateSummary()
        self._entries: list[FileEntry] = []
        self._redone: list[tuple[str, int]] = []  # versions deleted, to be added again or gone
        self._set_aside: list[SetAside] = []

    def close(self) -> None:
        self.extractors.close()
        self.catalog.close()

    async def apply(
        self,
        files: Iterable[FileState],
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Bring these files' documents up to date (seen once committed); `on_progress(done,
        total)` reports the versions read."""
        files = list(files)
        names = [f.name for f in files]
        known = await asyncio.to_thread(self.catalog.versions_of, names)
        unfinished = await asyncio.to_thread(self.catalog.pending_of, names)
        added: list[tuple[str, Version]] = []  # each with its structure file's name
        for state in files:
            wanted = {v.capture.time: v for v in page_versions(state)}
            indexed = known[state.name]
            if state.name in unfinished:  # an update cut short: redone whole
                for time in unfinished[state.name] | set(indexed):
                    self._delete(state.name, time)
                indexed = {}
            for time, digest in indexed.items():
                if time not in wanted or wanted[time].capture.content != digest:
                    self._delete(state.name, time)
                    self.summary.removed += 1
            new = [v for t, v in wanted.items() if indexed.get(t) != v.capture.content]
            if not self.fresh:  # an update made again after a crash finds them in tantivy
                for version in new:
                    self._delete(state.name, version.capture.time)
            added += [(state.name, version) for version in new]
            listed = state.url is not None and state.url != PENDING_REGISTRY_URL
            self._entries.append(
                FileEntry(
                    state.name,
                    state.url if listed and _listed(state.captures) else None,
                    {t: v.capture.content for t, v in wanted.items()},
                )
            )
        self.summary.files += len(files)
        added.sort(key=lambda pair: (pair[1].url, pair[1].capture.time))
        self.summary.versions += len(added)
        await self._index(added, on_progress)

    def commit(self, position: tuple[str | None, int]) -> None:
        """Make the updates seen, then record them and the feed's position in the catalog (the
        versions tantivy may hold listed as pending first: catalog.py)."""
        if not self.fresh:
            self.catalog.mark_pending(self._entries)
        self.writer.commit()
        self.catalog.record(self._entries, position, self._redone, self._set_aside)
        self._entries = []
        self._redone = []
        self._set_aside = []

    def rollback(self) -> None:
        self.writer.rollback()
        self._entries = []
        self._redone = []
        self._set_aside = []

    def set_aside_count(self) -> int:
        """How many versions this update (since its last commit) set aside."""
        return len(self._set_aside)

    def _delete(self, structure: str, time: int) -> None:
        """Delete a version's document (to be added again, or gone)."""
        self.writer.delete_documents_by_term("version", version_key(structure, time))
        self._redone.append((structure, time))

    async def _index(
        self, added: list[tuple[str, Version]], on_progress: Callable[[int, int], None] | None
    ) -> None:
        """Fetch the versions by chunks, and index them as they come."""

        async def fetched() -> AsyncIterator[list[Fetched]]:
            for start in range(0, len(added), CHUNK):
                chunk = added[start : start + CHUNK]
                yield await _fetch(self.client, chunk, self.summary.skipped)
                if on_progress is not None:
                    on_progress(min(start + CHUNK, len(added)), len(added))

        indexed = await index_fetched(fetched(), self.extractors, self.writer)
        self.summary.documents += indexed.documents
        self.summary.skipped.update(indexed.skipped)
        self.summary.set_aside.extend(indexed.set_aside)
        self._set_aside += indexed.set_aside


async def index_fetched(
    chunks: AsyncIterable[list[Fetched]], extractors: Extractors, writer: tantivy.IndexWriter
) -> Indexed:
    """Extract each chunk of fetched versions on the workers, then add their documents on a
    thread, in chunk order, while the next chunks are fetched and extracted (IN_FLIGHT at
    once, so that the workers start on one while the other is added); what was added, left out
    and set aside."""
    loop = asyncio.get_running_loop()
    indexed = Indexed()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dlweb-search") as adding:

        async def index(chunk: list[Fetched], before: asyncio.Future[Indexed] | None) -> Indexed:
            outcomes = await extractors.extract(
                [(item.version.url, item.header, item.payload) for item in chunk]
            )
            if before is not None:
                await before  # the chunk before is added first
            return await loop.run_in_executor(adding, _add_chunk, writer, chunk, outcomes)

        in_flight: deque[asyncio.Future[Indexed]] = deque()
        try:
            async for chunk in chunks:
                if len(in_flight) >= IN_FLIGHT:
                    indexed.add(await in_flight.popleft())
                in_flight.append(
                    asyncio.ensure_future(index(chunk, in_flight[-1] if in_flight else None))
                )
            while in_flight:
                indexed.add(await in_flight.popleft())
        finally:
            for pending in in_flight:
                pending.cancel()
    return indexed


def _listed(captures: list[Capture]) -> bool:
    """Whether the CDX API lists a capture of these (the URL-key index holds their URL)."""
    return any(capture.kind in REPLAYED_KINDS for capture in captures)


async def _fetch(
    client: ClusterClient, chunk: list[tuple[str, Version]], skipped: Counter[str]
) -> list[Fetched]:
    """The header blocks of `chunk` (versions, each with its structure file's name), then the
    payloads of those of indexed types."""
    names = [version.capture.header for _, version in chunk]
    blocks = await client.get_small_contents(names)
    readable: list[tuple[str, Version, HeaderBlock]] = []
    for structure, version in chunk:
        name = version.capture.header
        try:
            block = blocks.get(name) or await client.get_header_block(name)
            header = parse_header_block(block, f"header block {name}")
            kind = indexed_type(header)
            if (kind == LOG_TYPE) != (version.capture.kind is RecordKind.STREAM_LOG):
                # A page that says it is a stream log, or a stream log that says it is a page.
                raise NotIndexed("not HTML or text", kind)
        except NotIndexed as exc:
            skipped[exc.reason] += 1
            continue
        except NotFound:
            skipped["header block missing from the cluster"] += 1
            continue
        except DlwebError:
            skipped["unreadable header block"] += 1
            continue
        readable.append((structure, version, header))
    payloads = await client.get_small_contents([v.capture.content for _, v, _ in readable])
    fetched = []
    for structure, version, header in readable:
        name = version.capture.content
        payload: bytes | LargeContent | None = payloads.get(name)
        if payload is None:
            try:
                payload = await client.content_or_holder(name, MAX_BYTES)
            except NotFound:
                skipped["payload missing from the cluster"] += 1
                continue
        if isinstance(payload, LargeContent):
            skipped[TOO_LARGE] += 1
            continue
        fetched.append(Fetched(version, header, payload, structure))
    return fetched


def _add_chunk(
    writer: tantivy.IndexWriter, fetched: list[Fetched], outcomes: list[Outcome]
) -> Indexed:
    """Add the document of each version extracted (on the adding thread); what was added, left
    out and set aside."""
    indexed = Indexed()
    for item, got in zip(fetched, outcomes, strict=True):
        if isinstance(got, str):
            indexed.skipped[got] += 1
            continue
        if isinstance(got, Failed):
            indexed.set_aside.append(set_aside(item, EXTRACTION_FAILED, got.error))
            continue
        try:
            pages = (
                title_pages(item.version, got)
                if isinstance(got, StreamTitles)
                else [page_of(item.version, got)]
            )
            documents = [page.document() for page in pages]
        except Exception as exc:  # whatever tantivy or the keys refuse of what the archive holds
            error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
            indexed.set_aside.append(set_aside(item, NO_DOCUMENT, error))
            continue
        for document in documents:
            writer.add_document(document)
        indexed.documents += len(documents)
    indexed.skipped.update(entry.reason for entry in indexed.set_aside)
    return indexed


def set_aside(item: Fetched, reason: str, error: str) -> SetAside:
    """A version set aside for `reason`, logged in a line of bounded size."""
    version = item.version
    entry = SetAside(
        item.structure, version.capture.time, version.url[:MAX_URL_SHOWN], reason, error
    )
    log.warning("%s of %s set aside (%s): %s", entry.url, entry.when(), reason, error)
    return entry


def page_of(version: Version, got: Extracted) -> Page:
    """The document of a version, from what its payload gave."""
    url, capture = version.url, version.capture
    host = host_of(url)
    return Page(
        url=url,
        host=host,
        domain=registered_domain(host),
        time=capture.time,
        content_type=got.content_type,
        status=capture.status,
        digest=capture.content,
        title=got.title,
        text=got.text,
        lang=got.lang,
        outlinks=got.links,
        simhash=got.simhash,
    )


def title_pages(version: Version, got: StreamTitles) -> list[Page]:
    """A document of each title of a stream's chunk log: the stream's URL at the time the title
    came on air, all under the log's version (replaced or deleted with it)."""
    url, capture = version.url, version.capture
    host = host_of(url)
    return [
        Page(
            url=url,
            host=host,
            domain=registered_domain(host),
            time=time,
            content_type=STREAM_TITLE_TYPE,
            status=capture.status,
            digest=capture.content,
            title=title,
            text=title,
            lang="",
            outlinks=(),
            simhash=0,  # like no other page: a title is no page to be near
            version_time=capture.time,
        )
        for time, title in got.titles
    ]
