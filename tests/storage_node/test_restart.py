"""A storage node's restarts, with a real master: after a clean stop it reads the filter and counts
it saved; after a kill -9 it replays what was logged since its last save and finds every file;
a saved state the log has gone past is never taken as clean."""

import hashlib
import json
import os
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archive.multicast import LookupClient
from archive.structure import Capture
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster, NodeProcess, alive, clusters_in
from deploy.testing.waits import wait_until
from storage_node.node import CLEAN_FILE, FILTER_FILE, SNAPSHOT_FILE

# No periodic save during a test: what a start finds saved is what the last clean stop saved.
NEVER = ("--save-every", "3600")
HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A master and one storage node (`node1`) that joined it."""
    with clusters_in(tmp_path) as make:
        made = make(nodes=0, replicas=1, start=False)
        made.start_master()
        made.add_node("node1", *NEVER)
        made.wait_for(lambda s: alive(s) == 1, "the node to join")
        yield made


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


class Node:
    """Talks to one node of the cluster over HTTP."""

    def __init__(self, cluster: Cluster, session: aiohttp.ClientSession) -> None:
        self.cluster = cluster
        self.process: NodeProcess = cluster.nodes["node1"]
        self.session = session
        self.auth = {"Authorization": f"Bearer {cluster.config.write_token}"}

    async def put(self, data: bytes) -> str:
        name = sha(data)
        url = f"{self.process.url}/content/{name}"
        async with self.session.put(url, data=data, headers=self.auth) as r:
            assert r.status == 201, await r.text()
        return name

    async def delete(self, name: str) -> None:
        url = f"{self.process.url}/content/{name}"
        async with self.session.delete(url, headers=self.auth) as r:
            assert r.status == 200, await r.text()

    async def create_structure(self, url: str) -> str:
        name = structure_name(url)
        body = {
            "url": url,
            "records": [Capture(1_600_000_000_000_000, HEADER, HEADER, 200).to_json()],
        }
        url = f"{self.process.url}/structure/{name}"
        async with self.session.post(url, json=body, headers=self.auth) as r:
            assert r.status == 200, await r.text()
        return name

    async def read(self, kind: str, name: str) -> tuple[int, bytes]:
        async with self.session.get(f"{self.process.url}/{kind}/{name}") as r:
            return r.status, await r.read()

    async def status(self) -> dict[str, Any]:
        async with self.session.get(f"{self.process.url}/status") as r:
            result: dict[str, Any] = await r.json()
            return result

    def restart(self, sig: int) -> None:
        self.process.stop(sig)
        self.process.start()

    async def rejoined(self) -> None:
        """Wait until the node says the master answered its join, and the master lists it alive."""
        wait_until(lambda: _joined(self.process.url), "the node to join its master again")
        self.cluster.wait_for(lambda s: alive(s) == 1, "the master to list the node alive")


def _joined(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/status", timeout=10) as answer:
        return bool(json.load(answer)["master"]["joined"])


async def test_a_clean_restart_reads_the_filter_and_counts_it_saved(cluster, session):
    node = Node(cluster, session)
    names = [await node.put(os.urandom(200)) for _ in range(30)]
    structure = await node.create_structure("http://clean.example/")
    node.process.stop(signal.SIGTERM)
    mark = json.loads((node.process.root / CLEAN_FILE).read_text())
    assert mark["seq"] == 31

    node.process.start()
    start = (await node.status())["start"]
    assert (start["how"], start["replayed"], start["log_bytes_read"]) == ("clean", 0, 0)
    assert "stopped cleanly at entry 31" in node.process.log()
    # Taken when read: a crash of this run must not find it.
    assert not (node.process.root / CLEAN_FILE).exists()
    assert (await node.status())["files"] == {"content": 30, "structure": 1}
    for name in names:
        assert (await node.read("content", name))[0] == 200
    assert (await node.read("structure", structure))[0] == 200
    await node.rejoined()


async def test_a_kill_restart_finds_what_was_written_and_deleted_since_the_last_save(
    cluster, session
):
    node = Node(cluster, session)
    lookup = LookupClient(cluster.config.multicast, cluster.config.secret)
    await lookup.start()
    try:
        before = {await node.put(os.urandom(300)): None for _ in range(20)}
        # A clean stop saves the filter and counts; the start after it runs without a save.
        node.restart(signal.SIGTERM)
        assert (await node.status())["start"]["how"] == "clean"
        written = [await node.put(os.urandom(300)) for _ in range(15)]
        large = await node.put(os.urandom(2 * 1024 * 1024))
        structure = await node.create_structure("http://written.example/just-before")
        deleted = list(before)[:5]
        for name in deleted:
            await node.delete(name)
        node.process.stop(signal.SIGKILL)
        assert not (node.process.root / CLEAN_FILE).exists()

        node.process.start()
        start = (await node.status())["start"]
        assert start["how"] == "replayed"
        assert start["replayed"] == 15 + 1 + 1 + 5
        assert (await node.status())["files"] == {"content": 20 + 15 + 1 - 5, "structure": 1}
        for name in [*written, large]:
            assert (await node.read("content", name))[0] == 200
            assert [a.address for a in await lookup.locate("content", name)] == [node.process.url]
        assert (await node.read("structure", structure))[0] == 200
        assert [a.address for a in await lookup.locate("structure", structure)] == [
            node.process.url
        ]
        for name in deleted:
            assert (await node.read("content", name))[0] == 404
            assert await lookup.locate("content", name) == []
        for name in list(before)[5:]:
            assert (await node.read("content", name))[0] == 200
        await node.rejoined()
        # The master hears of the files written and deleted before the kill.
        cluster.wait_for(
            lambda s: s["nodes"][0]["files"] == 20 + 15 + 1 - 5 + 1,
            "the master to count the node's files",
        )
    finally:
        await lookup.close()


async def test_a_saved_state_the_log_went_past_is_not_taken_as_clean(cluster, session):
    node = Node(cluster, session)
    kept = await node.put(b"kept")
    node.process.stop(signal.SIGTERM)
    # An entry after the clean mark (a run that logged a change and died before its own stop):
    # the saved filter and counts lack it, so the start replays it and checks it on disk.
    ghost = sha(b"logged after the clean stop, never placed")
    with open(node.process.root / "inventory.log", "a") as log:
        entry = {"seq": 2, "op": "add", "kind": "content", "name": ghost, "size": 9, "time": 1}
        log.write(json.dumps(entry) + "\n")
    node.process.start()
    start = (await node.status())["start"]
    assert (start["how"], start["replayed"], start["corrected"]) == ("replayed", 1, 1)
    assert (await node.status())["files"] == {"content": 1, "structure": 0}
    assert (await node.read("content", kept))[0] == 200
    assert (await node.read("content", ghost))[0] == 404


async def test_a_start_without_saved_state_rebuilds_it_from_the_stores(cluster, session):
    node = Node(cluster, session)
    small = [await node.put(os.urandom(500)) for _ in range(10)]
    large = await node.put(os.urandom(2 * 1024 * 1024))
    await node.create_structure("http://rebuilt.example/")
    node.process.stop(signal.SIGTERM)
    for saved in (FILTER_FILE, SNAPSHOT_FILE):
        (node.process.root / saved).unlink()
    node.process.start()
    status = await node.status()
    assert status["start"]["how"] == "rebuilt"
    assert status["files"] == {"content": 11, "structure": 1}
    assert status["bytes"]["content"] == 10 * 500 + 2 * 1024 * 1024
    assert status["filter"]["names"] == 12
    for name in [*small, large]:
        assert (await node.read("content", name))[0] == 200
    # Rebuilt, the state is saved again: the next clean stop and start read it.
    node.restart(signal.SIGTERM)
    assert (await node.status())["start"]["how"] == "clean"
    await node.rejoined()
