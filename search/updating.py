"""Bringing a search index in step with structure files: what a rebuild does for every file of
the archive and the indexer for each file the master says changed.

For each file, the versions of its URL (walk.py) are compared with those the catalog says are
indexed (catalog.py): a version gone or changed (an older capture imported later starts it
earlier, or its payload differs) is deleted by its `version` term, a new one is read from the
cluster (its header block first, so that the payload of an image or a video is never fetched),
extracted (extract.py) on a thread while the next ones are fetched, and added in place of any
document of the same term. Nothing is visible before `commit`, which writes tantivy, then the
catalog with the new position in the change feed.
"""

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import tantivy

from archive.cluster import ClusterClient, Held
from archive.errors import DlwebError, NotFound
from archive.header_block import HeaderBlock, parse_header_block
from archive.requestkey import original_url
from archive.structure import REPLAYED_KINDS, Capture
from archive.warc.pending import REGISTRY_URL

from .catalog import Catalog, FileEntry
from .domains import host_of, registered_domain
from .errors import NotIndexed
from .extract import MAX_BYTES, extract, indexed_type
from .index import Page, new_writer, version_key
from .walk import Version, versions

CHUNK = 128  # versions whose header blocks, then payloads, are fetched together


@dataclass
class UpdateSummary:
    """What updates read and indexed, and why they left captures out."""

    files: int = 0
    versions: int = 0  # read from the cluster to be indexed
    documents: int = 0  # added to the index
    removed: int = 0  # versions deleted from the index
    skipped: Counter[str] = field(default_factory=Counter)

    def as_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "versions": self.versions,
            "documents": self.documents,
            "removed": self.removed,
            "skipped": dict(sorted(self.skipped.items())),
        }


@dataclass(frozen=True, slots=True)
class FileState:
    """A structure file as read from the cluster: its URL and records, or none when it is gone."""

    name: str
    url: str | None
    captures: list[Capture]


@dataclass(frozen=True, slots=True)
class _Fetched:
    version: Version
    header: HeaderBlock
    payload: bytes


def page_versions(state: FileState) -> list[Version]:
    """The versions of a file's URL that are pages: none for a response to another method than
    GET (archived under a lookup URL) or the registry of pending revisits."""
    if state.url is None or state.url == REGISTRY_URL or original_url(state.url) != state.url:
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
        self.summary = UpdateSummary()
        self._entries: list[FileEntry] = []

    def close(self) -> None:
        self.catalog.close()

    async def apply(
        self,
        files: Iterable[FileState],
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Bring these files' documents up to date (seen once committed); `on_progress(done,
        total)` reports the versions read."""
        files = list(files)
        known = await asyncio.to_thread(self.catalog.versions_of, [f.name for f in files])
        added: list[Version] = []
        for state in files:
            wanted = {v.capture.time: v for v in page_versions(state)}
            indexed = known[state.name]
            for time, digest in indexed.items():
                if time not in wanted or wanted[time].capture.content != digest:
                    self.writer.delete_documents_by_term("version", version_key(state.name, time))
                    self.summary.removed += 1
            new = [v for t, v in wanted.items() if indexed.get(t) != v.capture.content]
            if not self.fresh:  # an update made again after a crash finds them in tantivy
                for version in new:
                    self.writer.delete_documents_by_term(
                        "version", version_key(state.name, version.capture.time)
                    )
            added += new
            listed = state.url is not None and state.url != REGISTRY_URL
            self._entries.append(
                FileEntry(
                    state.name,
                    state.url if listed and _listed(state.captures) else None,
                    {t: v.capture.content for t, v in wanted.items()},
                )
            )
        self.summary.files += len(files)
        added.sort(key=lambda v: (v.url, v.capture.time))
        self.summary.versions += len(added)
        await self._index(added, on_progress)

    def commit(self, position: tuple[str | None, int]) -> None:
        """Make the updates seen, then record them and the feed's position in the catalog."""
        self.writer.commit()
        self.catalog.record(self._entries, position)
        self._entries = []

    def rollback(self) -> None:
        self.writer.rollback()
        self._entries = []

    async def _index(
        self, added: list[Version], on_progress: Callable[[int, int], None] | None
    ) -> None:
        """Fetch the versions by chunks and index each chunk on a thread while the next is
        fetched."""
        loop = asyncio.get_running_loop()
        done = 0
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dlweb-search") as extracting:
            indexing: asyncio.Future[tuple[int, Counter[str]]] | None = None
            for start in range(0, len(added), CHUNK):
                chunk = added[start : start + CHUNK]
                fetched = await _fetch(self.client, chunk, self.summary.skipped)
                if indexing is not None:
                    self._count(await indexing)
                indexing = loop.run_in_executor(extracting, _index_chunk, self.writer, fetched)
                done += len(chunk)
                if on_progress is not None:
                    on_progress(done, len(added))
            if indexing is not None:
                self._count(await indexing)

    def _count(self, indexed: tuple[int, Counter[str]]) -> None:
        self.summary.documents += indexed[0]
        self.summary.skipped.update(indexed[1])


def _listed(captures: list[Capture]) -> bool:
    """Whether the CDX API lists a capture of these (the URL-key index holds their URL)."""
    return any(capture.kind in REPLAYED_KINDS for capture in captures)


async def _fetch(
    client: ClusterClient, chunk: list[Version], skipped: Counter[str]
) -> list[_Fetched]:
    """The header blocks of `chunk`, then the payloads of those of indexed types."""
    names = [version.capture.header for version in chunk]
    blocks = await client.get_small_contents(names)
    readable: list[tuple[Version, HeaderBlock]] = []
    for version in chunk:
        name = version.capture.header
        try:
            block = blocks.get(name) or await client.get_header_block(name)
            header = parse_header_block(block, f"header block {name}")
            indexed_type(header)
        except NotIndexed as exc:
            skipped[exc.reason] += 1
            continue
        except NotFound:
            skipped["header block missing from the cluster"] += 1
            continue
        except DlwebError:
            skipped["unreadable header block"] += 1
            continue
        readable.append((version, header))
    payloads = await client.get_small_contents([v.capture.content for v, _ in readable])
    fetched = []
    for version, header in readable:
        name = version.capture.content
        payload: bytes | Held | None = payloads.get(name)
        if payload is None:
            try:
                payload = await client.content_or_holder(name, MAX_BYTES)
            except NotFound:
                skipped["payload missing from the cluster"] += 1
                continue
        if isinstance(payload, Held):
            skipped["larger than 5 MB"] += 1
            continue
        fetched.append(_Fetched(version, header, payload))
    return fetched


def _index_chunk(writer: tantivy.IndexWriter, fetched: list[_Fetched]) -> tuple[int, Counter[str]]:
    """Extract and add each fetched version in place of any document of its term (on the
    extracting thread); how many were added and why the others were not."""
    added = 0
    skipped: Counter[str] = Counter()
    for item in fetched:
        url, capture = item.version.url, item.version.capture
        try:
            got = extract(url, item.header, item.payload)
        except NotIndexed as exc:
            skipped[exc.reason] += 1
            continue
        host = host_of(url)
        page = Page(
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
            outlinks=[{"url": link.url, "text": link.text} for link in got.links],
            simhash=got.simhash,
        )
        writer.add_document(page.document())
        added += 1
    return added, skipped
