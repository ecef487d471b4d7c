"""A storage node as a cluster member, driven by a HIP master in the test process: joining, the
inventory stream, fetch (verified), delete, scrub, and refusals of bad orders."""

import asyncio
import hashlib
import os
import socket
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from archive.config import ClusterConfig
from archive.hip import HipMaster, Peer, RemoteError
from archive.multicast import LookupClient
from archive.network import PEER_SILENCE
from archive.urlkey import structure_name
from deploy.testing.cluster import write_cluster_config
from deploy.testing.disk import damage, damage_content, stored_bytes, stored_content
from deploy.testing.ports import free_port
from deploy.testing.waits import eventually


@dataclass
class FakeMasterState:
    joins: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    scrubbed: list[dict[str, Any]] = field(default_factory=list)
    peers: dict[str, Peer] = field(default_factory=dict)
    since: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def master(cluster: tuple[Path, ClusterConfig]) -> AsyncIterator[tuple[str, FakeMasterState]]:
    """A HIP master end speaking the master's side of docs/cluster.md, recording what it gets."""
    state = FakeMasterState()

    async def join(peer: Peer, params: Any) -> dict[str, Any]:
        state.joins.append(params)
        state.peers[peer.name] = peer
        state.changed.set()
        return {"since": state.since, "state": "alive"}

    async def inventory(peer: Peer, params: Any) -> dict[str, Any]:
        state.entries.extend(params["entries"])
        state.since = params["seq"]
        state.changed.set()
        return {"seq": params["seq"]}

    async def ignore(peer: Peer, params: Any) -> None:
        return None

    async def scrubbed(peer: Peer, params: Any) -> None:
        state.scrubbed.append(params)
        state.changed.set()

    hip = HipMaster(
        cluster[1].secret,
        "master",
        {
            "node.join": join,
            "node.inventory": inventory,
            "node.stats": ignore,
            "node.scrubbed": scrubbed,
        },
    )
    app = web.Application()
    hip.add_routes(app)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}", state
    await hip.close()
    await runner.cleanup()


async def until(state: FakeMasterState, condition: Any, timeout: float = 20) -> None:
    """Wait for the fake master to see something, woken by each thing it receives."""
    async with asyncio.timeout(timeout):
        while not condition():
            state.changed.clear()
            await state.changed.wait()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def put(session: aiohttp.ClientSession, node: Any, config: ClusterConfig, data: bytes) -> str:
    headers = {"Authorization": f"Bearer {config.write_token}"}
    async with session.put(f"{node.url}/content/{sha(data)}", data=data, headers=headers) as r:
        assert r.status == 201
    return sha(data)


async def test_join_stream_fetch_delete_and_scrub(node_factory, cluster, master) -> None:
    url, state = master
    config = cluster[1]
    first = node_factory("a", None, "--master", url, "--domain", "rack-1")
    second = node_factory("b", None, "--master", url, "--reliability", "high")
    await until(state, lambda: len(state.peers) == 2)
    joins = {j["address"]: j for j in state.joins}
    assert joins[first.url]["domain"] == "rack-1"
    assert joins[second.url]["reliability"] == "high"

    async with aiohttp.ClientSession() as session:
        blobs = [os.urandom(3000) for _ in range(30)]
        names = [await put(session, first, config, blob) for blob in blobs]
        await until(state, lambda: {e["name"] for e in state.entries} >= set(names))
        assert [e["seq"] for e in state.entries] == sorted({e["seq"] for e in state.entries})

        b = state.peers[joins[second.url]["id"]]
        order = [{"kind": "content", "name": n, "source": first.url} for n in names]
        ghost = sha(b"nobody holds this")
        order.append({"kind": "content", "name": ghost, "source": first.url})
        result = await b.call("fetch", {"files": order})
        assert sorted(result["fetched"]) == sorted(names)
        assert [f["name"] for f in result["failed"]] == [ghost]
        for name, blob in zip(names, blobs, strict=True):
            async with session.get(f"{second.url}/content/{name}") as r:
                assert await r.read() == blob

        with pytest.raises(RemoteError, match=r"files\[0\]: name is not 64 lowercase hex"):
            await b.call("fetch", {"files": [{"kind": "content", "name": "../x", "source": url}]})
        with pytest.raises(RemoteError, match="source must be an http"):
            await b.call(
                "fetch", {"files": [{"kind": "content", "name": names[0], "source": "file:///"}]}
            )

        deleted = await b.call("delete", {"files": [{"kind": "content", "name": names[0]}]})
        assert deleted == {"deleted": [names[0]], "missing": []}
        async with session.get(f"{second.url}/content/{names[0]}") as r:
            assert r.status == 404

        victim = names[5]
        damage_content(first.root, victim)
        a = state.peers[joins[first.url]["id"]]
        assert (await a.call("scrub", {}))["started"] is True
        await until(state, lambda: bool(state.scrubbed))
        report = state.scrubbed[0]
        assert [(bad["kind"], bad["name"]) for bad in report["bad"]] == [("content", victim)]
        assert report["checked"] == len(names)
        assert (first.root / "quarantine" / "content" / victim).exists()
        async with session.get(f"{first.url}/content/{victim}") as r:
            assert r.status == 404
        await until(
            state,
            lambda: any(e["op"] == "remove" and e["name"] == victim for e in state.entries),
        )


