"""Structure copies that diverged while their node was away are merged when it returns: no
acknowledged capture is lost, and every copy ends with every record (docs/cluster.md)."""

import json
import signal
import sqlite3
import urllib.request
from contextlib import closing
from dataclasses import replace

from archive.cluster import ClusterClient
from archive.urlkey import structure_name
from tests.conftest import wait_until

from .conftest import Cluster, Corpus, make_corpus


def active_node(cluster: Cluster, name: str) -> str:
    with closing(sqlite3.connect(cluster.root / "master" / "master.db")) as db:
        row = db.execute("SELECT node FROM active WHERE name = ?", (name,)).fetchone()
    assert row is not None, f"structure {name} has no active copy"
    return str(row[0])


def times_on(cluster: Cluster, node: str, name: str) -> set[int]:
    """The capture times in one node's copy of a structure file."""
    url = f"{cluster.nodes[node].url}/structure/{name}?mode=range&from=1000&to=99991231235959"
    with urllib.request.urlopen(url) as answer:
        return {record["time"] for record in json.load(answer)["records"]}


def at_url(corpus: Corpus, url: str) -> Corpus:
    """The same captures, of one URL."""
    return Corpus([replace(c, url=url) for c in corpus.captures], corpus.bodies)


async def insert(client: ClusterClient, corpus: Corpus) -> None:
    summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert summary.added == len(corpus.captures)


async def test_records_only_on_a_lost_active_copy_are_merged_when_it_returns(
    cluster_factory,
) -> None:
    # 3 nodes; structure files get 3 copies (2 + structure_extra).
    cluster = cluster_factory(nodes=3, replicas=2)
    first = make_corpus(3, urls=1)
    name = structure_name(first.captures[0].url)
    async with ClusterClient(cluster.config) as client:
        await insert(client, first)
        cluster.wait_settled(len(first.bodies))
        lost = active_node(cluster, name)
        assert len(cluster.get("/structures?limit=10")["structures"][0]["nodes"]) == 3

        # With the master frozen, these records reach the active copy only: no refresh copies
        # them to the replicas before the active copy's node dies.
        assert cluster.master is not None and cluster.master.process is not None
        cluster.master.process.send_signal(signal.SIGSTOP)
        try:
            only_there = at_url(make_corpus(4, urls=1, seed=1), first.captures[0].url)
            await insert(client, only_there)
            cluster.nodes[lost].stop(signal.SIGKILL)
        finally:
            cluster.master.process.send_signal(signal.SIGCONT)
        cluster.wait_for(
            lambda s: any(n["id"] == lost and n["state"] == "down" for n in s["nodes"]),
            f"{lost} to be down",
        )
        assert cluster.index is not None
        index = cluster.index
        wait_until(lambda: index.status()["alive"] == 2, "the index node to drop the lost node")

        # A new active copy is chosen among the replicas, which lack those records.
        later = at_url(make_corpus(2, urls=1, seed=2), first.captures[0].url)
        await insert(client, later)
        assert active_node(cluster, name) != lost
        assert cluster.status()["structures_diverged"] == 1

        # The node comes back with its copy: its records join the active copy, and every copy
        # ends with every acknowledged record.
        cluster.nodes[lost].start()
        every = {c.time for c in first.captures + only_there.captures + later.captures}
        status = cluster.wait_for(
            lambda s: s["structures_diverged"] == 0 and s["structures_dirty"] == 0,
            "the returning copy to be merged and the copies refreshed",
        )
        assert status["repairs"]["merged"] == len(only_there.captures)
        for node in sorted(cluster.nodes):
            cluster.wait_for(
                lambda s, node=node: times_on(cluster, node, name) == every,
                f"{node}'s copy to hold every record",
            )
        for capture in only_there.captures + later.captures:
            found = await client.closest(capture.url, capture.time, mode="exact")
            assert found.capture.content == capture.content
