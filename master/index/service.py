"""The index node: takes captures from inserting clients, appends them to structure files, and
says which contents are new and where to upload them (docs/cluster.md)."""

import asyncio
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from archive.config import ClusterConfig
from archive.errors import DlwebError
from archive.hashing import is_valid_name
from archive.hip import Handler, HipError, HipMaster, HipSlave, Peer, RemoteError, hip_url
from archive.structure import Capture
from archive.urlkey import structure_name

from ..db import NodeRow
from ..policy import choose_node
from .contents import ContentIndex

log = logging.getLogger(__name__)

MAX_CAPTURES = 5_000
MAX_URL = 8_192
APPENDS_IN_FLIGHT = 32
APPEND_BATCH = 1_000
REFRESH_EVERY = 2.0
DEFAULT_HEADER_SIZE = 512


@dataclass(frozen=True)
class IndexOptions:
    data: Path
    host: str
    port: int
    config: ClusterConfig
    master: str
    advertise: str | None = None


def _bad(message: str) -> RemoteError:
    return RemoteError("bad_params", message)


def _int(item: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = item.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(f"{where}: {key!r} must be a non-negative integer")
    return value


@dataclass(frozen=True, slots=True)
class Incoming:
    url: str
    structure: str
    capture: Capture
    size: int
    header_size: int


def parse_captures(params: Any) -> list[Incoming]:
    """The captures of an insert call, each field checked, naming the first bad one."""
    if not isinstance(params, dict) or not isinstance(params.get("captures"), list):
        raise _bad("insert: params must be {captures: [...]}")
    raw = params["captures"]
    if not raw or len(raw) > MAX_CAPTURES:
        raise _bad(f"insert: give 1 to {MAX_CAPTURES} captures a call, not {len(raw)}")
    parsed = []
    for index, item in enumerate(raw):
        where = f"insert: captures[{index}]"
        if not isinstance(item, dict):
            raise _bad(f"{where} must be an object")
        url = item.get("url")
        if not isinstance(url, str) or not url or len(url) > MAX_URL:
            raise _bad(f"{where}: 'url' must be a string of 1 to {MAX_URL} characters")
        try:
            capture = Capture.from_json(item)
            name = structure_name(url)
        except DlwebError as exc:
            raise _bad(f"{where}: {exc}") from None
        size = _int(item, "size", where)
        header_size = _int(item, "header_size", where, DEFAULT_HEADER_SIZE)
        parsed.append(Incoming(url, name, capture, size, header_size))
    return parsed


def _records(items: list[Incoming]) -> list[dict[str, object]]:
    return [item.capture.to_json() for item in items]


def _node_row(data: Mapping[str, Any]) -> NodeRow:
    return NodeRow(
        id=str(data["id"]),
        address=str(data["address"]),
        domain=str(data.get("domain", "default")),
        reliability=str(data.get("reliability", "normal")),
        state=str(data.get("state", "alive")),
        free=int(data.get("free", 0)),
        total=int(data.get("total", 0)),
        groups=[g for g in data.get("groups", []) if isinstance(g, int)],
    )


def _identity(data: Path) -> str:
    path = data / "index.json"
    if path.exists():
        return str(json.loads(path.read_text())["id"])
    chosen = f"index-{uuid.uuid4().hex[:8]}"
    temp = path.with_suffix(".part")
    temp.write_text(json.dumps({"id": chosen}))
    temp.replace(path)
    return chosen


class IndexNode:
    def __init__(self, options: IndexOptions) -> None:
        options.data.mkdir(parents=True, exist_ok=True)
        self.options = options
        self.id = _identity(options.data)
        self.address = options.advertise or f"ws://{options.host}:{options.port}/hip"
        self.contents = ContentIndex(options.data / "contents.db")
        self.popular_refs = options.config.replication.popular_refs
        self.nodes: list[NodeRow] = []
        self.claims: dict[str, str] = {}
        self.stats: Counter[str] = Counter()
        self.started = time.time()
        handlers: dict[str, Handler] = {"insert": self._insert, "stored": self._stored}
        self.hip = HipMaster(options.config.secret, self.id, handlers)
        self.upstream = HipSlave(
            hip_url(options.master),
            options.config.secret,
            self.id,
            {},
            role="index",
            on_connect=self._on_connect,
        )
        self._session: aiohttp.ClientSession | None = None
        self._appending = asyncio.Semaphore(APPENDS_IN_FLIGHT)
        self._refresh: asyncio.Task[None] | None = None
        self._token = options.config.write_token
        self._background: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=120, sock_connect=10),
            connector=aiohttp.TCPConnector(limit=APPENDS_IN_FLIGHT * 2),
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
            "contents": len(self.contents),
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
        log.info("index node %s joined master %s; clients at %s", self.id, peer.name, self.address)

    async def _load_nodes(self, peer: Peer) -> None:
        answer = await peer.call("cluster.nodes", {})
        self.nodes = [_node_row(item) for item in answer.get("nodes", [])]

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
        except (HipError, RemoteError, KeyError, TypeError, ValueError) as exc:
            log.warning("could not refresh the node list: %s", exc)

    async def _claim(self, names: list[str]) -> None:
        """Learn from the master which node holds the active copy of each structure file."""
        for start in range(0, len(names), MAX_CAPTURES):
            part = names[start : start + MAX_CAPTURES]
            try:
                answer = await self.upstream.call("structure.claim", {"names": part}, timeout=60)
            except HipError as exc:
                raise RemoteError("unavailable", f"the master cannot be reached: {exc}") from None
            self.claims.update(answer["nodes"])

    # -- clients -------------------------------------------------------------------------------

    async def _insert(self, peer: Peer, params: Any) -> dict[str, Any]:
        incoming = parse_captures(params)
        groups: dict[str, list[Incoming]] = {}
        for item in incoming:
            groups.setdefault(item.structure, []).append(item)
        if not any(row.state == "alive" for row in self.nodes):
            await self._reload_nodes()
        unclaimed = [name for name in groups if name not in self.claims]
        if unclaimed:
            await self._claim(unclaimed)
        results = await self._append_all(groups)
        # A file just created has no replica yet: the master's copies of it will be fresh.
        changed = [name for name, (added, created) in results.items() if added and not created]
        if changed:
            try:
                await self.upstream.notify("structure.changed", {"names": changed}, timeout=30)
            except HipError as exc:
                log.warning(
                    "could not tell the master of %d changed structures: %s", len(changed), exc
                )
        upload = self._uploads(incoming)
        self.stats["captures"] += len(incoming)
        self.stats["uploads_asked"] += len(upload)
        return {"added": sum(added for added, _ in results.values()), "upload": upload}

    async def _append_all(self, groups: dict[str, list[Incoming]]) -> dict[str, tuple[int, bool]]:
        """Append to every structure file, one request per node for many files; what a node
        could not take is appended alone, re-claimed once if its node fails."""
        by_node: dict[str, list[str]] = {}
        for name in groups:
            by_node.setdefault(self.claims[name], []).append(name)
        results: dict[str, tuple[int, bool]] = {}

        async def to_node(address: str, names: list[str]) -> None:
            for start in range(0, len(names), APPEND_BATCH):
                part = names[start : start + APPEND_BATCH]
                files = [
                    {"name": n, "url": groups[n][0].url, "records": _records(groups[n])}
                    for n in part
                ]
                try:
                    results.update(await self._post_many(address, files))
                except (aiohttp.ClientError, OSError, TimeoutError, DlwebError) as exc:
                    log.warning(
                        "batch append of %d files to %s failed: %s", len(part), address, exc
                    )

        await asyncio.gather(*(to_node(address, names) for address, names in by_node.items()))
        left = [name for name in groups if name not in results]
        alone = await asyncio.gather(*(self._append(name, groups[name]) for name in left))
        results.update(zip(left, alone, strict=True))
        return results

    async def _post_many(
        self, address: str, files: list[dict[str, Any]]
    ) -> dict[str, tuple[int, bool]]:
        """POST /structures; the files the node took. A refused record is the client's fault."""
        assert self._session is not None
        headers = {"Authorization": f"Bearer {self._token}"}
        async with self._session.post(
            f"{address}/structures", json={"files": files}, headers=headers
        ) as r:
            answer = await r.json(content_type=None)
            if r.status != 200:
                raise DlwebError(f"{address} answered {r.status}: {answer.get('error')}")
        taken: dict[str, tuple[int, bool]] = {}
        for result in answer["results"]:
            if "error" not in result:
                taken[result["name"]] = (int(result["added"]), bool(result["created"]))
            elif result.get("status") == 400:
                raise RemoteError("bad_params", str(result["error"]))
        return taken

    async def _append(self, name: str, items: list[Incoming]) -> tuple[int, bool]:
        """Append captures to the active copy; re-claim once if its node fails."""
        body = {"url": items[0].url, "records": _records(items)}
        for attempt in (1, 2):
            address = self.claims[name]
            try:
                return await self._post(address, name, body)
            except (aiohttp.ClientError, OSError, TimeoutError, DlwebError) as exc:
                log.warning(
                    "append to %s on %s failed (%s); attempt %d", name, address, exc, attempt
                )
                self.claims.pop(name, None)
                if attempt == 2:
                    raise RemoteError(
                        "error", f"cannot append to structure {name}: {exc}"
                    ) from None
                await self._claim([name])
        raise AssertionError("unreachable")

    async def _post(self, address: str, name: str, body: dict[str, Any]) -> tuple[int, bool]:
        assert self._session is not None
        headers = {"Authorization": f"Bearer {self._token}"}
        async with (
            self._appending,
            self._session.post(f"{address}/structure/{name}", json=body, headers=headers) as r,
        ):
            answer = await r.json(content_type=None)
            if r.status == 400:
                raise RemoteError("bad_params", str(answer.get("error")))
            if r.status != 200:
                raise DlwebError(f"{address} answered {r.status}: {answer.get('error')}")
            return int(answer["added"]), bool(answer.get("created"))

    def _uploads(self, incoming: list[Incoming]) -> list[dict[str, Any]]:
        """Contents and header blocks not yet in the archive, each with the node to send it to."""
        sizes: dict[str, int] = {}
        for item in incoming:
            sizes.setdefault(item.capture.content, item.size)
            sizes.setdefault(item.capture.header, item.header_size)
        known = self.contents.known(sizes)
        popular = [
            name
            for name, refs in self.contents.count_refs(
                item.capture.content for item in incoming if item.capture.content in known
            ).items()
            if refs == self.popular_refs
        ]
        if popular:
            task = asyncio.create_task(self._report_popular(popular))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        takers = [row for row in self.nodes if row.state == "alive"]
        planned: Counter[str] = Counter()
        upload = []
        for name, size in sizes.items():
            if name in known:
                continue
            row = choose_node(takers, name, (), (), planned)
            if row is None:
                raise RemoteError("no_node", "no storage node can take new contents now")
            planned[row.id] += size
            upload.append({"name": name, "node": row.address, "size": size})
        return upload

    async def _report_popular(self, names: list[str]) -> None:
        try:
            await self.upstream.notify(
                "content.refs", {"refs": dict.fromkeys(names, self.popular_refs)}, timeout=30
            )
        except HipError as exc:
            log.warning("could not report %d popular contents: %s", len(names), exc)

    async def _stored(self, peer: Peer, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("names"), list):
            raise _bad("stored: params must be {names: [...]}")
        names = params["names"]
        if len(names) > 2 * MAX_CAPTURES:
            raise _bad(f"stored: at most {2 * MAX_CAPTURES} names a call")
        for index, name in enumerate(names):
            if not isinstance(name, str) or not is_valid_name(name):
                raise _bad(f"stored: names[{index}] is not 64 lowercase hex digits")
        self.contents.add(names)
        self.stats["stored"] += len(names)
        return {}
