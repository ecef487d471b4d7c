"""A storage node as a cluster member, driven by a HIP master in the test process: joining, the
inventory stream, fetch (verified), delete, scrub, and refusals of bad orders."""

import asyncio
import hashlib
import os
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
from tests.conftest import free_port, write_cluster_config


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
        assert deleted == {"deleted": [names[0]]}
        async with session.get(f"{second.url}/content/{names[0]}") as r:
            assert r.status == 404

        victim = names[5]
        path = first.root / "content" / victim[:2] / victim[2:4] / victim
        path.write_bytes(b"X" + path.read_bytes()[1:])
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
        assert not any((node.root / "content").glob("*/*/*"))
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
