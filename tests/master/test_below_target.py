"""Files below their replica target, told apart by cause in /status and `dlweb admin fsck`:
copies being made, copies that cannot be placed, and files without a readable copy."""

import hashlib
import json
import random
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster, alive, checked, settled
from master.db import CAUSES, MasterDB, Needy, Problem
from tests.deploy.run_dlweb import dlweb
from tests.master.conftest import make_corpus

ClusterFactory = Callable[..., Cluster]


def state(status: dict[str, Any], node: str) -> str:
    return str(next(n["state"] for n in status["nodes"] if n["id"] == node))


def fsck(cluster: Cluster) -> tuple[str, dict[str, Any]]:
    """`dlweb admin fsck` as text and as JSON; it exits 1, as it finds files below target."""
    config = str(cluster.config_path)
    text = dlweb("admin", "fsck", "-c", config, check=False)
    assert text.returncode == 1, text.stdout + text.stderr
    report = json.loads(dlweb("admin", "fsck", "-c", config, "--json", check=False).stdout)
    return text.stdout, report


async def insert(cluster: Cluster, count: int, urls: int) -> list[str]:
    """Insert a corpus and wait until every file is at its target; its content names."""
    corpus = make_corpus(count, urls=urls)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    cluster.wait_settled(len(corpus.bodies))
    return [capture.content for capture in corpus.captures]


def holders(cluster: Cluster, name: str) -> frozenset[str]:
    return frozenset(n["id"] for n in cluster.get(f"/locate/content/{name}")["nodes"])


def test_a_file_below_target_is_classed_by_where_it_can_be_read_and_copied() -> None:
    # a is unreadable; c takes nothing new; b is the only node taking new files.
    readable, receivers = {"b", "c"}, {"b"}

    def cause(*holders: str) -> str:
        return Needy("content", "f", 10, len(holders), 3, holders).cause(readable, receivers)

    assert cause("a") == "no_readable_copy"
    assert cause("b") == "cannot_place"  # b takes new files and holds it already
    assert cause("c") == "repairing"  # b can take a copy
    assert cause("a", "c") == "repairing"


def test_the_counts_by_cause_follow_every_file_recorded_below_target(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    everything = [hashlib.sha256(str(number).encode()).hexdigest() for number in range(40)]
    entries = [{"op": "add", "kind": "content", "name": name, "size": 10} for name in everything]
    db.apply_inventory("a", entries, 40, lambda kind, size, refs: 2)
    rng = random.Random(47)
    recorded: dict[str, Problem] = {}
    for step in range(200):
        picked = {everything[rng.randrange(40)] for _ in range(5)}
        short = [
            Problem("content", name, 1, 2, rng.randrange(1, 100), rng.choice(CAUSES))
            for name in picked
            if rng.random() < 0.6
        ]
        fine = [("content", name) for name in picked - {p.name for p in short}]
        db.record_review(short, fine, [], [])
        recorded.update((p.name, p) for p in short)
        for _, name in fine:
            recorded.pop(name, None)
        assert db.short_counts() == {
            cause: sum(p.cause == cause for p in recorded.values()) for cause in CAUSES
        }, f"step {step}"
        assert db.recount(mend=False) == {}, f"step {step}"
    worst = db.most_endangered(5)
    ordered = sorted(recorded.values(), key=lambda p: (p.have, p.kind != "structure", p.size))
    assert [p.size for p in worst] == [p.size for p in ordered[:5]]
    db.close()


async def test_files_whose_copies_are_being_made(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2, start=False)
    # Copies are throttled to one a second, so those of a lost node take a while.
    cluster.start_master("--repair-rate", "1")
    for number in (1, 2, 3):
        cluster.add_node(f"node{number}")
    cluster.wait_for(lambda s: alive(s) == 3, "3 nodes to join")
    cluster.start_index()
    names = await insert(cluster, 40, urls=1)
    lost = Counter(node for name in names for node in holders(cluster, name)).most_common(1)[0][0]
    cluster.nodes[lost].stop(signal.SIGKILL)
    status = cluster.wait_for(
        lambda s: state(s, lost) == "down" and s["below_target"] > 0, f"{lost} to be down"
    )
    assert status["below_target_causes"]["repairing"] == status["below_target"]
    assert status["lost"] == 0 and status["placing"] == {"nodes": 2, "domains": 1}
    text, report = fsck(cluster)
    assert report["below_target_causes"]["repairing"] == report["below_target"] > 0
    assert {p["cause"] for p in report["problems"]} == {"repairing"}
    assert f"being repaired: {report['below_target']}" in text
    assert "(being repaired)" in text
    cluster.wait_for(settled, "the copies to be made", timeout=90)


async def test_files_whose_copies_cannot_be_placed(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    names = await insert(cluster, 30, urls=3)
    pairs = Counter(held for held in (holders(cluster, n) for n in names) if len(held) == 2)
    pair, on_pair = pairs.most_common(1)[0]
    lost = min(pair)
    (third,) = {"node1", "node2", "node3"} - pair
    # The node left taking new files holds a copy of every file the lost one shared with it.
    cluster.post(f"/admin/nodes/{third}/state", {"state": "read-only"})
    cluster.nodes[lost].stop(signal.SIGKILL)
    status = cluster.wait_for(
        lambda s: (
            state(s, lost) == "down"
            and s["below_target"] == s["below_target_causes"]["cannot_place"] > 0
            and s["repairs"]["running"] == 0
            and checked(s)
        ),
        "the copies that can be made to be made",
    )
    assert status["below_target"] >= on_pair and status["lost"] == 0
    assert status["placing"] == {"nodes": 1, "domains": 1}
    text, report = fsck(cluster)
    assert {p["cause"] for p in report["problems"]} == {"cannot_place"}
    assert f"cannot be placed: {report['below_target']}" in text
    assert "(only 1 node taking new files, in 1 failure domain)" in text
    status_text = dlweb("status", "-c", str(cluster.config_path)).stdout
    assert f"cannot be placed: {report['below_target']}" in status_text

    cluster.post(f"/admin/nodes/{third}/state", {"state": "alive"})
    cluster.wait_for(settled, "the copies to be placed on the node taking files again")


async def test_files_without_a_readable_copy(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    names = await insert(cluster, 20, urls=2)
    on_node = Counter(node for name in names for node in holders(cluster, name))
    lost, only_there = on_node.most_common(1)[0]
    cluster.nodes[lost].stop(signal.SIGKILL)
    status = cluster.wait_for(
        lambda s: state(s, lost) == "down" and s["lost"] > 0 and checked(s), f"{lost} to be down"
    )
    causes = status["below_target_causes"]
    assert causes["no_readable_copy"] == status["below_target"] == only_there
    text, report = fsck(cluster)
    assert {p["cause"] for p in report["problems"]} == {"no_readable_copy"}
    assert f"no readable copy: {only_there}" in text
    assert "0 of 1 replicas (no readable copy)" in text
