"""A master whose database is lost is rebuilt from the storage nodes' inventory logs
(docs/operations.md, "Restore a lost master")."""

import shutil
import signal
from typing import Any

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster, alive

from .conftest import Corpus, make_corpus


def view(cluster: Cluster, corpus: Corpus) -> dict[str, Any]:
    """What the master knows: file counts, and the holders of every content and structure file."""
    status = cluster.status()
    contents = {
        name: sorted(n["id"] for n in cluster.get(f"/locate/content/{name}")["nodes"])
        for name in corpus.bodies
    }
    structures = cluster.get("/structures?limit=10000")["structures"]
    return {
        "files": status["files"],
        "contents": contents,
        "structures": {s["name"]: sorted(n["id"] for n in s["nodes"]) for s in structures},
    }


async def test_a_new_master_with_an_empty_database_relearns_the_cluster(cluster_factory) -> None:
    # The grace period is long enough for every node to reconnect (their backoff is short here).
    cluster = cluster_factory(nodes=3, replicas=2, grace=5.0)
    corpus = make_corpus(120, urls=30)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    cluster.wait_settled(len(corpus.bodies))
    before = view(cluster, corpus)
    assert len(before["structures"]) == 30
    assert all(len(holders) >= 2 for holders in before["contents"].values())

    assert cluster.master is not None
    cluster.master.stop(signal.SIGKILL)
    shutil.rmtree(cluster.root / "master")
    cluster.start_master()
    cluster.wait_for(
        lambda s: alive(s) == 3 and len(s["index_nodes"]) == 1, "the nodes and index node"
    )
    cluster.wait_settled(len(corpus.bodies))
    # Every copy is where it was: nothing was copied while the nodes' inventories came in.
    assert view(cluster, corpus) == before
    assert cluster.status()["repairs"]["copied"] == 0, cluster.status()
    fsck = cluster.get("/admin/fsck")
    assert fsck["structures_without_active"] == 0

    # Reading and inserting work as before, through the new master.
    more = make_corpus(10, urls=5, seed=1)
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(more.captures, more.bodies.__getitem__)
        assert summary.added == len(more.captures)
        for capture in corpus.captures[::20]:
            assert await client.get_content(capture.content) == corpus.bodies[capture.content]
            found = await client.closest(capture.url, capture.time, mode="exact")
            assert found.capture.content == capture.content
