"""The repair pass looks only at files that changed; full scans at start-up and now and then
catch what no change marked."""

import signal
import sqlite3
import time
from contextlib import closing
from typing import Any

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster, settled
from deploy.testing.disk import damage_content
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


async def settled_with_corpus(cluster: Cluster) -> tuple[Cluster, Corpus]:
    """The cluster with a small corpus inserted and every file at its target."""
    corpus = make_corpus(30, urls=5)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))
    return cluster, corpus


def record_location(cluster: Cluster, name: str, node: str) -> None:
    """Record in the master's database a copy the node does not hold, marking nothing."""
    with closing(sqlite3.connect(cluster.root / "master" / "master.db")) as db, db:
        (number,) = db.execute("SELECT num FROM node_numbers WHERE id = ?", (node,)).fetchone()
        db.execute("INSERT INTO held (node, id) VALUES (?, ?)", (number, natural_id(name)))
        db.execute(
            "UPDATE files SET holders = holders || ? WHERE id = ?", (f"{number},", natural_id(name))
        )


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
    cluster, corpus = await settled_with_corpus(cluster_factory(3))
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


async def test_a_copy_that_keeps_failing_is_tried_again_less_and_less_often(
    cluster_factory,
) -> None:
    cluster, corpus = await settled_with_corpus(cluster_factory(3))
    victim = corpus.captures[4].content
    source, other = holders(cluster, victim)
    damage_content(cluster.root / source, victim)

    # The other holder lost, the only source has bad bytes: every copy fails its hash check.
    cluster.kill_node(other)
    status = cluster.wait_for(lambda s: s["repairs"]["failed"] >= 2, "a failed copy retried")
    assert status["repairs"]["retry_waiting"] == 1
    # Tried again 1 s after the first failure, then 2 s, then 4 s after the last: at most one
    # more attempt in the next 3 s where a pass every few milliseconds would make hundreds.
    time.sleep(3)
    later = cluster.status()["repairs"]
    assert later["failed"] - status["repairs"]["failed"] <= 1, later
    assert later["retry_waiting"] == 1


async def test_a_copy_its_source_does_not_hold_is_forgotten_not_asked_for_again(
    cluster_factory,
) -> None:
    cluster, corpus = await settled_with_corpus(cluster_factory(4))
    assert cluster.master is not None
    victim = corpus.captures[4].content
    real = holders(cluster, victim)
    wrong, receiver = sorted(set(cluster.nodes) - set(real))
    for node in real:
        cluster.post(f"/admin/nodes/{node}/state", {"state": "read-only"})

    # The master's record says the file is on a node that never had it, and only there: the
    # copy to the one node taking files is asked of a node that answers it does not hold it.
    cluster.master.stop(signal.SIGKILL)
    for node in real:
        lose_location(cluster, victim, node)
    record_location(cluster, victim, wrong)
    cluster.start_master()
    status = cluster.wait_for(
        lambda s: s["lost"] == 1 and s["repairs"]["full_scans"] >= 1 and s["repairs"]["failed"],
        "the wrong record forgotten",
    )
    assert status["repairs"]["failed"] == 1
    assert status["repairs"]["retry_waiting"] == 0
    assert holders(cluster, victim) == []
    assert f"node {wrong} does not hold 1 files recorded on it" in cluster.master.log()
    assert receiver not in holders(cluster, victim)


async def test_a_copy_a_draining_node_does_not_hold_is_forgotten_and_the_drain_ends(
    cluster_factory,
) -> None:
    cluster, corpus = await settled_with_corpus(cluster_factory(3))
    assert cluster.master is not None
    victim = corpus.captures[4].content
    wrong = next(node for node in sorted(cluster.nodes) if node not in holders(cluster, victim))
    cluster.post(f"/admin/nodes/{wrong}/state", {"state": "draining"})
    cluster.wait_for(
        lambda s: next(n for n in s["nodes"] if n["id"] == wrong)["drained"] and settled(s),
        f"{wrong} to be drained",
    )

    # The master's record says the drained node still holds a copy: its delete answers that the
    # node does not hold it, which a delete asked again would answer forever.
    cluster.master.stop(signal.SIGKILL)
    record_location(cluster, victim, wrong)
    master = cluster.start_master()
    cluster.wait_for(
        lambda s: (
            all(n["connected"] for n in s["nodes"])
            and s["repairs"]["full_scans"] >= 1
            and settled(s)
            and "does not hold" in master.log()
        ),
        "the wrong record forgotten",
    )
    assert f"node {wrong} does not hold 1 files recorded on it" in master.log()
    assert wrong not in holders(cluster, victim)
