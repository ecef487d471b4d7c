"""The cluster client: one API for inserting captures and reading the archive back.

Insertion goes through the master, which redirects the client to an index node; the index node
names the contents to upload and where, and appends the structure records while they go up.
Reads locate a file (by multicast, by asking the master, or both, as the configuration says),
fetch it from one of its holders and verify its SHA-256, falling back to the next holder when one
fails.
"""

import asyncio
import functools
import hashlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import aiohttp

from . import discovery, pack
from .cache import SMALL_CONTENT, ReadCache
from .config import ClusterConfig
from .errors import DlwebError, HashMismatch, NotFound
from .hashing import HeldBackCheck, check_name
from .hip import HipError, HipSlave, RemoteError, hip_url
from .inserts import (
    InsertAnswer,
    NewCapture,
    Stored,
    StoredAnswer,
    UploadOrder,
    UploadReceipt,
    chain_header,
)
from .multicast import LookupClient
from .network import NETWORK_ERRORS, PEER_SILENCE, UPLOAD_TIMEOUT, failure, peer_timeout
from .structure import REPLAYED_KINDS, BadRecord, Capture, DayCount, Mode, RecordKind
from .timestamps import format_iso
from .urlkey import structure_name
from .variants import path_of

__all__ = [
    "BodySource",
    "ClusterClient",
    "ClusterError",
    "Found",
    "Held",
    "InsertSummary",
    "NewCapture",
]

log = logging.getLogger(__name__)

INSERT_BATCH = 1_000
MAX_LISTED = 100_000
MAX_VARIANTS = 100
UPLOADS_IN_FLIGHT = 48
UPLOAD_BATCHES_AT_ONCE = 3
# How long a client keeps the list of storage nodes it reads packs from.
NODES_KEPT = 10.0
KINDS = ("content", "structure")
NEIGHBOURS = ("first", "last", "prev", "next")
# Contents of a pack at most: an insert's new contents are split among the chains of nodes that
# take them (three with two copies on three nodes), and each pack costs every node of its chain
# a request, a group commit and a forward, so a chain's share of a batch goes in one pack.
PACK_FRAMES = 500
PACK_BYTES = 8 * 1024 * 1024
# An insert or its confirmation waits on a loaded index node (lookups, then appends) this long.
INDEX_CALL_TIMEOUT = 300.0
# While the master has no index node (one restarting), an insert asks again this often, for as
# long as the client waits for a connection.
NO_INDEX_RETRY = 0.5
# The bytes of a content to upload by name: in memory, in a file, or still to be fetched.
BodySource = Callable[[str], bytes | Path | Awaitable[bytes]]
# A batch's upload claims: the names it uploads, each with the future telling its outcome, and
# the names another batch is uploading, with theirs.
_Claims = tuple[dict[str, asyncio.Future[bool]], dict[str, asyncio.Future[bool]]]


@dataclass
class InsertSummary:
    captures: int = 0
    added: int = 0
    uploaded: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class Found:
    """A capture found in a structure file, and the node that answered."""

    capture: Capture
    node: str
    # The first, last, previous and next captures of the URL, when the node sent them.
    neighbours: dict[str, Capture | None] = field(default_factory=dict)
    url: str = ""  # the URL the structure file holds


@dataclass(frozen=True, slots=True)
class Held:
    """A content too large to read whole: a holder that serves it, and its size."""

    name: str
    address: str
    size: int


class ClusterError(DlwebError):
    """The cluster could not do what was asked (no index node, no replica answered...)."""


class NoIndexNode(ClusterError):
    """The master has no index node connected to take inserts."""


