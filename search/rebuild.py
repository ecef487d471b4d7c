"""`dlweb search rebuild`: the search index made again from the archive alone.

Every version of every page (walk.py) is read from the cluster, its header block first, so that
the payload of an image or a video is never fetched; each HTML or text payload is extracted
(extract.py) on a thread while the next ones are fetched. The URL-key index of the CDX API
(urlkeys.py) is written beside it from the same walk. The index is written in a temporary
folder beside the target, then renamed over it: a rebuild that fails or is stopped leaves the
old index as it was, and nothing half-written.
"""

import asyncio
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import tantivy

from archive.cluster import ClusterClient, Held
from archive.errors import DlwebError, NotFound
from archive.header_block import HeaderBlock, parse_header_block
from archive.store import fsync_dir
from archive.structure import REPLAYED_KINDS, Capture
from archive.warc.pending import REGISTRY_URL

from .domains import host_of, registered_domain
from .errors import NotIndexed
from .extract import MAX_BYTES, extract, indexed_type
from .index import BUILT_FILE, Page, create, mark_built, new_writer
from .language import preload
from .urlkeys import write_urlkeys
from .walk import Version, all_versions

CHUNK = 128  # versions whose header blocks, then payloads, are fetched together


@dataclass
class RebuildSummary:
    """What a rebuild read and indexed, and why it left captures out."""

    versions: int = 0
    documents: int = 0
    urls: int = 0  # in the URL-key index
    skipped: Counter[str] = field(default_factory=Counter)

    def lines(self, folder: Path) -> list[str]:
        skipped = sum(self.skipped.values())
        lines = [
            f"indexed {self.documents:,} page versions of {self.versions:,} in {folder}"
            f" ({skipped:,} left out)"
        ]
        lines += [f"  {n:,} {reason}" for reason, n in sorted(self.skipped.items())]
        lines.append(f"{self.urls:,} URLs in the URL-key index (for the CDX API)")
        return lines

    def as_json(self) -> dict[str, object]:
        return {
            "versions": self.versions,
            "documents": self.documents,
            "urls": self.urls,
            "skipped": dict(sorted(self.skipped.items())),
        }


@dataclass(frozen=True, slots=True)
class _Fetched:
    version: Version
    header: HeaderBlock
    payload: bytes


def check_target(folder: Path) -> None:
    """Refuse a target that is not a folder, or a folder of other files (it would be replaced)."""
    if folder.exists() and not folder.is_dir():
        raise DlwebError(f"--index {folder} exists and is not a folder")
    if folder.is_dir() and not (folder / BUILT_FILE).exists() and any(folder.iterdir()):
        raise DlwebError(
            f"--index {folder} holds files that are not a search index; give a new or empty folder"
        )
    if not folder.parent.is_dir():
        raise DlwebError(f"--index {folder}: its parent folder does not exist")


async def rebuild(
    client: ClusterClient,
    folder: Path,
    on_progress: Callable[[int, int], None] | None = None,
) -> RebuildSummary:
    """Make the index in `folder` again from every page of the archive; `on_progress(done,
    total)` reports the versions read."""
    check_target(folder)
    preload()  # while the archive is walked
    summary = RebuildSummary()
    listed: list[str] = []  # the URLs with a capture the CDX API lists

    def keep_url(url: str, captures: list[Capture]) -> None:
        if url != REGISTRY_URL and any(c.kind in REPLAYED_KINDS for c in captures):
            listed.append(url)

    versions = await all_versions(client, on_url=keep_url)
    summary.versions = len(versions)
    temp = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        index = create(temp)
        writer = new_writer(index)
        try:
            await _index_all(client, writer, versions, summary, on_progress)
        except BaseException:
            writer.rollback()
            raise
        await asyncio.to_thread(_commit, writer)
        summary.urls = await asyncio.to_thread(write_urlkeys, temp, listed)
        mark_built(temp, summary.as_json())
        _replace(temp, folder)
    finally:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
    return summary


async def _index_all(
    client: ClusterClient,
    writer: tantivy.IndexWriter,
    versions: list[Version],
    summary: RebuildSummary,
    on_progress: Callable[[int, int], None] | None,
) -> None:
    """Fetch the versions by chunks and index each chunk on a thread while the next is fetched."""
    loop = asyncio.get_running_loop()
    done = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dlweb-search") as extracting:
        indexing: asyncio.Future[tuple[int, Counter[str]]] | None = None
        for start in range(0, len(versions), CHUNK):
            chunk = versions[start : start + CHUNK]
            fetched = await _fetch(client, chunk, summary.skipped)
            if indexing is not None:
                added, skipped = await indexing
                summary.documents += added
                summary.skipped.update(skipped)
            indexing = loop.run_in_executor(extracting, _index_chunk, writer, fetched)
            done += len(chunk)
            if on_progress is not None:
                on_progress(done, len(versions))
        if indexing is not None:
            added, skipped = await indexing
            summary.documents += added
            summary.skipped.update(skipped)


async def _fetch(
    client: ClusterClient, chunk: list[Version], skipped: Counter[str]
) -> list[_Fetched]:
    """The header blocks of `chunk`, then the payloads of those of HTML or text."""
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
    """Extract and add each fetched version (on the extracting thread); how many were added and
    why the others were not."""
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


def _commit(writer: tantivy.IndexWriter) -> None:
    writer.commit()
    writer.wait_merging_threads()


def _replace(temp: Path, folder: Path) -> None:
    """Put the finished index in `temp` where `folder` is: the old one is renamed away first
    (a folder cannot be renamed over another), then removed."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}.old")
        os.rename(folder, old)
    try:
        os.rename(temp, folder)
    except BaseException:
        if old is not None:
            os.rename(old, folder)
        raise
    fsync_dir(folder.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
