"""`dlweb search rebuild`: the search index made again from the archive alone.

Every structure file of the archive is read (the walk `dlweb export` makes too) and given to an
update of a new, empty index (updating.py), which also writes the URL-key index of the CDX API
and the position in the master's change feed from which an indexer carries on. The index is
written in a temporary folder beside the target, then renamed over it: a rebuild that fails or
is stopped leaves the old index as it was, and nothing half-written.
"""

import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from archive.cluster import ClusterClient
from archive.errors import DlwebError
from archive.store import fsync_dir
from archive.structure import Capture
from archive.structure_walk import walk_structures

from .catalog import SetAside
from .feed import Follower
from .index import BUILT_FILE, create, mark_built
from .language import preload
from .updating import FileState, Updater


@dataclass
class RebuildSummary:
    """What a rebuild read and indexed, and why it left captures out."""

    versions: int = 0
    documents: int = 0
    urls: int = 0  # in the URL-key index
    skipped: Counter[str] = field(default_factory=Counter)  # set aside too, by reason
    set_aside: list[SetAside] = field(default_factory=list)  # the last few set aside

    def lines(self, folder: Path) -> list[str]:
        skipped = sum(self.skipped.values())
        lines = [
            f"indexed {self.documents:,} page versions of {self.versions:,} in {folder}"
            f" ({skipped:,} left out)"
        ]
        lines += [f"  {n:,} {reason}" for reason, n in sorted(self.skipped.items())]
        lines += set_aside_lines(self.set_aside)
        lines.append(f"{self.urls:,} URLs in the URL-key index (for the CDX API)")
        return lines

    def as_json(self) -> dict[str, object]:
        return {
            "versions": self.versions,
            "documents": self.documents,
            "urls": self.urls,
            "skipped": dict(sorted(self.skipped.items())),
            "set_aside": [entry.as_json() for entry in self.set_aside],
        }


def set_aside_lines(entries: list[SetAside]) -> list[str]:
    """The versions set aside, as `dlweb search` shows them: URL, time, why."""
    if not entries:
        return []
    return ["the last set aside:"] + [
        f"  {entry.url} {entry.when()}: {entry.error}" for entry in entries
    ]


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
    async with await Follower.of(client) as follower:
        # Taken before the walk: a change made meanwhile is applied again by the indexer.
        changes = await follower.changes(0, 1)
    files: list[FileState] = []

    def keep(name: str, url: str, captures: list[Capture]) -> None:
        files.append(FileState(name, url, captures))

    await walk_structures(client, keep)
    files.sort(key=lambda state: state.name)
    temp = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        updater = Updater(create(temp), temp, client, fresh=True)
        try:
            await updater.apply(files, on_progress)
            updater.commit((changes.feed, changes.last))
            updater.writer.wait_merging_threads()
            done = updater.summary
            summary = RebuildSummary(
                done.versions,
                done.documents,
                updater.catalog.url_count(),
                done.skipped,
                list(done.set_aside),
            )
        except BaseException:
            updater.rollback()
            raise
        finally:
            updater.close()
        mark_built(temp, summary.as_json())
        _replace(temp, folder)
    finally:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
    return summary


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