async def test_a_source_serving_wrong_bytes_is_refused(node_factory, cluster, master) -> None:
    url, state = master
    node = node_factory("a", None, "--master", url)
    await until(state, lambda: bool(state.peers))
    claimed = sha(b"what the name promises")

    async def liar(request: web.Request) -> web.Response:
        return web.Response(body=b"something else entirely")

    async def liar_pack(request: web.Request) -> web.Response:
        body = b"something else entirely"
        return web.Response(body=struct.pack(">32sQ", bytes.fromhex(claimed), len(body)) + body)

    app = web.Application()
    app.router.add_get("/content/{name}", liar)
    app.router.add_post("/contents/pack", liar_pack)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        peer = next(iter(state.peers.values()))
        order = {
            "files": [{"kind": "content", "name": claimed, "source": f"http://127.0.0.1:{port}"}]
        }
        result = await peer.call("fetch", order)
        assert result["fetched"] == []
        assert "hash" in result["failed"][0]["error"]
        assert stored_content(node.root, claimed) is None
        assert not any((node.root / "content" / ".tmp").iterdir())
    finally:
        await runner.cleanup()


async def test_a_node_with_another_secret_cannot_join(node_factory, tmp_path, master) -> None:
    url, state = master
    other = tmp_path / "other.yaml"
    write_cluster_config(other)
    node = node_factory("stranger", other, "--master", url)
    deadline = asyncio.get_running_loop().time() + 20
    while "refused" not in node.log():
        assert asyncio.get_running_loop().time() < deadline, node.log()
        await asyncio.sleep(0.05)
    assert state.joins == []


async def test_scrub_over_http_needs_the_token(node_factory, cluster) -> None:
    node = node_factory()
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{node.url}/scrub") as r:
            assert r.status == 401
        headers = {"Authorization": f"Bearer {cluster[1].write_token}"}
        await put(session, node, cluster[1], b"fine")
        async with session.post(f"{node.url}/scrub", headers=headers) as r:
            assert await r.json() == {"checked": 1, "bad": []}
        async with session.post(
            f"{node.url}/contents/pack", json={"names": ["nope"]}, headers=headers
        ) as r:
            assert r.status == 400


# -- a master end that can restart, keeping what it stored (as the real master keeps its db) --


