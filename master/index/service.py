"""The index node: takes captures from inserting clients, appends them to structure files, and
says which contents are new and where to upload them (docs/cluster.md)."""

import asyncio
import contextlib
import itertools
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from archive import jsonwire
from archive.atomic import atomic_write
from archive.config import ClusterConfig
from archive.errors import ConfigError, DlwebError
from archive.hip import (
    Handler,
    HipError,
    HipMaster,
    HipSlave,
    Peer,
    RemoteError,
    hip_url,
)
from archive.inserts import MAX_CAPTURES, InsertAnswer, Stored, StoredAnswer
from archive.metadata import cluster_id
from archive.network import failure, peer_timeout
from archive.tasks import Background
from archive.urlkey import structure_name
from archive.variants import path_of, variant_record

from .captures import Incoming, parse_captures
from .contents import ContentIndex
from .placement import NodeInfo, node_info, place

log = logging.getLogger(__name__)
T = TypeVar("T")

APPENDS_IN_FLIGHT = 32
APPEND_BATCH = 1_000
REFRESH_EVERY = 2.0
# A bound on a whole append request, for a body stalled on its way to a cut node (aiohttp has no
# send timeout); a silent node is given up after PEER_SILENCE without an answer.
APPEND_TIMEOUT = 120.0
# No append is waited for longer, so a node refuses one that arrives after this (one a cut link
# delivered late); the clocks of index and storage nodes may differ by less than this.
APPEND_DEADLINE = APPEND_TIMEOUT
# Cached answers of structure.claim; past this many the cache starts again.
MAX_CLAIMS = 1_000_000
# References of contents ordered for upload and not yet confirmed by `stored`.
MAX_PENDING = 1_000_000
# Changed structure files kept while the master cannot be told.
MAX_UNSENT = 1_000_000
# How long an insert waits for the master to record which structure files it changed (a master
# that is restarting included), as it waits for a claim.
TELL_TIMEOUT = 60.0
# Inserts answered and not confirmed by `stored` yet (a client's failed batches are never);
# past this many the oldest are forgotten.
MAX_UNCONFIRMED = 10_000
# States of the nodes whose active structure copies may be remembered between calls.
APPENDABLE = frozenset(("alive", "read-only"))
# Errors of a storage node's HTTP answer; the append is then retried, and re-claimed.
NODE_ERRORS = (
    aiohttp.ClientError,
    OSError,
    TimeoutError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
)
# Errors of a node that did not answer at all (refused, cut, silent).
NODE_GONE = (aiohttp.ClientConnectionError, OSError, TimeoutError)


@dataclass(frozen=True)
class IndexOptions:
    data: Path
    host: str
    port: int
    config: ClusterConfig
    master: str
    advertise: str | None = None
    # The content index's metadata URL (archive.metadata); None for the SQLite file in `data`.
    metadata: str | None = None


class AppendFailed(DlwebError):
    """A storage node did not take an append."""


