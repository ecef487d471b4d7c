"""The facade: one client object whose methods are done by the parts of the package."""

import uuid
from collections.abc import AsyncIterator, Sequence

from ..cache import ReadCache
from ..config import ClusterConfig
from ..insert_calls import NewCapture
from ..network import PEER_SILENCE
from ..structure import Capture, DayCount
from ._contents import Contents
from ._insert import Inserter
from ._locate import Locator
from ._session import Session
from ._structures import MAX_VARIANTS, Structures
from ._types import BodySource, FoundCapture, InsertSummary, LargeContent


class ClusterClient(Session):
    """Use as `async with ClusterClient(config) as client:`."""

    def __init__(
        self,
        config: ClusterConfig,
        name: str | None = None,
        *,
        connect_timeout: float = 30.0,
        cache: ReadCache | None = None,
        peer_silence: float = PEER_SILENCE,
    ) -> None:
        name = name or f"client-{uuid.uuid4().hex[:12]}"
        super().__init__(config, name, connect_timeout, cache, peer_silence)
        self._inserter = Inserter(self)
        self._locator = Locator(self)
        self._contents = Contents(self, self._locator)
        self._structures = Structures(self, self._locator)

    async def close(self) -> None:
        """Close the connection to the index node, then the lookup and the HTTP session."""
        await self._inserter.stop()
        await super().close()

    # -- insertion -----------------------------------------------------------------------------

    async def connect(self) -> None:
        """Reach an index node now, not at the first insert."""
        await self._inserter.connect()

    async def insert(self, captures: Sequence[NewCapture], body_of: BodySource) -> InsertSummary:
        """Insert captures, uploading each content and header block the index node asks for."""
        return await self._inserter.insert(captures, body_of)

    # -- reading -------------------------------------------------------------------------------

    async def locate(
        self, kind: str, name: str, *, first: bool = False, cached: bool = True
    ) -> list[str]:
        """HTTP addresses of the nodes holding a file, by multicast and/or the master."""
        return await self._locator.locate(kind, name, first=first, cached=cached)

    async def members(self) -> list[str]:
        """The URLs of every member of the cluster: the master, its index and storage nodes."""
        return await self._locator.members()

    async def get_content(self, name: str) -> bytes:
        """A content's bytes, verified against its name, from the first holder that serves them."""
        return await self._contents.get_content(name)

    get_header_block = get_content

    async def content_or_holder(self, name: str, whole_up_to: int | None) -> bytes | LargeContent:
        """A content's verified bytes up to `whole_up_to` bytes, else a holder to stream it from."""
        return await self._contents.content_or_holder(name, whole_up_to)

    def stream_content(
        self, held: LargeContent, first: int = 0, last: int | None = None
    ) -> AsyncIterator[bytes]:
        """The bytes of a held content from `first` to `last` (inclusive), as they arrive."""
        return self._contents.stream_content(held, first, last)

    async def report_bad(self, address: str, name: str) -> None:
        """Ask the node that served bytes of another hash to check its copy of `name`."""
        await self._contents.report_bad(address, name)

    async def get_small_contents(self, names: Sequence[str]) -> dict[str, bytes]:
        """The verified bytes of those of `names` that the storage nodes send in packs."""
        return await self._contents.get_small_contents(names)

    async def closest(self, url: str, at: int, mode: str = "closest") -> FoundCapture:
        """The capture of `url` nearest to `at` (UTC microseconds), or before, after, exactly at."""
        return await self._structures.closest(url, at, mode)

    async def closest_in(self, name: str, url: str, at: int, mode: str = "closest") -> FoundCapture:
        """As `closest`, in the structure file `name` (`url` names it in messages)."""
        return await self._structures.closest_in(name, url, at, mode)

    async def variants(self, url: str, at: int, limit: int = MAX_VARIANTS) -> list[str]:
        """The structure file names of the URLs of `url`'s path with other queries."""
        return await self._structures.variants(url, at, limit)

    async def captures(self, url: str) -> list[Capture]:
        """Every capture of `url` (its WARC request and metadata records aside), oldest first."""
        return await self._structures.captures(url)

    async def capture_days(self, url: str) -> list[DayCount]:
        """Every capture of `url` counted per UTC day, oldest first."""
        return await self._structures.capture_days(url)

    async def captures_between(self, url: str, start: int, stop: int, limit: int) -> list[Capture]:
        """The first captures of `url` from `start` to `stop` (UTC microseconds), oldest first."""
        return await self._structures.captures_between(url, start, stop, limit)

    async def read_structure(
        self, name: str, what: str | None = None, holders: list[str] | None = None
    ) -> tuple[str, list[Capture]]:
        """The URL a structure file holds and every record in it, oldest first."""
        return await self._structures.read_structure(name, what, holders)

    def structure_files(self) -> AsyncIterator[tuple[str, list[str]]]:
        """Every structure file of the cluster and the addresses of its holders, by name."""
        return self._structures.structure_files()
