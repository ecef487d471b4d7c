"""Reading contents: fetched from one of their holders and verified against their SHA-256,
falling back to the next holder when one fails; small ones in packs, large ones streamed."""

import hashlib
import logging
from collections.abc import AsyncIterator, Sequence

from .. import pack
from ..cache import SMALL_CONTENT
from ..errors import DlwebError, HashMismatch, NotFound
from ..hashing import VerifyingRelay, check_name
from ..network import NETWORK_ERRORS, failure
from ._errors import ClusterError
from ._locate import Locator
from ._session import Session
from ._types import LargeContent

log = logging.getLogger("archive.cluster")


class Contents:
    """Reads contents and header blocks from the storage nodes, through the client's cache."""

    def __init__(self, session: Session, locator: Locator) -> None:
        self._session = session
        self._locator = locator

    async def get_content(self, name: str) -> bytes:
        """A content's bytes, verified against its name, from the first holder that serves them."""
        found = await self.content_or_holder(name, None)
        assert isinstance(found, bytes)
        return found

    async def content_or_holder(self, name: str, whole_up_to: int | None) -> bytes | LargeContent:
        """A content's verified bytes when it has at most `whole_up_to` bytes (any size with
        None), else the first holder that serves it and its size, read no further: the caller
        streams it (`stream_content`) instead of holding it whole."""
        if (kept := self._kept(name)) is not None:
            return kept
        problems = []
        async for address in self._locator.holders("content", name):
            try:
                async with self._session.http.get(f"{address}/content/{name}") as r:
                    if r.status != 200:
                        problems.append(f"{address} answered {r.status}")
                        continue
                    size = r.content_length
                    if whole_up_to is not None and size is not None and size > whole_up_to:
                        return LargeContent(name, address, size)
                    data = await r.read()
            except NETWORK_ERRORS as exc:
                problems.append(f"{address}: {failure(exc, self._session.peer_silence)}")
                continue
            if hashlib.sha256(data).hexdigest() == name:
                self._keep(name, data)
                return data
            problems.append(f"{address} served bytes of another hash")
            await self.report_bad(address, name)
        if not problems:
            raise NotFound(f"content {name} is on no node of the cluster")
        raise ClusterError(f"no holder of content {name} served it: {'; '.join(problems)}")

    async def stream_content(
        self, held: LargeContent, first: int = 0, last: int | None = None
    ) -> AsyncIterator[bytes]:
        """The bytes of a held content from `first` to `last` (inclusive; the end by default),
        as they arrive. A whole read is verified on the way: when the bytes end with another
        hash, the copy is reported bad and ClusterError raised before the last piece is given,
        so a reader never receives all of a wrong content."""
        whole = first == 0 and (last is None or last >= held.size - 1)
        headers = {} if whole else {"Range": f"bytes={first}-{'' if last is None else last}"}
        check = VerifyingRelay(held.name) if whole else None
        url = f"{held.address}/content/{held.name}"
        try:
            async with self._session.http.get(url, headers=headers) as r:
                if r.status != (200 if whole else 206):
                    raise ClusterError(f"{url} answered {r.status}")
                async for piece in r.content.iter_any():
                    if check is None:
                        yield piece
                    elif given := check.feed(piece):
                        yield given
                if check is not None:
                    try:
                        yield check.finish()
                    except HashMismatch as exc:
                        await self.report_bad(held.address, held.name)
                        raise ClusterError(f"{held.address} served {exc}") from None
        except NETWORK_ERRORS as exc:
            silence = self._session.peer_silence
            raise ClusterError(f"reading {url} failed: {failure(exc, silence)}") from None

    async def report_bad(self, address: str, name: str) -> None:
        """Ask the node that served bytes of another hash to check its copy of `name` (it
        quarantines a bad one, and the master has it repaired), and read it elsewhere next."""
        if self._session.cache is not None:
            self._session.cache.locations.drop(("content", name))
        log.warning("%s served content %s with another hash; asking it to check", address, name)
        try:
            async with self._session.http.post(
                f"{address}/content/{name}/check", headers=self._session.auth
            ) as r:
                await r.read()
        except NETWORK_ERRORS as exc:
            log.warning("%s could not be asked to check %s: %s", address, name, failure(exc))

    async def get_small_contents(self, names: Sequence[str]) -> dict[str, bytes]:
        """The bytes of the contents of `names` that the storage nodes send in packs (those of
        at most pack.MAX_PACKED bytes), verified: one request a node for up to pack.MAX_NAMES
        names, each node asked only for what the ones before it did not send. The caller reads
        the others alone (`get_content`), so that large ones never wait in memory together.
        Like `get_content`, it takes what the client's cache holds and keeps what it reads."""
        wanted = list(dict.fromkeys(check_name(name) for name in names))
        got = {name: kept for name in wanted if (kept := self._kept(name)) is not None}
        for node in await self._locator.storage_nodes():
            missing = [name for name in wanted if name not in got]
            if not missing:
                break
            for start in range(0, len(missing), pack.MAX_NAMES):
                read = await self._read_pack(node, missing[start : start + pack.MAX_NAMES])
                for name, data in read.items():
                    self._keep(name, data)
                got.update(read)
        return got

    def _kept(self, name: str) -> bytes | None:
        """A content's bytes from the client's cache, if it has one that holds them."""
        cache = self._session.cache
        return cache.contents.get(name) if cache is not None else None

    def _keep(self, name: str, data: bytes) -> None:
        """Keep a verified content in the client's cache, if it has one and the content is
        small."""
        cache = self._session.cache
        if cache is not None and len(data) <= SMALL_CONTENT:
            cache.contents.put(name, data, len(data))

    async def _read_pack(self, node: str, names: list[str]) -> dict[str, bytes]:
        """The contents of `names` that `node` sends in one pack and whose bytes match their
        names; nothing from a node that fails (the caller asks another, or reads them alone)."""
        got: dict[str, bytes] = {}
        try:
            async with self._session.http.post(
                f"{node}/contents/pack", json={"names": names}, headers=self._session.auth
            ) as r:
                if r.status != 200:
                    return got
                async for name, data, _ in pack.read_frames(r.content, names):
                    if data is not None and hashlib.sha256(data).hexdigest() == name:
                        got[name] = data
        except (*NETWORK_ERRORS, DlwebError) as exc:
            silence = self._session.peer_silence
            log.info("pack read from %s cut short: %s", node, failure(exc, silence))
        return got
