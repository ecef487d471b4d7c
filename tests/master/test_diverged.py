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


async def lose_the_active_copy(cluster: Cluster, client: ClusterClient) -> tuple[Corpus, Corpus]:
    """Captures of one URL on every copy, then more on its active copy only, whose node is then
    killed and marked down. Returns both corpora."""
    first = make_corpus(3, urls=1)
    await insert(client, first)
    cluster.wait_settled(len(first.bodies))
    name = structure_name(first.captures[0].url)
    lost = active_node(cluster, name)
    assert len(cluster.get("/structures?limit=10")["structures"][0]["nodes"]) == 3

    # With the master frozen, these records reach the active copy only: no refresh copies them
    # to the replicas before the active copy's node dies.
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
    return first, only_there


async def move_the_active_copy(
    cluster: Cluster, client: ClusterClient
) -> tuple[Corpus, Corpus, Corpus, str]:
    """`lose_the_active_copy`, then more captures of the URL, which a new active copy takes
    among the replicas (they lack the records only the lost copy had). Returns the three corpora
    and the node of the lost copy."""
    first, only_there = await lose_the_active_copy(cluster, client)
    url = first.captures[0].url
    lost = active_node(cluster, structure_name(url))
    assert cluster.index is not None
    index = cluster.index
    wait_until(lambda: index.status()["alive"] == 2, "the index node to drop the lost node")
    later = at_url(make_corpus(2, urls=1, seed=2), url)
    await insert(client, later)
    assert active_node(cluster, structure_name(url)) != lost
    return first, only_there, later, lost


def every_copy_holds(cluster: Cluster, name: str, times: set[int]) -> None:
    """Wait until the copies are merged and refreshed, then check each holds every record."""
    cluster.wait_for(
        lambda s: (
            s["structures_diverged"] == 0
            and s["structures_dirty"] == 0
            and s["repairs"]["running"] == 0
        ),
        "the returning copy to be merged and the copies refreshed",
    )
    for node in sorted(cluster.nodes):
        assert times_on(cluster, node, name) == times, node


async def test_records_only_on_a_lost_active_copy_are_merged_when_it_returns(
    cluster_factory,
) -> None:
    # 3 nodes; structure files get 3 copies (2 + structure_extra).
    cluster = cluster_factory(nodes=3, replicas=2)
    async with ClusterClient(cluster.config) as client:
        first, only_there, later, lost = await move_the_active_copy(cluster, client)
        name = structure_name(first.captures[0].url)
        assert cluster.status()["structures_diverged"] == 1

        # The node comes back with its copy: its records join the active copy, and every copy
        # ends with every acknowledged record.
        cluster.nodes[lost].start()
        every_copy_holds(
            cluster, name, {c.time for c in first.captures + only_there.captures + later.captures}
        )
        assert cluster.status()["repairs"]["merged"] == len(only_there.captures)
        for capture in only_there.captures + later.captures:
            found = await client.closest(capture.url, capture.time, mode="exact")
            assert found.capture.content == capture.content


async def test_replicas_of_a_lost_active_copy_are_refreshed_when_it_returns(
    cluster_factory,
) -> None:
    """Nothing is appended while the node is away: it stays the active copy, and the replicas
    get the records they missed once it is back."""
    cluster = cluster_factory(nodes=3, replicas=2)
    async with ClusterClient(cluster.config) as client:
        first, only_there = await lose_the_active_copy(cluster, client)
        name = structure_name(first.captures[0].url)
        lost = active_node(cluster, name)
        cluster.nodes[lost].start()
        every_copy_holds(cluster, name, {c.time for c in first.captures + only_there.captures})


async def test_the_master_names_the_active_copy_first(cluster_factory) -> None:
    """A replica lacks what was appended since the master last refreshed it, and a reader (an
    export, a client in lookup mode master) believes the first holder that answers: the master
    names the active copy first, not the holder first in its tables."""
    cluster = cluster_factory(nodes=3, replicas=2)
    async with ClusterClient(cluster.config) as client:
        first, _, _, lost = await move_the_active_copy(cluster, client)
    name = structure_name(first.captures[0].url)
    active = active_node(cluster, name)
    cluster.nodes[lost].start()

    def holders() -> list[str]:
        listed = cluster.get("/structures?limit=10")["structures"]
        return [node["id"] for node in listed[0]["nodes"]]

    wait_until(lambda: len(holders()) == 3, "the returning node's copy to be readable")
    assert min(holders()) != active  # the order of the tables would put another first
    assert holders()[0] == active
    located = cluster.get(f"/locate/structure/{name}")["nodes"]
    assert located[0]["id"] == active
