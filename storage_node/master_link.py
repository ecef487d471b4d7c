"""The storage node as a member of the cluster: a HIP slave of the master (docs/cluster.md).

It joins with its address, failure domain and sizes, streams its inventory log from where the
master says it stopped, sends its free space now and then, and serves the master's orders:
fetch a file from another node, delete files, scrub, and its notices of stale structure copies.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import InitVar, dataclass, field
from typing import cast

import aiohttp

from archive import pack
from archive.config import ClusterConfig
from archive.errors import DlwebError, InsufficientStorage
from archive.hip import Handler, HipError, HipSlave, Peer, RemoteError, hip_url
from archive.network import NETWORK_ERRORS, failure, peer_timeout
from archive.node_calls import (
    DELETE,
    FETCH,
    NODE_INVENTORY,
    NODE_JOIN,
    NODE_SCRUBBED,
    NODE_STATS,
    SCRUB,
    STALE,
    DeleteAnswer,
    DeleteOrder,
    FetchAnswer,
    FetchOrder,
    NodeFile,
    NodeInventory,
    NodeJoin,
    NodeStats,
    ScrubAnswer,
    ScrubOrder,
    ScrubReport,
    StaleAnswer,
    StaleCopies,
)
from archive.tasks import cancel_and_wait

from .node import CONTENT, StorageNode
from .scrub import scrub

log = logging.getLogger(__name__)

BATCH = 5_000
FETCHES_IN_FLIGHT = 16
COALESCE = 0.05
# While writes keep coming, a batch of the inventory goes at most this often. The master applies
# a batch in one transaction, each row (keyed by a random name) dirtying a page, and a page
# dirtied by many rows of one batch is written once: at 100,000 files, batches of 5,000 entries
# cost the master 35% less than batches of 1,400.
SPACING = 0.5
INVENTORY_TIMEOUT = 120.0
CHUNK = 256 * 1024
RETRY = "fetch it alone"


@dataclass(eq=False, repr=False)
class MasterLink:
    node: StorageNode
    config: InitVar[ClusterConfig]
    master: str
    address: str
    domain: str
    reliability: str
    stats_every: float
    retry: float = 2.0
    slave: HipSlave = field(init=False)
    _session: aiohttp.ClientSession | None = field(init=False, default=None)
    _member: asyncio.Task[None] | None = field(init=False, default=None)
    _scrubbing: asyncio.Task[None] | None = field(init=False, default=None)
    _fetching: asyncio.Semaphore = field(
        init=False, default_factory=lambda: asyncio.Semaphore(FETCHES_IN_FLIGHT)
    )
    _auth: dict[str, str] = field(init=False)
    # True from the master's answer to node.join until the connection ends.
    joined: bool = field(init=False, default=False)

    def __post_init__(self, config: ClusterConfig) -> None:
        handlers: dict[str, Handler] = {
            FETCH.name: FETCH.handler(self._fetch),
            DELETE.name: DELETE.handler(self._delete),
            SCRUB.name: SCRUB.handler(self._scrub),
            STALE.name: STALE.handler(self._stale),
        }
        self.slave = HipSlave(
            hip_url(self.master),
            config.secret,
            self.node.id,
            handlers,
            role="storage",
            on_connect=self._on_connect,
            on_disconnect=self._on_disconnect,
        )
        self._auth = {"Authorization": f"Bearer {config.write_token}"}

    @property
    def connected(self) -> bool:
        return self.slave.peer is not None and not self.slave.peer.closed

    def status(self) -> dict[str, object]:
        return {"url": self.master, "connected": self.connected, "joined": self.joined}

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            # A copy from a node whose link was cut is given up after PEER_SILENCE, not held
            # (with its files busy) until TCP gives up; one that is moving is never cut.
            timeout=peer_timeout(),
            auto_decompress=False,
        )
        await self.slave.start()

    async def close(self) -> None:
        for task in (self._member, self._scrubbing):
            if task is not None:
                await cancel_and_wait(task)
        await self.slave.stop()
        if self._session is not None:
            await self._session.close()

    # -- joining and the inventory stream ------------------------------------------------------

    async def _on_connect(self, peer: Peer) -> None:
        self._member = asyncio.create_task(self._membership(peer), name="master membership")

    async def _on_disconnect(self, peer: Peer) -> None:
        self.joined = False
        task, self._member = self._member, None
        if task is not None:
            await cancel_and_wait(task)

    async def _membership(self, peer: Peer) -> None:
        """Join, then send stats and the inventory until the connection ends. A master that
        refuses the join or an inventory batch is left and joined again after `retry` s."""
        try:
            since = await self._join(peer)
            self.joined = True
            stats = asyncio.create_task(self._send_stats(peer), name="node stats")
            try:
                await self._follow(peer, since)
            finally:
                await cancel_and_wait(stats)
        except (HipError, RemoteError) as exc:
            self.joined = False
            if peer.closed:
                log.info("connection to the master ended: %s", exc)
                return
            log.warning("master %s: %s; joining again in %g s", peer.name, exc, self.retry)
            await asyncio.sleep(self.retry)
            await peer.close(message="joining again")

    async def _join(self, peer: Peer) -> int:
        """Call node.join; the inventory sequence number the master wants entries after."""
        free, total, reserve, full = self._room()
        joining = NodeJoin(
            id=self.node.id,
            address=self.address,
            seq=self.node.inventory.durable_seq,
            domain=self.domain,
            reliability=self.reliability,
            free=free,
            total=total,
            reserve=reserve,
            full=full,
            groups=tuple(sorted(self.node.groups)),
        )
        joined = await NODE_JOIN.call(peer, joining)
        log.info(
            "joined master %s as %s; inventory from entry %d", peer.name, joined.state, joined.since
        )
        return joined.since

    async def _follow(self, peer: Peer, since: int) -> None:
        """Send durable inventory entries in order, each batch once the previous is stored; wake
        when the node makes more durable (`node.changed`), after COALESCE, or SPACING after the
        last batch while changes keep coming."""
        cursor = self.node.inventory.cursor(since)
        sent = -SPACING
        while True:
            self.node.changed.clear()
            upto = self.node.inventory.durable_seq
            entries = cursor.read_recent(BATCH, upto)
            if entries is None:
                entries = await self.node.run_io(cursor.read, BATCH, upto)
            if entries:
                sent = time.monotonic()
                batch = NodeInventory(self.node.id, [e.to_json() for e in entries], entries[-1].seq)
                await NODE_INVENTORY.call(peer, batch, timeout=INVENTORY_TIMEOUT)
            if len(entries) < BATCH:
                await self.node.changed.wait()
                # A lone write goes after COALESCE; one of a stream waits for the next batch.
                await asyncio.sleep(max(COALESCE, sent + SPACING - time.monotonic()))

    async def _send_stats(self, peer: Peer) -> None:
        """Every `stats_every` s, and at once when the node turns full or has room again."""
        changed = self.node.space.changed
        while True:
            changed.clear()
            await NODE_STATS.notify(peer, self._stats())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), self.stats_every)

    def _room(self) -> tuple[int, int, int, bool]:
        """Free space, disk size, reserve and whether new files are refused (`full`)."""
        space = self.node.space.to_json()
        return (
            cast(int, space["free"]),
            cast(int, space["total"]),
            cast(int, space["reserve"]),
            cast(bool, space["full"]),
        )

    def _stats(self) -> NodeStats:
        free, total, reserve, full = self._room()
        counts = self.node.counts
        return NodeStats(
            id=self.node.id,
            free=free,
            total=total,
            reserve=reserve,
            full=full,
            groups=tuple(sorted(self.node.groups)),
            files=dict(counts.files),
            bytes=dict(counts.bytes),
        )

    # -- orders from the master ----------------------------------------------------------------

    async def _fetch(self, peer: Peer, order: FetchOrder) -> FetchAnswer:
        files = order.files
        errors: dict[str, str | None] = {}
        wanted: Sequence[NodeFile] = files
        try:
            self.node.space.check(0)
        except InsufficientStorage as exc:
            # A full node fails the copies of files it lacks at once, without reading them.
            wanted, lacking = self._held_apart(files)
            errors.update(dict.fromkeys((item.name for item in lacking), str(exc)))
        by_source: dict[str, list[str]] = {}
        singles = []
        for item in wanted:
            if item.kind == CONTENT and not self.node.holds(CONTENT, item.name):
                by_source.setdefault(item.source, []).append(item.name)
            else:
                singles.append(item)
        packs = [
            self._fetch_packed(source, names[start : start + pack.MAX_NAMES], errors)
            for source, names in by_source.items()
            for start in range(0, len(names), pack.MAX_NAMES)
        ]
        await asyncio.gather(*packs)
        retry = [item for item in files if item.kind == CONTENT and errors.get(item.name) == RETRY]
        results = await asyncio.gather(*(self._fetch_one(item) for item in [*singles, *retry]))
        for item, error in zip([*singles, *retry], results, strict=True):
            errors[item.name] = error
        fetched = [item.name for item in files if errors.get(item.name) is None]
        failed = [
            (item.name, error) for item in files if (error := errors.get(item.name)) is not None
        ]
        return FetchAnswer(fetched, failed)

    def _held_apart(self, files: Sequence[NodeFile]) -> tuple[list[NodeFile], list[NodeFile]]:
        """The files of a fetch order this node holds (a refresh replaces its copy), and the
        others."""
        held = [self.node.holds(item.kind, item.name) for item in files]
        return (
            [item for item, is_held in zip(files, held, strict=True) if is_held],
            [item for item, is_held in zip(files, held, strict=True) if not is_held],
        )

    async def _fetch_packed(
        self, source: str, names: list[str], errors: dict[str, str | None]
    ) -> None:
        """Copy many small contents from one node in one stream; what it cannot send is marked
        for a fetch of its own."""
        assert self._session is not None
        url = f"{source.rstrip('/')}/contents/pack"
        for name in names:
            errors[name] = RETRY
        stores: list[asyncio.Task[None]] = []

        async def store(name: str, data: bytes) -> None:
            try:
                await self.node.put_contents([(name, data)])
                errors[name] = None
            except DlwebError as exc:
                errors[name] = str(exc)
            finally:
                self._fetching.release()

        try:
            async with self._session.post(url, json={"names": names}, headers=self._auth) as r:
                if r.status != 200:
                    log.warning("%s answered %d to a pack request", url, r.status)
                    return
                async for name, data, why in pack.read_frames(r.content, names):
                    if data is None:
                        errors[name] = why if why == pack.NOT_HELD else RETRY
                    else:
                        # Taken before the task, so at most FETCHES_IN_FLIGHT bodies wait in memory.
                        await self._fetching.acquire()
                        stores.append(asyncio.create_task(store(name, data)))
        except (aiohttp.ClientConnectionError, OSError, TimeoutError) as exc:
            # The source is gone: asking it for each file alone would wait as long for each.
            log.warning("pack copy from %s cut short: %s", source, failure(exc))
            for name in names:
                if errors[name] == RETRY:
                    errors[name] = f"{url}: {failure(exc)}"
        except (aiohttp.ClientError, DlwebError) as exc:
            log.warning("pack copy from %s cut short: %s", source, exc)
        finally:
            await asyncio.gather(*stores)

    async def _fetch_one(self, item: NodeFile) -> str | None:
        """Copy one file from another node through the verified write paths; an error or None."""
        assert self._session is not None
        kind, name = item.kind, item.name
        if kind == CONTENT and self.node.holds(CONTENT, name):
            return None
        url = f"{item.source.rstrip('/')}/{kind}/{name}"
        # A stale mark that comes while the copy is read is for records the copy may lack.
        read_after = self.node.stale_marked
        async with self._fetching:
            try:
                async with self._session.get(url, allow_redirects=False) as response:
                    if response.status == 404:
                        return pack.NOT_HELD
                    if response.status != 200:
                        return f"{url} answered {response.status}"
                    body = _chunks(response)
                    if kind == CONTENT:
                        await self.node.put_content(name, body)
                    else:
                        await self.node.put_structure(name, body, read_after)
            except DlwebError as exc:
                return str(exc)
            except NETWORK_ERRORS as exc:
                return f"{url}: {failure(exc)}"
        return None

    async def _delete(self, peer: Peer, order: DeleteOrder) -> DeleteAnswer:
        deleted: list[str] = []
        missing: list[str] = []
        for item in order.files:
            (deleted if await self.node.delete(item.kind, item.name) else missing).append(item.name)
        return DeleteAnswer(deleted, missing)

    async def _stale(self, peer: Peer, notice: StaleCopies) -> StaleAnswer:
        """Structure files whose copy here lacks records of the active copy (a notification of
        the master after appends to it), until the master's copy replaces them."""
        return StaleAnswer(self.node.mark_stale(notice.names))

    async def _scrub(self, peer: Peer, order: ScrubOrder) -> ScrubAnswer:
        running = self._scrubbing is not None and not self._scrubbing.done()
        if running or self.node.scrubbing.locked():
            return ScrubAnswer(started=False, running=True)
        self._scrubbing = asyncio.create_task(self._scrub_and_report(), name="scrub")
        return ScrubAnswer(started=True)

    async def _scrub_and_report(self) -> None:
        try:
            report = await scrub(self.node)
        except DlwebError as exc:
            log.warning("scrub not run: %s", exc)
            return
        except OSError as exc:
            log.error("scrub stopped: %s", exc)
            return
        try:
            await NODE_SCRUBBED.notify(
                self.slave, ScrubReport(self.node.id, report.checked, report.bad)
            )
        except HipError as exc:
            log.warning("scrub report not sent to the master: %s", exc)


async def _chunks(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    async for chunk in response.content.iter_chunked(CHUNK):
        yield chunk
