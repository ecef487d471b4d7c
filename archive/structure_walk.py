"""Structure files read from their holders a few at a time: the walk over the whole archive that
an export and a search rebuild make, and the reads of the files a search indexer is told
changed."""

import asyncio
from collections.abc import Callable

from .cluster import ClusterClient
from .errors import NotFound
from .structure import Capture

# Structure files read at once: enough to hide each read's round trip, few enough that a large
# archive's walk does not flood its nodes.
READS_IN_FLIGHT = 16

# Called with a file's name, and its URL and records, or None and [] for a file that is gone.
Visit = Callable[[str, str | None, list[Capture]], None]
# Called with a file's name, URL and records.
StructureVisit = Callable[[str, str, list[Capture]], None]


class StructureReads:
    """Reads of structure files, READS_IN_FLIGHT at a time, each handed to `visit` as it ends."""

    def __init__(self, client: ClusterClient, visit: Visit) -> None:
        self._client = client
        self._visit = visit
        self._gate = asyncio.Semaphore(READS_IN_FLIGHT)
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, name: str, holders: list[str] | None = None) -> None:
        self._tasks.append(asyncio.create_task(self._read(name, holders)))

    async def _read(self, name: str, holders: list[str] | None) -> None:
        async with self._gate:
            try:
                url, captures = await self._client.read_structure(name, holders=holders)
            except NotFound:
                self._visit(name, None, [])
                return
        self._visit(name, url, captures)

    async def finish(self) -> None:
        """Wait for every read started; the others are cancelled when one fails."""
        try:
            await asyncio.gather(*self._tasks)
        finally:
            self.cancel()

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()


async def read_structures(client: ClusterClient, names: list[str], visit: Visit) -> None:
    """Read these structure files from the holders the cluster finds."""
    reads = StructureReads(client, visit)
    for name in names:
        reads.start(name)
    await reads.finish()


async def walk_structures(client: ClusterClient, visit: StructureVisit) -> int:
    """Call `visit(name, url, captures)` for each structure file the master lists, in no set
    order (a file gone since it was listed is passed over); the number of files read."""
    read_files = 0

    def found(name: str, url: str | None, captures: list[Capture]) -> None:
        nonlocal read_files
        if url is not None:
            read_files += 1
            visit(name, url, captures)

    reads = StructureReads(client, found)
    try:
        async for name, holders in client.structure_files():
            reads.start(name, holders)
    except BaseException:
        reads.cancel()
        raise
    await reads.finish()
    return read_files
