"""A storage node: its identity and the parts that keep what it holds (holdings.py), store
contents (contents.py) and write structure files (structures.py), behind the one object the HTTP
interface, the master link, the scrub and the server use."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from archive.atomic import atomic_write
from archive.bloom import NameFilter
from archive.errors import DlwebError, NotFound
from archive.structure import Capture, StructureFile

from .contents import ContentWrites
from .counts import CONTENT, STRUCTURE, Counts
from .holdings import Holdings
from .inventory import InventoryLog
from .restart import CLEAN_FILE, FILTER_FILE, SNAPSHOT_FILE, Start
from .space import DEFAULT_RESERVE, Reserve, Space
from .stores import VolumeStore
from .structures import Copy, StructureWrites, UrlMismatch
from .volumes import Span

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
T = TypeVar("T")


class StorageNode:
    """Owns a node's root directory; every change of what it holds goes through here."""

    def __init__(
        self, root: Path, node_id: str | None = None, reserve: Reserve = DEFAULT_RESERVE
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.id = self._identity(node_id)
        self.space = Space(self.root, reserve)
        self.holdings = Holdings(self.root)
        self.content_writes = ContentWrites(self.holdings, self.space)
        self.structure_writes = StructureWrites(self.holdings, self.space)
        # Set when more inventory entries are durable, so the master link sends them at once.
        self.changed = asyncio.Event()
        self.holdings.inventory.on_durable = self.changed.set
        self.scrubbing = asyncio.Lock()

    def _identity(self, node_id: str | None) -> str:
        """The node's id, stored in its root at the first start and checked at the next."""
        path = self.root / IDENTITY_FILE
        if path.exists():
            stored = json.loads(path.read_text())["id"]
            if node_id is not None and node_id != stored:
                raise DlwebError(f"{self.root} belongs to node {stored!r}, not {node_id!r}")
            return str(stored)
        chosen = node_id or uuid.uuid4().hex[:12]
        atomic_write(path, json.dumps({"id": chosen}).encode())
        return chosen

    # -- what the node holds, kept by its holdings ----------------------------------------------

    @property
    def executor(self) -> ThreadPoolExecutor:
        return self.holdings.executor

    @property
    def contents(self) -> VolumeStore:
        return self.holdings.contents

    @property
    def structures(self) -> VolumeStore:
        return self.holdings.structures

    @property
    def inventory(self) -> InventoryLog:
        return self.holdings.inventory

    @property
    def filter(self) -> NameFilter:
        return self.holdings.filter

    @property
    def counts(self) -> Counts:
        return self.holdings.counts

    @property
    def start(self) -> Start:
        return self.holdings.start

    @property
    def groups(self) -> frozenset[int]:
        return self.holdings.groups

    @property
    def stale(self) -> dict[str, int]:
        return self.holdings.stale

    @property
    def stale_marked(self) -> int:
        return self.holdings.stale_marked

    @property
    def on_new_group(self) -> Callable[[int], None]:
        """Called with each group of names the node comes to hold a first file of."""
        return self.holdings.on_new_group

    @on_new_group.setter
    def on_new_group(self, call: Callable[[int], None]) -> None:
        self.holdings.on_new_group = call

    def store_for(self, kind: str) -> VolumeStore:
        return self.holdings.store_for(kind)

    def holds(self, kind: str, name: str) -> bool:
        return self.holdings.holds(kind, name)

    def is_stale(self, kind: str, name: str) -> bool:
        return self.holdings.is_stale(kind, name)

    def mark_stale(self, names: list[str]) -> int:
        return self.holdings.mark_stale(names)

    def unmark_stale(self, name: str, read_after: int | None = None) -> None:
        self.holdings.unmark_stale(name, read_after)

    async def run_io(self, func: Callable[..., T], *args: object) -> T:
        return await self.holdings.run_io(func, *args)

    async def save_state(self) -> None:
        await self.holdings.save_state()

    def close(self) -> None:
        self.holdings.close()

    async def delete(self, kind: str, name: str) -> bool:
        return await self.holdings.delete(kind, name)

    async def quarantine(self, kind: str, name: str) -> bool:
        return await self.holdings.quarantine(kind, name)

    async def check_file(
        self, kind: str, name: str, fault: Callable[[Span], str | None]
    ) -> str | None:
        return await self.holdings.check_file(kind, name, fault)

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