class Master:
    """A real HipMaster on an aiohttp server of the test process, answering node.join and
    node.inventory as docs/cluster.md says and recording everything nodes send."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret
        self.port = free_port()
        self.joins: list[dict[str, Any]] = []
        self.batches: list[list[dict[str, Any]]] = []
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.stats: list[dict[str, Any]] = []
        self.scrubbed: list[dict[str, Any]] = []
        self.attempts = 0
        self.refuse_joins = 0
        self.changed = asyncio.Event()
        self.hip: HipMaster | None = None
        self.runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stored(self, node: str) -> int:
        entries = self.entries.get(node, [])
        return int(entries[-1]["seq"]) if entries else 0

    def _wake(self) -> None:
        self.changed.set()

    async def _join(self, peer: Peer, params: Any) -> dict[str, Any]:
        if self.refuse_joins > 0:
            self.refuse_joins -= 1
            self._wake()
            raise RemoteError("error", "the database is busy")
        self.joins.append(params)
        since = self.stored(peer.name)
        if params["seq"] < since:
            self.entries[peer.name] = []
            since = 0
        self._wake()
        return {"since": since, "state": "alive"}

    async def _inventory(self, peer: Peer, params: Any) -> dict[str, Any]:
        entries = params["entries"]
        assert 0 < len(entries) <= 5000
        assert params["seq"] == entries[-1]["seq"]
        self.batches.append(entries)
        self.entries.setdefault(peer.name, []).extend(entries)
        self._wake()
        return {"seq": params["seq"]}

    async def _stats(self, peer: Peer, params: Any) -> None:
        self.stats.append(params)
        self._wake()

    async def _scrubbed(self, peer: Peer, params: Any) -> None:
        self.scrubbed.append(params)
        self._wake()

    @web.middleware
    async def _count(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path == "/hip":
            self.attempts += 1
            self._wake()
        response: web.StreamResponse = await handler(request)
        return response

    async def start(self) -> "Master":
        handlers = {
            "node.join": self._join,
            "node.inventory": self._inventory,
            "node.stats": self._stats,
            "node.scrubbed": self._scrubbed,
        }
        self.hip = HipMaster(self.secret, "test-master", handlers)
        app = web.Application(middlewares=[self._count])
        self.hip.add_routes(app)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self.hip is not None:
            await self.hip.close()
        if self.runner is not None:
            await self.runner.cleanup()
        self.hip = self.runner = None

    def peer(self, node: str) -> Peer:
        assert self.hip is not None
        return self.hip.slaves[node]

    async def wait_for(self, condition: Any, what: str, timeout: float = 20) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not condition():
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            raise AssertionError(f"the master end waited {timeout} s for {what}") from None


@pytest.fixture
async def lookup(cluster: tuple[Path, ClusterConfig]) -> AsyncIterator[LookupClient]:
    client = LookupClient(cluster[1].multicast, cluster[1].secret)
    await client.start()
    yield client
    await client.close()


@pytest.fixture
async def hip_master(cluster: tuple[Path, ClusterConfig]) -> AsyncIterator[Master]:
    master = await Master(cluster[1].secret).start()
    yield master
    await master.stop()


async def start_node(node_factory: Any, name: str, *args: str, config: Path | None = None) -> Any:
    """Start a storage node process without blocking the master end in this event loop."""
    return await asyncio.to_thread(node_factory, name, config, "--id", name, *args)


async def node_status(node: Any) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(f"{node.url}/status") as r:
        result: dict[str, Any] = await r.json()
        return result


def capture(year: int, data: bytes) -> dict[str, Any]:
    return {
        "time": (year - 1970) * 365 * 86_400 * 1_000_000,
        "content": sha(data),
        "header": sha(b"HTTP/1.1 200 OK\r\n\r\n"),
        "status": 200,
    }


async def append(node: Any, config: ClusterConfig, url: str, records: list[dict[str, Any]]) -> str:
    name = structure_name(url)
    headers = {"Authorization": f"Bearer {config.write_token}"}
    body = {"url": url, "records": records}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{node.url}/structure/{name}", json=body, headers=headers) as r,
    ):
        assert r.status == 200, await r.text()
    return name


async def test_join_uses_the_configured_master_and_sends_what_it_holds(
    node_factory, cluster, tmp_path
) -> None:
    config_path, config = cluster
    master = Master(config.secret)
    with_master = tmp_path / "with-master.yaml"
    with_master.write_text(config_path.read_text() + f"master: {master.url}\n")
    node = await start_node(
        node_factory,
        "a",
        "--domain",
        "rack-7",
        "--reliability",
        "low",
        "--stats-every",
        "0.1",
        config=with_master,
    )
    async with aiohttp.ClientSession() as session:
        names = [await put(session, node, config, os.urandom(100 + i)) for i in range(20)]
    status = await node_status(node)
    assert status["master"] == {"url": master.url, "connected": False, "joined": False}
    assert (status["domain"], status["reliability"]) == ("rack-7", "low")

    await master.start()  # the node has kept trying; it joins now
    try:
        await master.wait_for(lambda: master.joins, "node.join")
        joined = master.joins[0]
        assert set(joined) == {
            "id",
            "address",
            "domain",
            "reliability",
            "free",
            "total",
            "reserve",
            "full",
            "groups",
            "seq",
        }
        assert (joined["id"], joined["address"]) == ("a", node.url)
        assert (joined["domain"], joined["reliability"]) == ("rack-7", "low")
        assert 0 < joined["free"] <= joined["total"]
        assert joined["reserve"] >= 64 * 1024 * 1024 and joined["full"] is False
        assert joined["groups"] == sorted({int(n[:2], 16) for n in names})
        assert joined["seq"] == 20
        await master.wait_for(lambda: master.stored("a") == 20, "the inventory")
        assert [e["name"] for e in master.entries["a"]] == names
        assert all(e["op"] == "add" and e["kind"] == "content" for e in master.entries["a"])

        await master.wait_for(lambda: len(master.stats) >= 3, "node.stats every 0.1 s")
        stats = master.stats[-1]
        assert set(stats) == {"id", "free", "total", "reserve", "full", "groups", "files", "bytes"}
        assert stats["groups"] == joined["groups"]
        assert stats["files"] == {"content": 20, "structure": 0}

        async def connected() -> bool:
            return bool((await node_status(node))["master"]["connected"])

        await eventually(connected, "/status to say connected", 20)
    finally:
        await master.stop()


async def test_inventory_resumes_from_since_after_the_master_restarts(
    node_factory, cluster, hip_master
) -> None:
    config = cluster[1]
    node = await start_node(node_factory, "a", "--master", hip_master.url)
    await hip_master.wait_for(lambda: hip_master.joins, "node.join")
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(put(session, node, config, os.urandom(500)) for _ in range(200)))
        await hip_master.wait_for(lambda: hip_master.stored("a") == 200, "200 entries")
        # Coalesced: concurrent writes arrive in a few batches, not one call each.
        assert len(hip_master.batches) < 100

        await hip_master.stop()

        async def disconnected() -> bool:
            return not (await node_status(node))["master"]["connected"]

        await eventually(disconnected, "/status to say disconnected", 20)
        for _ in range(30):  # written while the master is away
            await put(session, node, config, os.urandom(300))
        victim = hip_master.entries["a"][10]["name"]
        async with session.delete(
            f"{node.url}/content/{victim}",
            headers={"Authorization": f"Bearer {config.write_token}"},
        ) as r:
            assert r.status == 200
        # The restarted master lost its last 5 entries: the node must send them again.
        del hip_master.entries["a"][-5:]
        hip_master.batches.clear()
        await hip_master.start()
        await hip_master.wait_for(lambda: hip_master.stored("a") == 231, "the rest after 195")
    assert hip_master.joins[-1]["seq"] == 231
    assert hip_master.batches[0][0]["seq"] == 196
    assert [e["seq"] for e in hip_master.entries["a"]] == list(range(1, 232))
    last = hip_master.entries["a"][-1]
    assert (last["op"], last["name"]) == ("remove", victim)


async def test_a_node_with_the_wrong_secret_is_refused_and_keeps_trying(
    node_factory, tmp_path, hip_master
) -> None:
    other = tmp_path / "other.yaml"
    write_cluster_config(other)
    node = await start_node(node_factory, "stranger", "--master", hip_master.url, config=other)
    await hip_master.wait_for(lambda: hip_master.attempts >= 3, "three connection attempts")
    assert hip_master.joins == []
    assert "authentication refused" in node.log()
    assert (await node_status(node))["master"]["connected"] is False


async def test_fetch_copies_large_contents_and_refreshes_a_stale_structure_file(
    node_factory, cluster, hip_master
) -> None:
    config = cluster[1]
    first = await start_node(node_factory, "a", "--master", hip_master.url)
    second = await start_node(node_factory, "b", "--master", hip_master.url)
    await hip_master.wait_for(lambda: len(hip_master.joins) == 2, "two joins")
    big = os.urandom(3 * 1024 * 1024 + 17)  # over the pack limit: fetched alone
    async with aiohttp.ClientSession() as session:
        big_name = await put(session, first, config, big)
        url = "http://example.org/page"
        data = [b"one", b"two", b"three"]
        name = await append(second, config, url, [capture(2001, data[0])])  # stale copy
        await append(first, config, url, [capture(2000 + i, d) for i, d in enumerate(data, 1)])

        b = hip_master.peer("b")
        order = [
            {"kind": "content", "name": big_name, "source": first.url},
            {"kind": "structure", "name": name, "source": first.url},
        ]
        assert await b.call("fetch", {"files": order}) == {
            "fetched": [big_name, name],
            "failed": [],
        }
        for kind, fetched in (("content", big_name), ("structure", name)):
            async with (
                session.get(f"{first.url}/{kind}/{fetched}") as r1,
                session.get(f"{second.url}/{kind}/{fetched}") as r2,
            ):
                assert r1.status == r2.status == 200
                assert await r1.read() == await r2.read()
        # Asked again, a held content counts as fetched without a transfer.
        again = await b.call("fetch", {"files": order[:1]})
        assert again == {"fetched": [big_name], "failed": []}
        await hip_master.wait_for(
            lambda: any(e["name"] == big_name for e in hip_master.entries.get("b", [])),
            "b's inventory to list the copy",
        )

        # A source serving a structure file under another URL's name is refused.
        other = await append(first, config, "http://example.org/other", [capture(2005, b"x")])
        before = stored_bytes(second.root, name, "structure")
        assert before is not None
        liar = web.Application()

        async def wrong_file(request: web.Request) -> web.Response:
            return web.Response(body=stored_bytes(first.root, other, "structure"))

        liar.router.add_get("/structure/{name}", wrong_file)
        runner = web.AppRunner(liar)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            bad = [{"kind": "structure", "name": name, "source": f"http://127.0.0.1:{port}"}]
            result = await b.call("fetch", {"files": bad})
        finally:
            await runner.cleanup()
        assert result["fetched"] == []
        assert "sent as" in result["failed"][0]["error"]
        assert stored_bytes(second.root, name, "structure") == before


async def test_a_stale_structure_copy_answers_lookups_late_until_a_copy_replaces_it(
    node_factory, cluster, hip_master, lookup
) -> None:
    config = cluster[1]
    # The nodes wait 2 s for lookups, so a stale copy answers 1 s late: far behind a fresh one
    # even on a loaded machine.
    patient = cluster[0].with_name("patient.yaml")
    patient.write_text(cluster[0].read_text().replace("wait_ms: 100", "wait_ms: 2000"))
    first = await start_node(node_factory, "a", "--master", hip_master.url, config=patient)
    second = await start_node(node_factory, "b", "--master", hip_master.url, config=patient)
    await hip_master.wait_for(lambda: len(hip_master.joins) == 2, "two joins")
    url = "http://example.org/page"
    name = await append(second, config, url, [capture(2001, b"one")])
    await append(first, config, url, [capture(2001, b"one"), capture(2002, b"two")])

    b = hip_master.peer("b")
    assert await b.call("stale", {"names": [name, sha(b"not held")]}) == {"marked": 1}
    # Both hold the file: the reader that takes the first answer gets the fresh copy.
    for _ in range(5):
        answers = await lookup.locate("structure", name, wait=10, first=True)
        assert [answer.address for answer in answers] == [first.url]
    # The stale copy still answers, within the wait, for a reader that has no other.
    answers = await lookup.locate("structure", name, wait=1.8)
    assert [answer.address for answer in answers] == [first.url, second.url]
    status = await node_status(second)
    assert status["stale_structures"] == {"now": 1, "marked": 1}
    assert status["multicast"]["late"] == 6
    assert (await node_status(first))["multicast"]["late"] == 0

    # The master's copy of the active one replaces it: it is fresh again.
    order = [{"kind": "structure", "name": name, "source": first.url}]
    assert await b.call("fetch", {"files": order}) == {"fetched": [name], "failed": []}
    assert (await node_status(second))["stale_structures"] == {"now": 0, "marked": 1}
    await lookup.locate("structure", name)
    assert (await node_status(second))["multicast"]["late"] == 6


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("fetch", {}, "params must be {files"),
        ("fetch", {"files": "x"}, "params must be {files"),
        ("fetch", {"files": [{"kind": "pack", "name": "0" * 64}]}, "kind must be content or"),
        ("fetch", {"files": [{"kind": "content", "name": "0" * 64}]}, "source must be"),
        (
            "fetch",
            {"files": [{"kind": "content", "name": "0" * 64, "source": "http://"}]},
            "source must be",
        ),
        ("delete", {"files": [{"kind": "content", "name": "A" * 64}]}, "not 64 lowercase"),
        ("delete", {"files": [{"kind": "content", "name": "0" * 64}] * 5001}, "at most 5000"),
        ("scrub", {"now": True}, "scrub: params must be {}"),
        ("stale", {}, "stale: params must be {names"),
        ("stale", {"names": ["A" * 64]}, "names[0] is not 64 lowercase"),
        ("stale", {"names": ["0" * 64] * 5001}, "at most 5000"),
    ],
)
async def test_bad_orders_get_bad_params(node_factory, hip_master, method, params, message) -> None:
    await start_node(node_factory, "a", "--master", hip_master.url)
    await hip_master.wait_for(lambda: hip_master.joins, "node.join")
    with pytest.raises(RemoteError) as caught:
        await hip_master.peer("a").call(method, params)
    assert caught.value.code == "bad_params"
    assert message in caught.value.message


async def test_delete_lists_what_was_there_and_what_was_not(
    node_factory, cluster, hip_master
) -> None:
    config = cluster[1]
    node = await start_node(node_factory, "a", "--master", hip_master.url)
    await hip_master.wait_for(lambda: hip_master.joins, "node.join")
    async with aiohttp.ClientSession() as session:
        kept, gone = [await put(session, node, config, os.urandom(50)) for _ in range(2)]
    structure = await append(node, config, "http://example.org/", [capture(2010, b"x")])
    order = [
        {"kind": "content", "name": gone},
        {"kind": "structure", "name": structure},
        {"kind": "content", "name": sha(b"never here")},
    ]
    answer = await hip_master.peer("a").call("delete", {"files": order})
    assert answer == {"deleted": [gone, structure], "missing": [sha(b"never here")]}
    assert stored_content(node.root, kept) is not None
    assert stored_content(node.root, gone) is None
    await hip_master.wait_for(lambda: hip_master.stored("a") == 5, "the two removals")
    removed = [(e["kind"], e["name"]) for e in hip_master.entries["a"] if e["op"] == "remove"]
    assert removed == [("content", gone), ("structure", structure)]


async def test_scrub_quarantines_bad_files_which_are_then_neither_served_nor_located(
    node_factory, cluster, hip_master, lookup
) -> None:
    config = cluster[1]
    node = await start_node(node_factory, "a", "--master", hip_master.url)
    await hip_master.wait_for(lambda: hip_master.joins, "node.join")
    async with aiohttp.ClientSession() as session:
        names = [await put(session, node, config, os.urandom(2000)) for _ in range(10)]
    good_url, bad_url = "http://example.org/good", "http://example.org/bad"
    await append(node, config, good_url, [capture(2001, b"a"), capture(2002, b"b")])
    bad_structure = await append(node, config, bad_url, [capture(2001, b"a")])
    victim = names[3]
    assert [a.address for a in await lookup.locate("content", victim)] == [node.url]

    damaged = damage_content(node.root, victim, at=1000)
    damage(node.root, bad_structure, at=-3, kind="structure")  # in its last record

    peer = hip_master.peer("a")
    assert await peer.call("scrub", {}) == {"started": True}
    await hip_master.wait_for(lambda: hip_master.scrubbed, "node.scrubbed")
    report = hip_master.scrubbed[0]
    assert report["id"] == "a" and report["checked"] == 12
    assert sorted((b["kind"], b["name"]) for b in report["bad"]) == [
        ("content", victim),
        ("structure", bad_structure),
    ]
    assert "bytes hash to" in next(b["reason"] for b in report["bad"] if b["name"] == victim)
    assert (node.root / "quarantine" / "content" / victim).read_bytes() == damaged
    assert (node.root / "quarantine" / "structure" / bad_structure).exists()
    assert stored_content(node.root, victim) is None

    async with aiohttp.ClientSession() as session:
        async with session.get(f"{node.url}/content/{victim}") as r:
            assert r.status == 404
        async with session.get(f"{node.url}/content/{names[4]}") as r:
            assert r.status == 200
    assert await lookup.locate("content", victim) == []
    assert await lookup.locate("structure", bad_structure) == []
    assert [a.address for a in await lookup.locate("content", names[4])] == [node.url]
    await hip_master.wait_for(
        lambda: (
            {(e["op"], e["name"]) for e in hip_master.entries["a"]}
            >= {("remove", victim), ("remove", bad_structure)}
        ),
        "the quarantined files logged as removed",
    )
    status = await node_status(node)
    assert status["files"] == {"content": 9, "structure": 1}

    # A second scrub finds nothing more; over HTTP the same report comes back at once.
    headers = {"Authorization": f"Bearer {config.write_token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{node.url}/scrub", headers=headers) as r,
    ):
        assert await r.json() == {"checked": 10, "bad": []}


async def test_a_refused_join_is_tried_again(node_factory, hip_master) -> None:
    hip_master.refuse_joins = 1
    node = await start_node(node_factory, "a", "--master", hip_master.url)
    await hip_master.wait_for(lambda: hip_master.joins, "a second node.join")
    assert hip_master.refuse_joins == 0 and hip_master.attempts == 2
    assert "the database is busy; joining again" in node.log()


async def test_a_copy_from_a_silent_source_is_given_up_and_another_source_serves(
    node_factory, cluster, hip_master
) -> None:
    config = cluster[1]
    source = await start_node(node_factory, "a", "--master", hip_master.url)
    copier = await start_node(node_factory, "b", "--master", hip_master.url)
    await hip_master.wait_for(lambda: len(hip_master.joins) == 2, "two joins")
    async with aiohttp.ClientSession() as session:
        name = await put(session, source, config, os.urandom(2000))
    # A peer behind a cut link: the kernel accepts the connection, nothing ever answers.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        cut = f"http://127.0.0.1:{sock.getsockname()[1]}"
        order = {"files": [{"kind": "content", "name": name, "source": cut}]}
        # Given up after one silence, not once for the pack and again for the file alone.
        async with asyncio.timeout(PEER_SILENCE + 10):
            result = await hip_master.peer("b").call("fetch", order, timeout=None)
    assert result["fetched"] == []
    assert result["failed"] == [
        {"name": name, "error": f"{cut}/contents/pack: no answer for {PEER_SILENCE:g} s"}
    ]
    # The master's next order names another holder; the file is not held busy.
    order = {"files": [{"kind": "content", "name": name, "source": source.url}]}
    assert await hip_master.peer("b").call("fetch", order) == {"fetched": [name], "failed": []}
    assert stored_content(copier.root, name) is not None
