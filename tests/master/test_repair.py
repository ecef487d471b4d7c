"""The repair pass looks only at files that changed; full scans at start-up and now and then
catch what no change marked."""

import signal
import sqlite3
import time
from contextlib import closing
from typing import Any

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster, settled
from master.file_ids import natural_id

from .conftest import Corpus, make_corpus


async def insert(cluster: Cluster, corpus: Corpus) -> None:
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert summary.added == len(corpus.captures)


def holders(cluster: Cluster, name: str) -> list[str]:
    return sorted(n["id"] for n in cluster.get(f"/locate/content/{name}")["nodes"])


def lose_location(cluster: Cluster, name: str, node: str) -> None:
    """Drop one location from the master's database behind its back, marking nothing."""
    with closing(sqlite3.connect(cluster.root / "master" / "master.db")) as db, db:
        (number,) = db.execute("SELECT num FROM node_numbers WHERE id = ?", (node,)).fetchone()
        db.execute("DELETE FROM held WHERE node = ? AND id = ?", (number, natural_id(name)))
        db.execute(
            "UPDATE files SET holders = substr(replace(',' || holders, ?, ','), 2) WHERE id = ?",
            (f",{number},", natural_id(name)),
        )
        db.execute("DELETE FROM to_check")
        db.execute("DELETE FROM nodes_to_check")


def quiet(cluster: Cluster, contents: int) -> dict[str, Any]:
    """The repair counters once every file is at target and the pass has had nothing to look at
    for a second (the inventory entries of the last copies come after the copies)."""
    last: dict[str, Any] = {}
    since = time.monotonic()
    deadline = since + 60
    while time.monotonic() < deadline:
        repairs = cluster.wait_settled(contents)["repairs"]
        if repairs["to_check"] or repairs["nodes_to_check"] or repairs != last:
            last, since = repairs, time.monotonic()
        elif time.monotonic() - since >= 1.0:
            return repairs
        time.sleep(0.1)
    raise AssertionError(f"the repair pass kept looking at files: {last}")


async def test_a_pass_after_an_inflow_looks_only_at_the_changed_files(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    first = make_corpus(1500, urls=300)
    await insert(cluster, first)
    before = quiet(cluster, len(first.bodies))
    assert before["full_scans"] >= 1
    assert before["examined"] >= len(first.bodies)

    later = make_corpus(40, urls=8, seed=1)
    new = later.bodies.keys() - first.bodies.keys()
    await insert(cluster, later)
    after = quiet(cluster, len(first.bodies) + len(new))
    examined = after["examined"] - before["examined"]
    # Each new file is looked at a few times (its copies' inventory entries, a repair copy);
    # the 1,800 files already at target are not looked at again.
    assert len(new) <= examined <= 5 * (len(new) + 8), examined
    assert after["full_scans"] == before["full_scans"]
    assert after["examined_last_pass"] <= examined
    # The new contents came on two nodes each (the write quorum); the repair pass made only
    # the third copy of each of the 8 new structure files.
    assert 8 <= after["copied"] - before["copied"] < len(new)


async def test_a_full_scan_finds_a_file_whose_marker_was_lost(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(30, urls=5)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))
    assert cluster.master is not None

    # Lost while the master was stopped: the scan at start-up finds it.
    victim = corpus.captures[3].content
    first_holder = holders(cluster, victim)[0]
    cluster.master.stop(signal.SIGKILL)
    lose_location(cluster, victim, first_holder)
    cluster.start_master("--full-scan-every", "1")
    # Until its first scan the master does not know the location is lost: below_target is 0.
    cluster.wait_for(
        lambda s: s["index_nodes"] and s["repairs"]["full_scans"] >= 1 and settled(s),
        "the scan at start-up and the repair",
    )
    assert len(holders(cluster, victim)) == 2

    # Lost while it runs: the scan it makes every second finds it.
    victim = corpus.captures[5].content
    scans = cluster.status()["repairs"]["full_scans"]
    lose_location(cluster, victim, holders(cluster, victim)[0])
    status = cluster.wait_for(
        lambda s: s["repairs"]["full_scans"] > scans and settled(s),
        "a full scan and the repair",
    )
    assert len(holders(cluster, victim)) == 2
    assert status["repairs"]["copied"] >= 1
