"""`dlweb search-indexer`: a search index kept current as captures are inserted.

The indexer follows the master's change feed of structure files (feed.py): told by a note that
files changed, it asks for the changes after its position, reads those files (at most BATCH a
round), updates their documents (updating.py) and commits, the position with them. Killed at any
moment, it carries on from the last position committed, and an update made twice ends as one.
A folder with no index is first built whole, as `dlweb search rebuild` does.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from archive.cluster import ClusterClient
from archive.errors import DlwebError
from archive.structure import Capture
from archive.structure_walk import read_structures

from .feed import Follower
from .index import BUILT_FILE, open_index
from .rebuild import rebuild
from .updating import FileState, Updater, UpdateSummary

log = logging.getLogger(__name__)

BATCH = 1_000  # structure files read and committed in one round, at most
# A round without a note from the master comes after this long (a note lost with a dropped
# connection is then made up for).
IDLE_ROUND = 5.0
# After a failed round (the master or the storage nodes unreachable), the next comes after this.
RETRY_AFTER = 2.0


async def keep_current(
    client: ClusterClient,
    folder: Path,
    on_round: Callable[[int, UpdateSummary], None] | None = None,
) -> None:
    """Build the index in `folder` when there is none, then follow the change feed until
    cancelled; `on_round(position, summary)` is told of each commit."""
    if not (folder / BUILT_FILE).exists():
        log.info("no search index in %s: building it from the whole archive", folder)
        built = await rebuild(client, folder)
        log.info("%s", "; ".join(built.lines(folder)))
    updater = Updater(open_index(folder), folder, client)
    try:
        # Started and loaded now, not at the first change: that one is indexed at once.
        await updater.extractors.ready()
        async with await Follower.of(client) as follower:
            while True:
                try:
                    busy = await _round(client, follower, updater)
                except (DlwebError, OSError) as exc:
                    updater.rollback()
                    log.warning("search index update failed, trying again: %s", exc)
                    await asyncio.sleep(RETRY_AFTER)
                    continue
                if busy and on_round is not None:
                    on_round(updater.catalog.position()[1], updater.summary)
                if not busy:
                    await follower.wait(IDLE_ROUND)
    finally:
        updater.close()


async def _round(client: ClusterClient, follower: Follower, updater: Updater) -> bool:
    """Apply the next changes of the feed; whether there were any."""
    feed, after = updater.catalog.position()
    changes = await follower.changes(after, BATCH)
    if feed is not None and (changes.feed != feed or changes.last < after):
        # Another feed: the master's database was made anew. Every file is looked at again,
        # which fetches only what the index lacks.
        log.warning("the master's change feed is new: reading every structure file again")
        after = 0
        changes = await follower.changes(after, BATCH)
    if not changes.changes:
        if feed != changes.feed:
            updater.commit((changes.feed, changes.last))
        return False
    started = time.monotonic()
    files: list[FileState] = []

    def keep(name: str, url: str | None, captures: list[Capture]) -> None:
        files.append(FileState(name, url, captures))

    await read_structures(client, [change.name for change in changes.changes], keep)
    files.sort(key=lambda state: state.name)
    before = updater.summary.documents
    await updater.apply(files)
    position = changes.changes[-1].seq
    set_aside = updater.set_aside_count()
    await asyncio.to_thread(updater.commit, (changes.feed, position))
    log.info(
        "indexed %d new versions of %d changed files (%d set aside) in %.2f s (change %d of %d)",
        updater.summary.documents - before,
        len(files),
        set_aside,
        time.monotonic() - started,
        position,
        changes.last,
    )
    return True
