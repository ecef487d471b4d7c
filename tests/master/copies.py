"""Structure copies in a running cluster: the scenarios and checks the tests of diverged and
stale copies share."""

import asyncio
import json
import signal
import sqlite3
import urllib.request
from contextlib import closing, suppress
from dataclasses import replace
from typing import Any

from archive.cluster import ClusterClient, ClusterError
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster
from deploy.testing.waits import eventually, wait_until

from .conftest import Corpus, make_corpus


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


async def appended_to(cluster: Cluster, node: str, name: str, corpus: Corpus) -> None:
    """Wait until a node's copy of a structure file holds the captures of an insert going on
    (it is acknowledged only once the master has recorded the change, so it is not awaited
    while the master is frozen)."""
    times = {c.time for c in corpus.captures}

    async def reached() -> bool:
        return times <= times_on(cluster, node, name)

    await eventually(reached, f"the records to reach {node}", 30, interval=0.02)


async def one_url_everywhere(cluster: Cluster, client: ClusterClient) -> tuple[Corpus, str]:
    """Captures of one URL, once the cluster is settled with its structure file on all three
    nodes. Returns them and the file's name."""
    first = make_corpus(3, urls=1)
    await insert(client, first)
    cluster.wait_settled(len(first.bodies))
    assert len(cluster.get("/structures?limit=10")["structures"][0]["nodes"]) == 3
    return first, structure_name(first.captures[0].url)


async def lose_the_active_copy(
    cluster: Cluster, client: ClusterClient
) -> tuple[Corpus, Corpus, str]:
    """Captures of one URL on every copy, then more on its active copy only, whose node is then
    killed and marked down. Returns both corpora and that node (the master may have made
    another copy active already)."""
    first, name = await one_url_everywhere(cluster, client)
    lost = active_node(cluster, name)

    # With the master frozen, these records reach the active copy only: no refresh copies them
    # to the replicas before the active copy's node dies. The insert is acknowledged once the
    # master, woken, has recorded the change.
    assert cluster.master is not None and cluster.master.process is not None
    only_there = at_url(make_corpus(4, urls=1, seed=1), first.captures[0].url)
    cluster.master.process.send_signal(signal.SIGSTOP)
    try:
        inserting = asyncio.ensure_future(insert(client, only_there))
        await appended_to(cluster, lost, name, only_there)
        cluster.nodes[lost].stop(signal.SIGKILL)
    finally:
        cluster.master.process.send_signal(signal.SIGCONT)
    with suppress(ClusterError):
        # On a loaded machine the node can die after its copy took the records but before it
        # answered the index node: the insert is then refused (never acknowledged with fewer
        # copies), and the records are on the lost copy all the same.
        await inserting
    cluster.wait_for(
        lambda s: any(n["id"] == lost and n["state"] == "down" for n in s["nodes"]),
        f"{lost} to be down",
    )
    # Whether the insert was acknowledged or not, the master heard that the lost copy may hold
    # records its replicas lack: it waits, as diverged, for the node's return.
    cluster.wait_for(
        lambda s: s["structures_diverged"] >= 1, f"the master to know {lost}'s copy changed"
    )
    return first, only_there, lost


async def move_the_active_copy(
    cluster: Cluster, client: ClusterClient
) -> tuple[Corpus, Corpus, Corpus, str]:
    """`lose_the_active_copy`, then more captures of the URL, which a new active copy takes
    among the replicas (they lack the records only the lost copy had). Returns the three corpora
    and the node of the lost copy."""
    first, only_there, lost = await lose_the_active_copy(cluster, client)
    url = first.captures[0].url
    assert cluster.index is not None
    index = cluster.index
    wait_until(lambda: index.status()["alive"] == 2, "the index node to drop the lost node")
    later = at_url(make_corpus(2, urls=1, seed=2), url)
    await insert(client, later)
    assert active_node(cluster, structure_name(url)) != lost
    return first, only_there, later, lost


def stale_copies(cluster: Cluster, node: str) -> Any:
    """A node's `stale_structures` status: its copies marked stale now, and marks since start."""
    with urllib.request.urlopen(f"{cluster.nodes[node].url}/status") as answer:
        return json.load(answer)["stale_structures"]


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
