"""Every structure file of the archive, read from its holders a few at a time: the walk that an
export and a search rebuild make over the whole archive."""

import asyncio
from collections.abc import Callable

from .cluster import ClusterClient
from .errors import NotFound
from .structure import Capture

# Structure files read at once: enough to hide each read's round trip, few enough that a large
# archive's walk does not flood its nodes.
READS_IN_FLIGHT = 16


async def walk_structures(
    client: ClusterClient, visit: Callable[[str, list[Capture]], None]
) -> int:
    """Call `visit(url, captures)` for each structure file the master lists, in no set order (a
    file gone since it was listed is passed over); the number of files read."""
    gate = asyncio.Semaphore(READS_IN_FLIGHT)
    read_files = 0

    async def read(name: str, holders: list[str]) -> None:
        nonlocal read_files
        async with gate:
            try:
                url, captures = await client.read_structure(name, holders=holders)
            except NotFound:
                return
        read_files += 1
        visit(url, captures)

    tasks: list[asyncio.Task[None]] = []
    try:
        async for name, holders in client.structure_files():
            tasks.append(asyncio.create_task(read(name, holders)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return read_files
