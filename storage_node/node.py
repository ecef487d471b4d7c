"""A storage node: what it holds (holdings.py) with its identity, and the parts that store
contents (contents.py) and write structure files (structures.py), as the one object the HTTP
interface, the master link, the scrub and the server use."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterable, Sequence
from pathlib import Path

from archive.atomic import atomic_write
from archive.errors import DlwebError, NotFound
from archive.structure import Capture, StructureFile

from .contents import ContentWrites
from .counts import CONTENT, STRUCTURE
from .holdings import Holdings
from .restart import CLEAN_FILE, FILTER_FILE, SNAPSHOT_FILE
from .space import DEFAULT_RESERVE, Reserve, Space
from .structures import Copy, StructureWrites, UrlMismatch

# The node and the names its callers use with it: the kinds of file, the copy an append
# reaches, the fault of a misnamed structure file, and the files the node keeps in its root.
__all__ = [
    "CLEAN_FILE",
    "CONTENT",
    "FILTER_FILE",
    "SNAPSHOT_FILE",
    "STRUCTURE",
    "Copy",
    "StorageNode",
    "UrlMismatch",
]

IDENTITY_FILE = "node.json"


class StorageNode(Holdings):
    """Owns a node's root directory; every change of what it holds goes through here: its
    holdings (the stores, the inventory log, the filter and counts) are its own."""

    def __init__(
        self, root: Path, node_id: str | None = None, reserve: Reserve = DEFAULT_RESERVE
    ) -> None:
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        self.id = _identity(root, node_id)
        self.space = Space(root, reserve)
        super().__init__(root)
        self.content_writes = ContentWrites(self, self.space)
        self.structure_writes = StructureWrites(self, self.space)
        # Set when more inventory entries are durable, so the master link sends them at once.
        self.changed = asyncio.Event()
        self.inventory.on_durable = self.changed.set
        self.scrubbing = asyncio.Lock()

    # -- contents -------------------------------------------------------------------------------

    async def put_content(self, expected: str, body: AsyncIterable[bytes]) -> bool:
        return await self.content_writes.put_content(expected, body)

    async def put_contents(self, items: Sequence[tuple[str, bytes | memoryview]]) -> int:
        return await self.content_writes.put_contents(items)

    # -- structure files ------------------------------------------------------------------------

    async def append_captures(
        self, name: str, url: str, captures: Sequence[Capture], copy: Copy = Copy.ACTIVE
    ) -> tuple[int, bool]:
        return await self.structure_writes.append_captures(name, url, captures, copy)

    async def append_in_volumes(
        self, files: Sequence[tuple[str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        return await self.structure_writes.append_in_volumes(files, copy)

    async def create_structures(
        self, files: Sequence[tuple[str, str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        return await self.structure_writes.create_structures(files, copy)

    async def put_structure(
        self, name: str, body: AsyncIterable[bytes], read_after: int | None = None
    ) -> bool:
        return await self.structure_writes.put_structure(name, body, read_after)

    def open_structure(self, name: str) -> StructureFile:
        try:
            return self.structures.open_structure(name)
        except FileNotFoundError:
            raise NotFound(f"no structure file {name} on this node") from None


def _identity(root: Path, node_id: str | None) -> str:
    """The node's id, stored in its root at the first start and checked at the next."""
    path = root / IDENTITY_FILE
    if path.exists():
        stored = json.loads(path.read_text())["id"]
        if node_id is not None and node_id != stored:
            raise DlwebError(f"{root} belongs to node {stored!r}, not {node_id!r}")
        return str(stored)
    chosen = node_id or uuid.uuid4().hex[:12]
    atomic_write(path, json.dumps({"id": chosen}).encode())
    return chosen
