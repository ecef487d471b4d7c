"""The cluster as a storage admin runs it: node loss, new nodes, drains, scrubs, master restarts."""

import asyncio
import hashlib
import os
import signal
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from archive.cluster import ClusterClient, ClusterError, NewCapture
from deploy.testing.cluster import Cluster, alive, settled, write_cluster_config
from deploy.testing.disk import content_spans, damage_content, stored_content
from deploy.testing.waits import wait_until

from .conftest import Corpus, make_corpus


async def insert(cluster: Cluster, corpus: Corpus) -> None:
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert summary.added == len(corpus.captures)


async def check_readable(cluster: Cluster, corpus: Corpus) -> None:
    """Every capture is found at its exact time, and its content comes back byte-identical."""
    async with ClusterClient(cluster.config) as client:
        gate = asyncio.Semaphore(16)

        async def one(capture: NewCapture) -> None:
            async with gate:
                found = await client.closest(capture.url, capture.time, mode="exact")
                assert found.capture.content == capture.content
                assert await client.get_content(capture.content) == corpus.bodies[capture.content]

        await asyncio.gather(*(one(c) for c in corpus.captures))


def replica_counts(cluster: Cluster, corpus: Corpus) -> Counter[int]:
    """How many readable replicas each content has, as the master locates them."""
    counts: Counter[int] = Counter()
    for name in corpus.bodies:
        counts[len(cluster.get(f"/locate/content/{name}")["nodes"])] += 1
    return counts


def node_state(status: dict, name: str) -> str:
    return next(n["state"] for n in status["nodes"] if n["id"] == name)


async def test_a_killed_node_is_replaced_and_nothing_is_lost(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2, grace=1.0)
    corpus = make_corpus(2000, urls=500)
    await insert(cluster, corpus)
    before = cluster.wait_settled(len(corpus.bodies))
    assert min(replica_counts(cluster, corpus)) >= 2
    on_victim = next(n["files"] for n in before["nodes"] if n["id"] == "node2")

    cluster.kill_node("node2")
    cluster.wait_for(lambda s: node_state(s, "node2") == "down", "node2 to be marked down")
    cluster.wait_settled()
    # Settled is about replicas: files the loss marked but left at their target may still wait
    # for the repair pass to look at them.
    status = cluster.wait_for(
        lambda s: (
            settled(s) and s["repairs"]["to_check"] == 0 and s["repairs"]["nodes_to_check"] == 0
        ),
        "every file the loss marked to be looked at",
    )
    assert alive(status) == 2
    assert status["lost"] == 0
    # The node going down marked its files: no full scan was needed to find them.
    assert status["repairs"]["full_scans"] == before["repairs"]["full_scans"]
    assert status["repairs"]["examined"] - before["repairs"]["examined"] >= on_victim

    counts = replica_counts(cluster, corpus)
    assert set(counts) == {2}, f"contents by replica count: {counts}"
    await check_readable(cluster, corpus)


async def test_a_new_node_is_filled_by_a_rebalance_that_loses_nothing(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(400, urls=100)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))

    cluster.add_node("node4")
    cluster.wait_for(lambda s: alive(s) == 4, "node4 to join")
    plan = cluster.get("/admin/rebalance")
    assert plan["plan"]["files"] > 0
    to_new = sum(m["files"] for m in plan["plan"]["moves"] if m["dst"] == "node4")
    assert to_new > plan["plan"]["files"] / 2, plan
    assert cluster.status()["rebalance"]["state"] == "idle", "showing the plan moved something"

    cluster.post("/admin/rebalance", {"apply": True, "files_per_s": 2000})
    status = cluster.wait_for(lambda s: s["rebalance"]["state"] == "done", "the rebalance")
    held = {n["id"]: n["files"] for n in status["nodes"]}
    assert held["node4"] > 0
    # The plan evens out bytes: node4 takes contents, the others keep the many small structure
    # files (three copies each), so the file counts stay apart where the bytes do not.
    stored = {n["id"]: n["bytes"] for n in status["nodes"]}
    assert max(stored.values()) - min(stored.values()) <= 0.2 * max(stored.values()), stored
    cluster.wait_settled()
    assert min(replica_counts(cluster, corpus)) >= 2
    await check_readable(cluster, corpus)


async def test_a_rebalance_resumes_after_a_master_restart(cluster_factory, metadata) -> None:
    cluster = cluster_factory(nodes=2, replicas=1, metadata=metadata)
    corpus = make_corpus(300, urls=300)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))
    cluster.add_node("node3")
    cluster.wait_for(lambda s: alive(s) == 3, "node3 to join")

    applied = cluster.post("/admin/rebalance", {"apply": True, "files_per_s": 40})
    total = applied["progress"]["files"]
    assert total >= 100
    cluster.wait_for(
        lambda s: s["rebalance"]["progress"]["moved"] >= 10, "the rebalance to move some files"
    )
    assert cluster.master is not None
    cluster.master.stop(signal.SIGKILL)
    cluster.start_master()
    status = cluster.wait_for(
        lambda s: s["rebalance"]["state"] == "running", "the rebalance to be running again"
    )
    assert 10 <= status["rebalance"]["progress"]["moved"] < total
    status = cluster.wait_for(
        lambda s: s["rebalance"]["state"] == "done", "the resumed rebalance to finish", 120
    )
    assert (
        status["rebalance"]["progress"]["moved"] + status["rebalance"]["progress"]["skipped"]
        == total
    )
    cluster.wait_for(lambda s: alive(s) == 3 and s["index_nodes"], "nodes and index to return")
    cluster.wait_settled()
    await check_readable(cluster, corpus)
    assert cluster.get("/admin/fsck?recount=1", token=True)["totals_drift"] == {}