class ClusterClient:
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
        self.config = config
        self.cache = cache
        self.name = name or f"client-{uuid.uuid4().hex[:12]}"
        self.connect_timeout = connect_timeout
        self.peer_silence = peer_silence
        self._session: aiohttp.ClientSession | None = None
        self._lookup: LookupClient | None = None
        self._slave: HipSlave | None = None
        self._auth = {"Authorization": f"Bearer {config.write_token}"}
        self._finding_master = asyncio.Lock()
        self._joining_index = asyncio.Lock()
        # Uploads under way, by name: a batch asked for a content that an earlier batch is still
        # uploading (the index node learns of it only once stored) waits for that upload.
        self._uploading: dict[str, asyncio.Future[bool]] = {}
        self._nodes: tuple[float, list[str]] | None = None  # when listed, the nodes' addresses

    async def __aenter__(self) -> "ClusterClient":
        if self.config.lookup in ("multicast", "both"):
            lookup = LookupClient(self.config.multicast, self.config.secret)
            await lookup.start()
            self._lookup = lookup
        # Made last, with nothing awaited after it: an entry that fails or is cancelled (Ctrl-C)
        # leaves no session open, since `__aexit__` does not run then.
        self._session = aiohttp.ClientSession(
            timeout=peer_timeout(silence=self.peer_silence),
            connector=aiohttp.TCPConnector(limit=64),
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._slave is not None:
            await self._slave.stop()
        if self._lookup is not None:
            await self._lookup.close()
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise ClusterError("use the cluster client inside `async with`")
        return self._session

    async def master_url(self) -> str:
        """The master's URL: the configuration's, or else the one found on the LAN (once)."""
        async with self._finding_master:
            if self.config.master is None:
                try:
                    found = await discovery.address(
                        discovery.MASTER, None, self.config, "the key `master`"
                    )
                except DlwebError as exc:
                    raise ClusterError(f"no master URL: {exc}") from None
                self.config = replace(self.config, master=found)
            assert self.config.master is not None
            return self.config.master.rstrip("/")

    # -- insertion -----------------------------------------------------------------------------

    async def connect(self) -> None:
        """Reach an index node now (an importer does while its first batch is read), not at the
        first insert."""
        slave = await self._index()
        try:
            await slave.wait_connected(self.connect_timeout)
        except HipError as exc:
            raise ClusterError(f"no index node reached: {exc}") from None

    async def _index(self) -> HipSlave:
        """The connection to an index node, made through the master's redirect (once, however
        many batches are inserting)."""
        async with self._joining_index:
            if self._slave is None:
                slave = HipSlave(
                    hip_url(await self.master_url()),
                    self.config.secret,
                    self.name,
                    {},
                    role="client",
                )
                await slave.start()
                self._slave = slave
            return self._slave

    async def insert(self, captures: Sequence[NewCapture], body_of: BodySource) -> InsertSummary:
        """Insert captures, uploading each content and header block the index node asks for.

        Uploads of a few batches run at once, sharing one bound on requests in flight, while the
        index node works on the next batch.
        """
        summary = InsertSummary()
        if not captures:
            return summary
        gate = asyncio.Semaphore(UPLOADS_IN_FLIGHT)
        uploading: list[asyncio.Task[None]] = []
        try:
            for start in range(0, len(captures), INSERT_BATCH):
                batch = captures[start : start + INSERT_BATCH]
                slave, answer = await self._ask_insert({"captures": [c.to_json() for c in batch]})
                try:
                    answered = InsertAnswer.from_json(answer)
                except DlwebError as exc:
                    raise ClusterError(str(exc)) from None
                summary.captures += len(batch)
                # Claimed as the answer comes, not when the batch's task begins: a batch that
                # ended in between (its `stored` answered right after this answer) would no
                # longer be seen uploading a content both were asked for, which went twice.
                claims = self._claim(answered.orders)
                task = asyncio.create_task(
                    self._upload_and_confirm(slave, answered, claims, body_of, summary, gate)
                )
                # Its claims end with it, however it ends (cancelled before it began, too).
                task.add_done_callback(functools.partial(self._release, claims[0]))
                uploading.append(task)
                while len(uploading) > UPLOAD_BATCHES_AT_ONCE:
                    await uploading.pop(0)
            for task in uploading:
                await task
        finally:
            for task in uploading:
                task.cancel()
            await asyncio.gather(*uploading, return_exceptions=True)
        return summary

    async def _ask_insert(self, params: dict[str, Any]) -> tuple[HipSlave, Any]:
        """Call insert on an index node, and the connection it came by (its `stored` goes there
        too). While the master has none (one restarting), ask again for connect_timeout."""
        deadline = asyncio.get_running_loop().time() + self.connect_timeout
        while True:
            slave = await self._index()
            try:
                return slave, await self._call_index(slave, "insert", params)
            except NoIndexNode as exc:
                if asyncio.get_running_loop().time() + NO_INDEX_RETRY > deadline:
                    raise NoIndexNode(f"{exc} (waited {self.connect_timeout:g} s)") from None
                await asyncio.sleep(NO_INDEX_RETRY)

    async def _call_index(self, slave: HipSlave, method: str, params: dict[str, Any]) -> Any:
        """Call `method` (insert or stored) on the index node, connected within connect_timeout;
        a refusal or a failure is a ClusterError."""
        try:
            await slave.wait_connected(self.connect_timeout)
            return await slave.call(method, params, timeout=INDEX_CALL_TIMEOUT)
        except RemoteError as exc:
            if exc.code == "no_index":
                # Connect anew next time: the master redirects once an index node joins.
                await slave.stop()
                self._slave = None
                raise NoIndexNode(f"insert refused: {exc.message}") from None
            raise ClusterError(f"insert refused: {exc.message}") from None
        except HipError as exc:
            raise ClusterError(f"insert failed: {exc}") from None

    def _claim(self, orders: list[UploadOrder]) -> _Claims:
        """The names of a batch's upload orders it uploads itself, each with the future its
        outcome is told by, and those another batch is uploading, to wait for."""
        loop = asyncio.get_running_loop()
        mine: dict[str, asyncio.Future[bool]] = {}
        others: dict[str, asyncio.Future[bool]] = {}
        for name in (order.name for order in orders):
            if name in mine or name in others:
                continue
            if (theirs := self._uploading.get(name)) is not None:
                others[name] = theirs
            else:
                mine[name] = self._uploading[name] = loop.create_future()
        return mine, others

    def _release(self, mine: dict[str, asyncio.Future[bool]], _ended: object = None) -> None:
        """Let go of a batch's claims as its task ends (`_ended`, as a done callback): one not
        decided yet (its upload failed, or was cancelled before it ended) is told to the batches
        waiting on it as a failure."""
        for name, future in mine.items():
            if not future.done():
                future.set_result(False)
            if self._uploading.get(name) is future:
                del self._uploading[name]

    async def _upload_and_confirm(
        self,
        slave: HipSlave,
        answered: InsertAnswer,
        claims: _Claims,
        body_of: BodySource,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Upload what the index node asked for, except what another batch is uploading (that
        upload is waited for instead), then confirm the insert: `stored` answers once the index
        node has appended the batch's records, which it did while the contents went up."""
        mine, others = claims
        mine_orders = [order for order in answered.orders if order.name in mine]
        await self._upload(mine_orders, answered.copies, body_of, summary, gate)
        # Told at once, not when the task ends after `stored`; a failure is told by `_release`.
        for future in mine.values():
            future.set_result(True)
        for name, future in others.items():
            if not await asyncio.shield(future):
                raise ClusterError(f"the upload of content {name} by another batch failed")
        params = Stored([*mine, *others], answered.number).to_json()
        confirmed = await self._call_index(slave, "stored", params)
        try:
            summary.added += StoredAnswer.from_json(confirmed).added
        except DlwebError as exc:
            raise ClusterError(str(exc)) from None

    async def _upload(
        self,
        orders: list[UploadOrder],
        copies: int,
        body_of: BodySource,
        summary: InsertSummary,
        gate: asyncio.Semaphore,
    ) -> None:
        """Send each content to `copies` nodes of its order, once: small ones in packs, one
        request for many, large ones or those in files alone, each to the first node of its
        chain, which passes it on down the chain as it writes."""
        packs: dict[frozenset[str], list[tuple[str, bytes]]] = {}
        # Contents whose chains name the same nodes travel in one pack, whichever node heads
        # it: fewer, larger packs (each a group commit on every node of its chain).
        nodes_of: dict[frozenset[str], tuple[str, ...]] = {}
        alone: list[tuple[UploadOrder, bytes | Path | Awaitable[bytes]]] = []
        for order in orders:
            body = body_of(order.name)
            if isinstance(body, bytes) and len(body) <= pack.MAX_PACKED:
                chain = frozenset(order.nodes[:copies])
                nodes_of.setdefault(chain, order.nodes)
                packs.setdefault(chain, []).append((order.name, body))
            else:
                alone.append((order, body))

        async def one(order: UploadOrder, body: bytes | Path | Awaitable[bytes]) -> None:
            async with gate:
                if isinstance(body, Path):
                    size = body.stat().st_size

                    async def send_file(url: str, forward: list[str]) -> UploadReceipt:
                        with open(body, "rb") as stream:
                            return await self._send(url, "PUT", stream, forward)

                    await self._copies(order.nodes, copies, f"/content/{order.name}", send_file)
                else:
                    data = body if isinstance(body, bytes) else await body
                    size = len(data)

                    async def send_bytes(url: str, forward: list[str]) -> UploadReceipt:
                        return await self._send(url, "PUT", data, forward)

                    await self._copies(order.nodes, copies, f"/content/{order.name}", send_bytes)
            summary.uploaded += 1
            summary.bytes += size

        async def packed(nodes: tuple[str, ...], items: list[tuple[str, bytes]]) -> None:
            async def send(url: str, forward: list[str]) -> UploadReceipt:
                return await self._send(url, "POST", pack.Upload(items), forward)

            async with gate:
                await self._copies(nodes, copies, "/contents", send)
            summary.uploaded += len(items)
            summary.bytes += sum(len(body) for _, body in items)

        await asyncio.gather(
            *(one(*item) for item in alone),
            *(
                packed(nodes_of[chain], part)
                for chain, items in packs.items()
                for part in _pack_parts(items)
            ),
        )

    async def _copies(
        self,
        nodes: Sequence[str],
        copies: int,
        path: str,
        send: Callable[[str, list[str]], Awaitable[UploadReceipt]],
    ) -> None:
        """Have `copies` of `nodes` hold an upload, sent once down a chain of them: a node that
        fails (refuses, answers wrong, falls silent, or fails to pass it on) is replaced by the
        next node of the list; ClusterError when the list runs out first, so an insert is never
        confirmed with fewer copies."""
        held: list[str] = []
        failed: dict[str, str] = {}
        while len(held) < copies:
            left = [node for node in nodes if node not in held and node not in failed]
            if not left:
                why = "; ".join(f"{node}: {problem}" for node, problem in failed.items())
                raise ClusterError(
                    f"upload of {path.rsplit('/', 1)[-1]} made {len(held)} of the {copies} copies"
                    f" it needs: {why}"
                )
            chain = left[: copies - len(held)]
            try:
                receipt = await send(f"{chain[0]}{path}", chain[1:])
            except ClusterError as exc:
                failed[chain[0]] = str(exc)
                continue
            held.append(chain[0])
            held.extend(node for node in receipt.forwarded if node in chain and node not in held)
            failed.update(receipt.failed)

    async def _send(
        self, url: str, method: str, data: Any, forward: Sequence[str] = ()
    ) -> UploadReceipt:
        """Upload bytes or an open file, to be passed on to `forward`; the node's receipt, or
        ClusterError unless it stored them. Each node of the chain may wait for the next one's
        silence to end, so the silence allowed grows with the chain."""
        timeout = peer_timeout(UPLOAD_TIMEOUT, self.peer_silence * (1 + len(forward)))
        headers = {**self._auth, **chain_header(forward)}
        try:
            async with self.session.request(
                method, url, data=data, headers=headers, timeout=timeout
            ) as r:
                text = await r.text()
                if r.status not in (200, 201):
                    raise ClusterError(f"upload to {url} failed: {r.status} {text[:300]}")
        except NETWORK_ERRORS as exc:
            raise ClusterError(
                f"upload to {url} failed: {failure(exc, self.peer_silence)}"
            ) from None
        try:
            return UploadReceipt.from_json(json.loads(text))
        except (ValueError, DlwebError) as exc:
            raise ClusterError(f"upload to {url} answered without a receipt: {exc}") from None

    # -- reading -------------------------------------------------------------------------------

    async def locate(
        self, kind: str, name: str, *, first: bool = False, cached: bool = True
    ) -> list[str]:
        """HTTP addresses of the nodes holding a file, by multicast and/or the master; with
        `first`, as soon as one answers (a read needs one holder, not the lookup window)."""
        if kind not in KINDS:
            raise ClusterError(f"kind must be content or structure, not {kind!r}")
        check_name(name)
        if cached and self.cache is not None and (known := self.cache.locations.get((kind, name))):
            return known
        found: list[str] = []
        if self._lookup is not None:
            found = [a.address for a in await self._lookup.locate(kind, name, first=first)]
        if not found and self.config.lookup in ("master", "both"):
            found = await self._ask_master(kind, name)
        if found and self.cache is not None:
            self.cache.put_location(kind, name, found)
        return found

    async def _holders(
        self, kind: str, name: str, given: list[str] | None = None
    ) -> AsyncIterator[str]:
        """The holders of a file to read it from (those `given`, when the caller knows them):
        the first to answer at once, the others, after a full lookup, only if the reader moves
        past it."""
        if given is not None:
            for address in given:
                yield address
            return
        quick = await self.locate(kind, name, first=True)
        if not quick:  # nobody answered within the whole lookup window
            return
        for address in quick:
            yield address
        if self.cache is not None:
            self.cache.locations.drop((kind, name))
        for address in await self.locate(kind, name, cached=False):
            if address not in quick:
                yield address

    async def _ask_master(self, kind: str, name: str) -> list[str]:
        master = await self.master_url()
        url = f"{master}/locate/{kind}/{name}"
        try:
            async with self.session.get(url) as r:
                status, text = r.status, await r.text()
        except NETWORK_ERRORS as exc:
            raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
        try:
            answer = json.loads(text)
            if status != 200:
                raise ClusterError(f"{url} answered {status}: {answer.get('error')}")
            return [str(node["address"]) for node in answer["nodes"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ClusterError(
                f"{url} answered {status} with no node list: {text[:200]!r}"
            ) from None

    async def get_content(self, name: str) -> bytes:
        """A content's bytes, verified against its name, from the first holder that serves them."""
        found = await self.content_or_holder(name, None)
        assert isinstance(found, bytes)
        return found

    async def content_or_holder(self, name: str, whole_up_to: int | None) -> "bytes | Held":
        """A content's verified bytes when it has at most `whole_up_to` bytes (any size with
        None), else the first holder that serves it and its size, read no further: the caller
        streams it (`stream_content`) instead of holding it whole."""
        if (kept := self._kept(name)) is not None:
            return kept
        problems = []
        async for address in self._holders("content", name):
            try:
                async with self.session.get(f"{address}/content/{name}") as r:
                    if r.status != 200:
                        problems.append(f"{address} answered {r.status}")
                        continue
                    size = r.content_length
                    if whole_up_to is not None and size is not None and size > whole_up_to:
                        return Held(name, address, size)
                    data = await r.read()
            except NETWORK_ERRORS as exc:
                problems.append(f"{address}: {failure(exc, self.peer_silence)}")
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
        self, held: Held, first: int = 0, last: int | None = None
    ) -> AsyncIterator[bytes]:
        """The bytes of a held content from `first` to `last` (inclusive; the end by default),
        as they arrive. A whole read is verified on the way: when the bytes end with another
        hash, the copy is reported bad and ClusterError raised before the last piece is given,
        so a reader never receives all of a wrong content."""
        whole = first == 0 and (last is None or last >= held.size - 1)
        headers = {} if whole else {"Range": f"bytes={first}-{'' if last is None else last}"}
        check = HeldBackCheck(held.name) if whole else None
        url = f"{held.address}/content/{held.name}"
        try:
            async with self.session.get(url, headers=headers) as r:
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
            raise ClusterError(f"reading {url} failed: {failure(exc, self.peer_silence)}") from None

    async def report_bad(self, address: str, name: str) -> None:
        """Ask the node that served bytes of another hash to check its copy of `name` (it
        quarantines a bad one, and the master has it repaired), and read it elsewhere next."""
        if self.cache is not None:
            self.cache.locations.drop(("content", name))
        log.warning("%s served content %s with another hash; asking it to check", address, name)
        try:
            async with self.session.post(
                f"{address}/content/{name}/check", headers=self._auth
            ) as r:
                await r.read()
        except NETWORK_ERRORS as exc:
            log.warning("%s could not be asked to check %s: %s", address, name, failure(exc))

    get_header_block = get_content

    async def get_small_contents(self, names: Sequence[str]) -> dict[str, bytes]:
        """The bytes of the contents of `names` that the storage nodes send in packs (those of
        at most pack.MAX_PACKED bytes), verified: one request a node for up to pack.MAX_NAMES
        names, each node asked only for what the ones before it did not send. The caller reads
        the others alone (`get_content`), so that large ones never wait in memory together.
        Like `get_content`, it takes what the client's cache holds and keeps what it reads."""
        wanted = list(dict.fromkeys(check_name(name) for name in names))
        got = {name: kept for name in wanted if (kept := self._kept(name)) is not None}
        for node in await self._storage_nodes():
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
        return self.cache.contents.get(name) if self.cache is not None else None

    def _keep(self, name: str, data: bytes) -> None:
        """Keep a verified content in the client's cache, if it has one and the content is
        small."""
        if self.cache is not None and len(data) <= SMALL_CONTENT:
            self.cache.contents.put(name, data, len(data))

    async def _storage_nodes(self) -> list[str]:
        """The addresses of the connected storage nodes, those holding the most files first, as
        the master listed them at most NODES_KEPT s ago (its status is costly to make)."""
        now = time.monotonic()
        if self._nodes is not None and now - self._nodes[0] < NODES_KEPT:
            return self._nodes[1]
        master, answer = await self._master_status()
        try:
            nodes = [n for n in answer["nodes"] if n["connected"]]
            nodes.sort(key=lambda n: -int(n["files"]))
            addresses = [str(n["address"]).rstrip("/") for n in nodes]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ClusterError(f"{master}/status answered without a list of nodes") from None
        self._nodes = (now, addresses)
        return addresses

    async def members(self) -> list[str]:
        """The URLs of every member of the cluster: the master, its index nodes and its storage
        nodes, connected or not (the consultation proxy sends no live request to any of them)."""
        master, answer = await self._master_status()
        try:
            nodes = [str(n["address"]) for n in answer["nodes"]]
            index_nodes = [str(address) for address in answer["index_nodes"]]
        except (KeyError, TypeError):
            raise ClusterError(f"{master}/status answered without its members") from None
        return [master, *index_nodes, *nodes]

    async def _master_status(self) -> tuple[str, Any]:
        """The master's URL and its status (JSON); ClusterError when it cannot be had."""
        master = await self.master_url()
        try:
            async with self.session.get(f"{master}/status") as r:
                return master, await r.json(content_type=None)
        except NETWORK_ERRORS as exc:
            raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
        except ValueError:
            raise ClusterError(f"{master}/status answered without a list of nodes") from None

    async def _read_pack(self, node: str, names: list[str]) -> dict[str, bytes]:
        """The contents of `names` that `node` sends in one pack and whose bytes match their
        names; nothing from a node that fails (the caller asks another, or reads them alone)."""
        got: dict[str, bytes] = {}
        try:
            async with self.session.post(
                f"{node}/contents/pack", json={"names": names}, headers=self._auth
            ) as r:
                if r.status != 200:
                    return got
                async for name, data, _ in pack.read_frames(r.content, names):
                    if data is not None and hashlib.sha256(data).hexdigest() == name:
                        got[name] = data
        except (*NETWORK_ERRORS, DlwebError) as exc:
            log.info("pack read from %s cut short: %s", node, failure(exc, self.peer_silence))
        return got

    async def closest(self, url: str, at: int, mode: str = "closest") -> Found:
        """The capture of `url` nearest to `at` (UTC microseconds), or before, after, exactly at."""
        return await self.closest_in(structure_name(url), url, at, mode)

    async def closest_in(self, name: str, url: str, at: int, mode: str = "closest") -> Found:
        """As `closest`, in the structure file `name` (`url` names it in messages)."""
        if mode not in (Mode.CLOSEST, Mode.BEFORE, Mode.AFTER, Mode.EXACT):
            raise ClusterError(f"mode must be closest, before, after or exact, not {mode!r}")
        asked = (name, mode, at)
        if self.cache is not None and (kept := self.cache.answers.get(asked)) is not None:
            if isinstance(kept, NotFound):
                raise kept
            assert isinstance(kept, Found)
            return kept
        when = format_iso(at)
        try:
            answer, address = await self._ask_structure(
                name, url, f"mode={mode}&at={quote(when)}", f"no capture of {url} {mode} {when}"
            )
        except NotFound as exc:
            if self.cache is not None:  # a miss costs a multicast wait: remember it too
                self.cache.answers.put(asked, exc)
            raise
        try:
            neighbours = {
                key: None if answer.get(key) is None else Capture.from_json(answer[key])
                for key in NEIGHBOURS
            }
            # A node of the version before may not say the URL: the one asked for stands in.
            held = str(answer.get("url", url))
            found = Found(Capture.from_json(answer["records"][0]), address, neighbours, held)
        except (KeyError, IndexError, TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without a record: {exc}") from None
        if self.cache is not None:
            self.cache.answers.put(asked, found)
        return found

    async def variants(self, url: str, at: int, limit: int = MAX_VARIANTS) -> list[str]:
        """The structure file names of the URLs of `url`'s path with other queries, those
        first captured nearest to `at` first, at most `limit` (none when `url` has no query)."""
        path = path_of(url)
        if path is None:
            return []
        name = structure_name(path)
        asked = (name, "variants", 0)
        kept = self.cache.answers.get(asked) if self.cache is not None else None
        if isinstance(kept, list):
            named: list[Capture] = kept
        else:
            try:
                records = (await self.read_structure(name, path))[1]
            except NotFound:
                records = []
            named = [r for r in records if r.kind is RecordKind.VARIANT]
            if self.cache is not None:
                self.cache.answers.put(asked, named)
        nearest = sorted(named, key=lambda record: abs(record.time - at))
        return list(dict.fromkeys(record.content for record in nearest))[:limit]

    async def captures(self, url: str) -> list[Capture]:
        """Every capture of `url` (its WARC request and metadata records aside), oldest first."""
        records = (await self.read_structure(structure_name(url), url))[1]
        return [record for record in records if record.kind in REPLAYED_KINDS]

    async def capture_days(self, url: str) -> list[DayCount]:
        """Every capture of `url` (its WARC request and metadata records aside) counted per UTC
        day, oldest first. The storage node counts them in the structure file: a URL of 100,000
        captures costs one small answer, not a list of every record."""
        answer, address = await self._ask_structure(
            structure_name(url),
            url,
            "mode=days",
            f"no capture of {url}",
        )
        try:
            return [DayCount.from_json(day) for day in answer["days"]]
        except (KeyError, TypeError, BadRecord) as exc:
            raise ClusterError(f"{address} answered without day counts: {exc}") from None

    async def captures_between(self, url: str, start: int, stop: int, limit: int) -> list[Capture]:
        """The first captures of `url` from `start` to `stop` (UTC microseconds), oldest first;
        at most `limit` records are read, WARC request and metadata records among them."""
        answer, address = await self._ask_structure(
            structure_name(url),
            url,
            f"mode=range&from={quote(format_iso(start))}&to={quote(format_iso(stop))}"
            f"&limit={limit}",
            f"no capture of {url}",
        )
        try:
            records = [Capture.from_json(record) for record in answer["records"]]
        except (KeyError, TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without records: {exc}") from None
        return [record for record in records if record.kind in REPLAYED_KINDS]

    async def read_structure(
        self, name: str, what: str | None = None, holders: list[str] | None = None
    ) -> tuple[str, list[Capture]]:
        """The URL a structure file holds and every record in it, oldest first."""
        answer, address = await self._ask_structure(
            name,
            what or f"structure file {name}",
            f"mode=range&limit={MAX_LISTED}",
            "",
            holders,
        )
        try:
            records = [Capture.from_json(record) for record in answer["records"]]
            return str(answer["url"]), records
        except (KeyError, TypeError, DlwebError) as exc:
            raise ClusterError(f"{address} answered without records: {exc}") from None

    async def structure_files(self) -> AsyncIterator[tuple[str, list[str]]]:
        """Every structure file of the cluster and the addresses of its holders, by name."""
        after = ""
        master = await self.master_url()
        while True:
            url = f"{master}/structures?after={after}"
            try:
                async with self.session.get(url) as r:
                    answer = await r.json(content_type=None)
                    if r.status != 200:
                        raise ClusterError(f"{url} answered {r.status}: {answer.get('error')}")
                page = [
                    (check_name(str(item["name"])), [str(n["address"]) for n in item["nodes"]])
                    for item in answer["structures"]
                ]
            except NETWORK_ERRORS as exc:
                raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
            except (ValueError, KeyError, TypeError, AttributeError, DlwebError):
                raise ClusterError(f"{url} answered without a list of structure files") from None
            if not page:
                return
            for item in page:
                yield item
            after = page[-1][0]

    async def _ask_structure(
        self, name: str, what: str, query: str, none: str, holders: list[str] | None = None
    ) -> tuple[dict[str, Any], str]:
        """Ask the holders of a structure file in turn; the first answer and its node.

        A 404 with records means this copy has no capture matching; it may be a stale copy (its
        node was away while captures were appended), so the next holder is asked, and only when
        none has one is it final: NotFound(none). A 404 without records means this holder lost
        its copy. The first holder that answers 200 is believed: one request a lookup.
        """
        problems: list[str] = []
        asked = missing = unmatched = 0
        async for address in self._holders("structure", name, holders):
            asked += 1
            try:
                async with self.session.get(f"{address}/structure/{name}?{query}") as r:
                    answer = await r.json(content_type=None)
                if not isinstance(answer, dict):
                    raise ValueError("the answer is not a JSON object")
            except (*NETWORK_ERRORS, ValueError) as exc:
                problems.append(f"{address}: {failure(exc, self.peer_silence)}")
                continue
            if r.status == 200:
                return answer, address
            if r.status == 404 and "records" in answer:
                unmatched += 1
                continue
            missing += r.status == 404
            problems.append(f"{address} answered {r.status}: {answer.get('error')}")
        if unmatched:
            raise NotFound(none)
        if not asked:
            raise NotFound(f"{what} is not in the archive")
        if missing == asked:
            raise NotFound(f"{what} is not in the archive (no holder has its structure file)")
        raise ClusterError(f"no holder of {what}'s structure file answered: {'; '.join(problems)}")


def _pack_parts(items: list[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    """Packs of at most PACK_FRAMES contents and about PACK_BYTES bytes."""
    part: list[tuple[str, bytes]] = []
    size = 0
    for item in items:
        if part and (len(part) >= PACK_FRAMES or size + len(item[1]) > PACK_BYTES):
            yield part
            part, size = [], 0
        part.append(item)
        size += len(item[1])
    if part:
        yield part