def _identity(data: Path) -> str:
    """The index node's name, chosen once and kept in DATA/index.json."""
    path = data / "index.json"
    if path.exists():
        try:
            chosen = json.loads(path.read_text())["id"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: cannot read the index node's id: {exc}") from None
        if not isinstance(chosen, str) or not chosen:
            raise ConfigError(f"{path}: the id must be a non-empty string")
        return chosen
    chosen = f"index-{uuid.uuid4().hex[:8]}"
    atomic_write(path, json.dumps({"id": chosen}).encode())
    return chosen


def _records(items: list[Incoming]) -> list[dict[str, object]]:
    return [item.capture.to_json() for item in items]


def _variants(
    groups: dict[str, list[Incoming]], results: dict[str, tuple[int, bool]]
) -> dict[str, list[Incoming]]:
    """The variant records of the structure files just created for URLs with a query, grouped
    by the structure file of their path."""
    variants: dict[str, list[Incoming]] = {}
    for name, (_, created) in results.items():
        path = path_of(groups[name][0].url) if created else None
        if path is None:
            continue
        when = min(item.capture.time for item in groups[name])
        incoming = Incoming(path, structure_name(path), variant_record(name, when), 0, 0)
        variants.setdefault(incoming.structure, []).append(incoming)
    return variants


def _deadline() -> float:
    """The time after which a storage node refuses an append sent now."""
    return time.time() + APPEND_DEADLINE


@dataclass(frozen=True)
class Appended:
    """The copies of a structure file that took an insert's records: those appended to as its
    active copy (one, unless changes of several inserts were gathered) and the other copies.
    Both empty when they are not known (an insert whose appends failed)."""

    active: frozenset[str] = frozenset()
    others: frozenset[str] = frozenset()

    def __or__(self, other: "Appended") -> "Appended":
        return Appended(self.active | other.active, self.others | other.others)

    def to_json(self) -> dict[str, list[str]]:
        return {"active": sorted(self.active), "others": sorted(self.others)}


def _changed_params(names: list[str], changes: Mapping[str, Appended]) -> dict[str, Any]:
    """The params of `structure.changed`: the names, and the copies each was appended to."""
    copies = {name: changes[name].to_json() for name in names if changes[name].active}
    return {"names": names, "copies": copies}


class IndexNode:
    def __init__(self, options: IndexOptions) -> None:
        options.data.mkdir(parents=True, exist_ok=True)
        self.options = options
        self.id = _identity(options.data)
        self.address = options.advertise or f"ws://{options.host}:{options.port}/hip"
        self.contents = ContentIndex(
            options.metadata or options.data / "contents.db",
            cluster_id(options.config.name, options.config.secret),
        )
        self.popular_refs = options.config.replication.popular_refs
        self.nodes: list[NodeInfo] = []
        self.claims: dict[str, str] = {}
        # The other copies a claimed structure file's appends reach too, as the master named them.
        self.replicas: dict[str, tuple[str, ...]] = {}
        self.stats: Counter[str] = Counter()
        self.started = time.time()
        handlers: dict[str, Handler] = {"insert": self._insert, "stored": self._stored}
        self.hip = HipMaster(
            options.config.secret, self.id, handlers, on_disconnect=self._forget_inserts
        )
        self.upstream = HipSlave(
            hip_url(options.master),
            options.config.secret,
            self.id,
            {"nodes.changed": self._nodes_changed},
            role="index",
            on_connect=self._on_connect,
        )
        self._session: aiohttp.ClientSession | None = None
        self._appending = asyncio.Semaphore(APPENDS_IN_FLIGHT)
        self._refresh: asyncio.Task[None] | None = None
        self._token = options.config.write_token
        self._background = Background()
        # The appends of each insert answered and not yet confirmed by `stored`, by the number
        # the answer gave, with the connection they came by.
        self._appends: dict[int, tuple[Peer, asyncio.Task[int]]] = {}
        self._insert_numbers = itertools.count(1)
        self._pending: dict[str, int] = {}
        self._appendable: frozenset[str] = frozenset()
        # Changed structure files the master has not recorded yet, with the copies each insert
        # appended to (see `_tell_changed`).
        self._unsent: dict[str, Appended] = {}
        # The appends of inserts under way, confirmed or not (a client that gave up or left does
        # not stop them), and the telling of those of failed inserts that landed: /status counts
        # them as `appending`, so that one can tell when every copy may have its last records.
        self._working: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=peer_timeout(APPEND_TIMEOUT),
            connector=aiohttp.TCPConnector(limit=APPENDS_IN_FLIGHT * 2),
            json_serialize=jsonwire.dumps,
        )
        await self.upstream.start()
        self._refresh = asyncio.create_task(self._refresh_nodes(), name="node list")

    async def stop(self) -> None:
        """Close the connections to clients and to the master; the database stays open for
        requests still being answered."""
        if self._refresh is not None:
            self._refresh.cancel()
        await self.hip.close()
        await self.upstream.stop()
        self._background.cancel()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self.contents.close()

    def status(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "address": self.address,
            "master": {"url": self.options.master, "connected": self._master_connected()},
            "nodes": len(self.nodes),
            "alive": sum(1 for node in self.nodes if node.state == "alive"),
            "contents": len(self.contents),
            "claims": len(self.claims),
            "pending_uploads": len(self._pending),
            "unconfirmed_inserts": len(self._appends),
            "unsent_changes": len(self._unsent),
            "appending": len(self._working),
            "clients": len(self.hip.slaves),
            "counters": dict(self.stats),
            "uptime": round(time.time() - self.started, 1),
        }

    def _master_connected(self) -> bool:
        peer = self.upstream.peer
        return peer is not None and not peer.closed

    # -- the master ----------------------------------------------------------------------------

    async def _on_connect(self, peer: Peer) -> None:
        await peer.call("index.join", {"address": self.address})
        await self._load_nodes(peer)
        await self._send_unsent(peer)
        log.info("index node %s joined master %s; clients at %s", self.id, peer.name, self.address)

    async def _load_nodes(self, peer: Peer) -> None:
        answer = await peer.call("cluster.nodes", {})
        self.nodes = [node_info(item) for item in answer.get("nodes", [])]
        appendable = frozenset(node.address for node in self.nodes if node.state in APPENDABLE)
        if self._appendable - appendable:
            # A node left or stopped taking writes: the master moves its active copies, so
            # what was claimed on it is claimed again.
            self.claims = {n: a for n, a in self.claims.items() if a in appendable}
            self.replicas.clear()
        self._appendable = appendable

    async def _nodes_changed(self, peer: Peer, params: Any) -> None:
        await self._reload_nodes()

    async def _refresh_nodes(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_EVERY)
            await self._reload_nodes()

    async def _reload_nodes(self) -> None:
        """Ask the master for the node list again; keep the old one if it cannot answer."""
        peer = self.upstream.peer
        if peer is None or peer.closed:
            return
        try:
            await self._load_nodes(peer)
        except (HipError, RemoteError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("could not refresh the node list: %s", exc)

    async def _claim(self, names: list[str]) -> dict[str, str]:
        """Ask the master which node holds the active copy of each structure file (placing the
        new ones); the answers on nodes that take appends are remembered."""
        found: dict[str, str] = {}
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                answer = await self.upstream.call("structure.claim", {"names": part}, timeout=60)
            except HipError as exc:
                raise RemoteError("unavailable", f"the master cannot be reached: {exc}") from None
            nodes = answer.get("nodes") if isinstance(answer, dict) else None
            if not isinstance(nodes, dict):
                raise RemoteError("error", "the master answered structure.claim without nodes")
            found.update((str(k), str(v)) for k, v in nodes.items())
            replicas = answer.get("replicas")
            if isinstance(replicas, dict):
                self.replicas.update(
                    (str(name), tuple(str(a) for a in addresses))
                    for name, addresses in replicas.items()
                    if isinstance(addresses, list)
                )
        missing = [name for name in names if name not in found]
        if missing:
            raise RemoteError("error", f"the master placed no node for structure {missing[0]}")
        if len(self.claims) + len(found) > MAX_CLAIMS:
            self.claims.clear()
            self.replicas.clear()
        self.claims.update((n, a) for n, a in found.items() if a in self._appendable)
        self.stats["claims"] += len(names)
        return found

    # -- clients -------------------------------------------------------------------------------

    async def _insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        """Answer which contents to upload and where as soon as they are looked up, while the
        structure records are appended: the client uploads meanwhile, and its `stored` waits for
        the appends. Nothing is awaited between the lookup and the answer, so a content another
        insert confirms is either known to this one or still claimed by its uploader."""
        incoming = parse_captures(params)
        refs: Counter[str] = Counter()
        sizes: dict[str, int] = {}
        groups: dict[str, list[Incoming]] = {}
        for item in incoming:
            capture = item.capture
            sizes.setdefault(capture.content, item.size)
            sizes.setdefault(capture.header, item.header_size)
            refs[capture.content] += 1
            refs[capture.header] += 1
            groups.setdefault(item.structure, []).append(item)
        copies = self.options.config.replication.insert_copies
        if sum(node.state == "alive" for node in self.nodes) < copies:
            # The list may be older than the nodes' return (a master that just restarted).
            await self._reload_nodes()
        known = self.contents.known(sizes)
        # Placed before anything is written, so an insert that cannot be stored changes nothing.
        upload = place(self.nodes, {n: s for n, s in sizes.items() if n not in known}, copies)
        number = next(self._insert_numbers)
        task = self._spawn_work(self._append_batch(groups, refs, known))
        task.add_done_callback(_retrieved)
        if len(self._appends) >= MAX_UNCONFIRMED:
            del self._appends[next(iter(self._appends))]
        self._appends[number] = (peer, task)
        self.stats["uploads_asked"] += len(upload)
        return InsertAnswer(upload, number, copies).to_json()

    async def _append_batch(
        self, groups: dict[str, list[Incoming]], refs: Mapping[str, int], known: set[str]
    ) -> int:
        """Append an insert's records to their structure files, then the variant records of
        the files it created for URLs with a query; the records added."""
        results = await self._append_groups(groups)
        variants = _variants(groups, results)
        if variants:
            await self._append_groups(variants)
        self._count_refs(refs, known)
        added = sum(added for added, _ in results.values())
        self.stats["captures"] += sum(len(items) for items in groups.values())
        self.stats["records_added"] += added
        return added

    async def _append_groups(
        self, groups: dict[str, list[Incoming]]
    ) -> dict[str, tuple[int, bool]]:
        """Append records to their structure files, claimed first where not known; each file's
        records added and whether it was created."""
        where = {name: self.claims[name] for name in groups if name in self.claims}
        cached = dict(where)
        unclaimed = [name for name in groups if name not in where]
        if unclaimed:
            where.update(await self._claim(unclaimed))
        results: dict[str, tuple[int, bool]] = {}
        try:
            await self._append_all(groups, where, results)
            replicas = await self._append_replicas(groups, results, where)
        except BaseException:
            # The appends that landed are told at once, so that their other copies are marked
            # stale and refreshed now, not when the insert's last append can no longer land; one
            # whose answer was lost, or still travelling, may land until its deadline: every
            # file is told again after that.
            landed = {
                name: Appended(frozenset([where[name]]))
                for name, (added, _) in results.items()
                if added
            }
            if landed:
                self._spawn_work(self._tell_now(landed))
            self._spawn(self._tell_later(list(groups)))
            raise
        # A file just created has no replica yet: the master's copies of it will be fresh. One
        # created on the node the cache named is told all the same: the master may have made
        # another copy active since (that node lost its copy).
        changed = [
            name
            for name, (added, created) in results.items()
            if added and (not created or cached.get(name) == where[name])
        ]
        if changed:
            await self._tell_changed(
                {
                    name: Appended(frozenset([where[name]]), frozenset(replicas.get(name, ())))
                    for name in changed
                }
            )
        return results

    def _spawn(self, work: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        """Run `work` on its own, cancelled when the index node stops."""
        return self._background.spawn(work)

    def _spawn_work(self, work: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        """`_spawn` work that /status counts as `appending` until it ends."""
        task = self._spawn(work)
        self._working.add(task)
        task.add_done_callback(self._working.discard)
        return task

    async def _forget_inserts(self, peer: Peer) -> None:
        """A client gone cannot confirm its inserts: their appends go on, unawaited."""
        for number in [n for n, (by, _) in self._appends.items() if by is peer]:
            del self._appends[number]

    def _count_refs(self, refs: Mapping[str, int], known: set[str]) -> None:
        """Count the references: now for known contents, at `stored` for the others."""
        more = {name: refs[name] for name in known}
        self._report_popular(self.contents.count_refs(more), more)
        if len(self._pending) > MAX_PENDING:
            self._pending.clear()
        for name, count in refs.items():
            if name not in known:
                self._pending[name] = self._pending.get(name, 0) + count

    def _report_popular(self, counts: Mapping[str, int], added: Mapping[str, int]) -> None:
        """Tell the master the counts of popular contents that changed. Each change is sent, not
        only the one reaching the threshold, so a count the master could not apply yet (a file
        not in its inventory yet) is set by the next reference."""
        popular = {
            name: count
            for name, count in counts.items()
            if count >= self.popular_refs and added.get(name, 0) > 0
        }
        if not popular:
            return
        items = list(popular.items())
        for start in range(0, len(items), MAX_CAPTURES):
            part = dict(items[start : start + MAX_CAPTURES])
            self._spawn(self._tell_master("content.refs", {"refs": part}))

    async def _tell_now(self, changes: dict[str, Appended]) -> None:
        """Tell the master these files changed, from an insert that fails: nobody waits."""
        with contextlib.suppress(RemoteError):
            await self._tell_changed(changes)

    async def _tell_later(self, names: list[str]) -> None:
        """Tell the master these files changed once no append sent before now can land."""
        await asyncio.sleep(APPEND_DEADLINE)
        with contextlib.suppress(RemoteError):
            await self._tell_changed({name: Appended() for name in names})

    async def _tell_changed(self, changes: dict[str, Appended]) -> None:
        """Have the master record that these structure files changed, so that their other
        copies are marked stale and refreshed, before the insert that changed them is
        acknowledged. A notification is not enough: a master that dies before reading it leaves
        those copies unmarked for good, while the insert is acknowledged.

        Each file comes with the copies its records were appended to: the master compares the
        one appended to as active with its own active copy (which moves when a node is lost,
        while this node may still append to the old one, as cached), and learns of the copies
        just created on other nodes. RemoteError when the master does not answer; the changes
        are then kept and told on the next connection, or with the next change told."""
        self._keep_unsent(changes)
        names, pending = list(self._unsent), self._unsent
        self._unsent = {}
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                await self.upstream.call(
                    "structure.changed", _changed_params(part, pending), timeout=TELL_TIMEOUT
                )
            except (HipError, RemoteError) as exc:
                self._keep_unsent({name: pending[name] for name in names[start:]})
                log.warning(
                    "could not tell the master of %d changed structure files: %s",
                    len(names) - start,
                    exc,
                )
                raise RemoteError(
                    "unavailable",
                    f"the master did not record the changed structure files: {exc}",
                ) from None

    async def _tell_master(self, method: str, params: dict[str, Any]) -> None:
        """Notify the master without waiting for a connection (what is lost is sent again with
        the next change)."""
        peer = self.upstream.peer
        try:
            if peer is None or peer.closed:
                raise HipError("not connected")
            await peer.notify(method, params)
        except HipError as exc:
            log.warning("could not notify the master (%s): %s", method, exc)

    def _keep_unsent(self, changes: Mapping[str, Appended]) -> None:
        if len(self._unsent) + len(changes) > MAX_UNSENT:
            log.warning("dropping %d unsent structure changes", len(self._unsent))
            self._unsent.clear()
        for name, appended in changes.items():
            self._unsent[name] = appended | self._unsent.get(name, Appended())

    async def _send_unsent(self, peer: Peer) -> None:
        """Tell a master just connected to the changes it may not have recorded."""
        names, pending = list(self._unsent), self._unsent
        self._unsent = {}
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                await peer.call(
                    "structure.changed", _changed_params(part, pending), timeout=TELL_TIMEOUT
                )
            except (HipError, RemoteError):
                self._keep_unsent({name: pending[name] for name in names[start:]})
                raise
        if names:
            log.info("told the master of %d structure changes made while away", len(names))

    async def _append_all(
        self,
        groups: dict[str, list[Incoming]],
        where: dict[str, str],
        results: dict[str, tuple[int, bool]],
    ) -> None:
        """Append to every structure file, one request per node for many files; a file the batch
        did not take is appended alone, and claimed again if its node fails. Each file's records
        added and whether it was created go into `results` as they land, so that a caller whose
        appends fail knows those that did not."""
        by_node: dict[str, list[str]] = {}
        for name in groups:
            by_node.setdefault(where[name], []).append(name)
        refused: list[str] = []
        gone: set[str] = set()

        async def to_node(address: str, names: list[str]) -> None:
            for start in range(0, len(names), APPEND_BATCH):
                part = names[start : start + APPEND_BATCH]
                files = [
                    {"name": n, "url": groups[n][0].url, "records": _records(groups[n])}
                    for n in part
                ]
                try:
                    results.update(await self._post_many(address, files, refused))
                except (*NODE_ERRORS, AppendFailed) as exc:
                    if isinstance(exc, NODE_GONE):
                        gone.add(address)
                    log.warning(
                        "batch append of %d files to %s failed: %s",
                        len(part),
                        address,
                        failure(exc),
                    )

        await asyncio.gather(*(to_node(address, names) for address, names in by_node.items()))
        if refused:
            raise RemoteError("bad_params", f"insert: a storage node refused {refused[0]}")
        left = [name for name in groups if name not in results]
        alone = await asyncio.gather(
            *(self._append(name, groups[name], where, gone) for name in left),
            return_exceptions=True,
        )
        failed: BaseException | None = None
        for name, result in zip(left, alone, strict=True):
            if isinstance(result, BaseException):
                failed = failed or result
            else:
                results[name] = result
        if failed is not None:
            raise failed

    async def _append_replicas(
        self,
        groups: dict[str, list[Incoming]],
        results: dict[str, tuple[int, bool]],
        where: dict[str, str],
    ) -> dict[str, list[str]]:
        """Append the records just appended to each active copy to as many other copies as an
        insert waits for, before it is acknowledged: the copies the master named, then, for
        those that fail, copies on other nodes. A copy created by an append to a file that is
        not new is partial, so stale until refreshed from the active one. RemoteError when too few copies took them; otherwise the
        addresses of the copies that took them, by file."""
        wanted = self.options.config.replication.insert_copies - 1
        names = [name for name, (added, _) in results.items() if added]
        took_by: dict[str, list[str]] = {}
        if wanted <= 0 or not names:
            return took_by
        unknown = [name for name in names if name not in self.replicas]
        if unknown:
            await self._claim(unknown)
        alive = [node.address for node in self.nodes if node.state == "alive"]
        tried: dict[str, set[str]] = {name: {where[name]} for name in names}
        made: Counter[str] = Counter()
        problems: dict[str, str] = {}
        while True:
            rounds: dict[str, list[dict[str, Any]]] = {}
            for name in names:
                if made[name] >= wanted:
                    continue
                created = results[name][1]
                named = [a for a in self.replicas.get(name, ()) if a not in tried[name]]
                spare = [a for a in alive if a not in tried[name]]
                if not named and not spare:
                    continue
                address = (named or spare)[0]
                tried[name].add(address)
                # Created wherever it is missing, a named copy included: another insert's
                # append may still be creating it there.
                item: dict[str, Any] = {
                    "name": name,
                    "url": groups[name][0].url,
                    "records": _records(groups[name]),
                    "create": True,
                    "partial": not created,
                }
                rounds.setdefault(address, []).append(item)
            if not rounds:
                break
            taken = await asyncio.gather(
                *(self._post_replica(address, files) for address, files in rounds.items())
            )
            for (address, _), (took, failed) in zip(rounds.items(), taken, strict=True):
                made.update(took)
                for name in took:
                    took_by.setdefault(name, []).append(address)
                problems.update((name, f"{address}: {why}") for name, why in failed.items())
        short = [name for name in names if made[name] < wanted]
        if short:
            name = short[0]
            raise RemoteError(
                "error",
                f"cannot append to {wanted + 1} copies of structure {name} ({len(short)} files"
                f" short): only {made[name] + 1} took the records; {problems.get(name, '')}",
            )
        self.stats["replica_appends"] += sum(made.values())
        return took_by

    async def _post_replica(
        self, address: str, files: list[dict[str, Any]]
    ) -> tuple[list[str], dict[str, str]]:
        """POST /structures to copies that are not active; the files taken and why the others
        were not (a node that fails takes none)."""
        taken: list[str] = []
        failed: dict[str, str] = {}
        for start in range(0, len(files), APPEND_BATCH):
            part = files[start : start + APPEND_BATCH]
            try:
                for result in await self._post_structures(address, part, replica=True):
                    if "error" in result:
                        failed[str(result["name"])] = str(result["error"])
                    else:
                        taken.append(str(result["name"]))
            except (*NODE_ERRORS, AppendFailed) as exc:
                failed.update((str(item["name"]), failure(exc)) for item in part)
        return taken, failed

    async def _post_structures(
        self, address: str, files: list[dict[str, Any]], replica: bool = False
    ) -> list[dict[str, Any]]:
        """POST /structures (to copies other than the active one with `replica`); each file's
        result, or AppendFailed when the node refused the request as a whole."""
        assert self._session is not None
        body: dict[str, Any] = {"files": files, "deadline": _deadline()}
        if replica:
            body["replica"] = True
        async with (
            self._appending,
            self._session.post(f"{address}/structures", json=body, headers=self._headers()) as r,
        ):
            answer = await r.json(content_type=None, loads=jsonwire.loads)
            if r.status != 200:
                raise AppendFailed(f"{address} answered {r.status}: {answer.get('error')}")
        results: list[dict[str, Any]] = answer["results"]
        return results

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def _post_many(
        self, address: str, files: list[dict[str, Any]], refused: list[str]
    ) -> dict[str, tuple[int, bool]]:
        """POST /structures; the files the node took. A refused record is the client's fault."""
        taken: dict[str, tuple[int, bool]] = {}
        for result in await self._post_structures(address, files):
            if "error" not in result:
                taken[result["name"]] = (int(result["added"]), bool(result["created"]))
            elif result.get("status") == 400:
                refused.append(str(result["error"]))
        self.stats["appends"] += len(taken)
        return taken

    async def _append(
        self, name: str, items: list[Incoming], where: dict[str, str], gone: set[str]
    ) -> tuple[int, bool]:
        """Append captures to the active copy; claim it again once if its node fails, at once
        if its node is `gone` (it just failed a batch without answering)."""
        body = {"url": items[0].url, "records": _records(items)}
        first = 1
        if (lost := where[name]) in gone:
            first = 2
            self.claims.pop(name, None)
            where[name] = (await self._claim([name]))[name]
            if where[name] == lost:
                raise RemoteError(
                    "error",
                    f"cannot append to structure {name}: {lost} did not answer and the master"
                    " still names it for the active copy",
                )
        for attempt in range(first, 3):
            address = where[name]
            try:
                return await self._post(address, name, body)
            except (*NODE_ERRORS, AppendFailed) as exc:
                log.warning(
                    "append to %s on %s failed (%s); attempt %d",
                    name,
                    address,
                    failure(exc),
                    attempt,
                )
                self.claims.pop(name, None)
                if attempt == 2:
                    raise RemoteError(
                        "error", f"cannot append to structure {name} on {address}: {failure(exc)}"
                    ) from None
                where[name] = (await self._claim([name]))[name]
        raise AssertionError("unreachable")

    async def _post(self, address: str, name: str, body: dict[str, Any]) -> tuple[int, bool]:
        assert self._session is not None
        async with (
            self._appending,
            self._session.post(
                f"{address}/structure/{name}",
                json={**body, "deadline": _deadline()},
                headers=self._headers(),
            ) as r,
        ):
            answer = await r.json(content_type=None, loads=jsonwire.loads)
            if r.status == 400:
                raise RemoteError("bad_params", f"insert: {address} refused: {answer.get('error')}")
            if r.status != 200:
                raise AppendFailed(f"{address} answered {r.status}: {answer.get('error')}")
            self.stats["appends"] += 1
            return int(answer["added"]), bool(answer.get("created"))

    async def _stored(self, peer: Peer, params: Any) -> dict[str, Any]:
        """Count the uploaded contents as known once the insert's appends are done; the records
        they added. An insert whose appends failed confirms nothing: their failure is raised."""
        try:
            stored = Stored.from_json(params)
        except DlwebError as exc:
            raise RemoteError("bad_params", str(exc)) from None
        names, number = stored.names, stored.insert
        by, task = self._appends.get(number, (None, None))
        if task is None or by is not peer:
            raise RemoteError(
                "bad_params", f"stored: insert {number} is not one of this connection's to confirm"
            )
        del self._appends[number]
        # Shielded: a confirmation cut short (its connection lost) leaves the appends going on.
        records = await asyncio.shield(task)
        added = {name: self._pending.pop(name, 0) for name in dict.fromkeys(names)}
        self._report_popular(self.contents.add(added), added)
        self.stats["stored"] += len(added)
        return StoredAnswer(records).to_json()


def _retrieved(task: "asyncio.Task[int]") -> None:
    """Mark a failed append as seen: its failure goes to the `stored` that awaits it, and an
    insert nobody confirms (its client gone) is logged, not reported as never retrieved."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.info("the appends of an insert failed: %s", exc)