async def test_a_drained_node_ends_empty_and_its_files_live_on(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(300, urls=100)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))

    answer = cluster.post("/admin/nodes/node1/state", {"state": "draining"})
    assert answer["state"] == "draining"
    status = cluster.wait_for(
        lambda s: next(n for n in s["nodes"] if n["id"] == "node1").get("drained") is True,
        "node1 to be drained",
    )
    assert next(n for n in status["nodes"] if n["id"] == "node1")["files"] == 0
    assert content_spans(cluster.root / "node1") == {}
    cluster.wait_settled()
    assert min(replica_counts(cluster, corpus)) >= 2
    await check_readable(cluster, corpus)


async def test_a_scrub_finds_a_corrupt_file_and_the_master_repairs_it(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(50, urls=10)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))

    victim = corpus.captures[7].content
    holder = cluster.get(f"/locate/content/{victim}")["nodes"][0]["id"]
    damage_content(cluster.root / holder, victim)

    started = cluster.post("/admin/scrub", {"node": holder})
    assert started["scrub"][holder]["started"] is True
    status = cluster.wait_for(
        lambda s: (next(n for n in s["nodes"] if n["id"] == holder)["scrub"] or {}).get("bad") == 1,
        "the scrub to report the bad file",
    )
    assert (cluster.root / holder / "quarantine" / "content" / victim).exists()
    status = cluster.wait_settled()
    assert status["repairs"]["copied"] >= 1
    holders = cluster.get(f"/locate/content/{victim}")["nodes"]
    assert len(holders) == 2
    for node in holders:
        repaired = stored_content(cluster.root / node["id"], victim)
        assert repaired is not None and hashlib.sha256(repaired).hexdigest() == victim


async def test_known_contents_upload_nothing_but_still_add_records(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(40, urls=10)
    await insert(cluster, corpus)
    later = [
        NewCapture(
            url=c.url.replace("page", "mirror"),
            time=c.time + 86_400_000_000,
            content=c.content,
            header=c.header,
            status=200,
            size=c.size,
        )
        for c in corpus.captures
    ]
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(later, corpus.bodies.__getitem__)
        assert (summary.added, summary.uploaded, summary.bytes) == (40, 0, 0)
        found = await client.closest(later[3].url, later[3].time, mode="exact")
        assert found.capture.content == corpus.captures[3].content


async def test_bad_captures_get_a_clear_refusal(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    good = make_corpus(1, urls=1).captures[0]
    async with ClusterClient(cluster.config) as client:
        with pytest.raises(ClusterError, match=r"captures\[0\].*'content' must be 64 lowercase"):
            await client.insert([NewCapture(**{**good.to_json(), "content": "xyz"})], bytes)
        with pytest.raises(ClusterError, match=r"captures\[0\].*status"):
            await client.insert([NewCapture(**{**good.to_json(), "status": 4000})], bytes)


async def test_a_node_without_the_secret_cannot_join(cluster_factory, tmp_path: Path) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    stranger_config = tmp_path / "stranger.yaml"
    write_cluster_config(stranger_config)
    with open(stranger_config, "a") as out:
        out.write(f"master: http://127.0.0.1:{cluster.master_port}\n")
    stranger = cluster.add_node("stranger", config_path=stranger_config)
    master = cluster.master
    assert master is not None
    wait_until(lambda: "refused HIP connection" in master.log(), "the master to refuse it")
    wait_until(lambda: "stranger" in stranger.log() and "refused" in stranger.log(), "its log")
    assert [n["id"] for n in cluster.status()["nodes"]] == ["node1"]


async def test_lookup_through_the_master(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    corpus = make_corpus(5, urls=5)
    await insert(cluster, corpus)
    cluster.wait_settled(len(corpus.bodies))
    name = corpus.captures[0].content
    answer = cluster.get(f"/locate/content/{name}")
    assert sorted(n["id"] for n in answer["nodes"]) == ["node1", "node2"]
    unknown = hashlib.sha256(os.urandom(8)).hexdigest()
    assert cluster.get(f"/locate/content/{unknown}")["nodes"] == []
    async with ClusterClient(cluster.config) as client:
        assert sorted(await client.locate("content", name)) == sorted(
            n["address"] for n in answer["nodes"]
        )


async def test_a_deep_fsck_finds_contents_no_capture_names(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    corpus = make_corpus(30, urls=10)
    await insert(cluster, corpus)
    stray = os.urandom(5000)
    stray_name = hashlib.sha256(stray).hexdigest()
    node = cluster.nodes["node1"]
    request = urllib.request.Request(
        f"{node.url}/content/{stray_name}",
        data=stray,
        headers={"Authorization": f"Bearer {cluster.config.write_token}"},
        method="PUT",
    )
    urllib.request.urlopen(request).close()
    cluster.wait_settled(len(corpus.bodies) + 1)

    shallow = cluster.get("/admin/fsck")
    assert shallow["ok"] is True and shallow["orphans"] is None
    deep = cluster.get("/admin/fsck?deep=1", token=True)
    assert deep["structures_read"] == 10 and deep["structures_unreadable"] == 0
    assert (deep["orphans"], deep["orphan_names"], deep["ok"]) == (1, [stray_name], False)
