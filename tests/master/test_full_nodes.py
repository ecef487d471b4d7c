"""Storage nodes on small disks that fill up: the master turns a full node read-only on its own,
places new files elsewhere, and turns it back alive when space returns; an import no node has
room for fails and acknowledges nothing."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from archive.cluster import ClusterClient
from deploy.testing.cluster import Cluster, alive
from deploy.testing.disk import stored_spans
from tests.archive.warc import sources
from tests.deploy.run_dlweb import dlweb
from tests.master.conftest import make_corpus
from tests.small_disk import MIB, fill, small_disk, unfill

RESERVE = ("--reserve", "8M", "--stats-every", "0.2")

ClusterFactory = Callable[..., Cluster]


def node(status: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in status["nodes"] if n["id"] == name)


async def test_a_full_node_takes_nothing_new_until_space_returns(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    with small_disk(cluster.root / "node3") as disk:
        cluster.add_node("node3", *RESERVE)
        cluster.wait_for(lambda s: alive(s) == 3, "node3 to join")
        fill(disk, 6 * MIB)
        status = cluster.wait_for(
            lambda s: node(s, "node3")["state"] == "read-only", "the full node to be read-only"
        )
        assert node(status, "node3")["reason"] == "full" and node(status, "node3")["full"]
        assert node(status, "node3")["reserve"] == 8 * MIB
        listed = dlweb("admin", "nodes", "-c", str(cluster.config_path)).stdout
        assert "read-only (full)" in listed

        corpus = make_corpus(12, urls=3)
        async with ClusterClient(cluster.config) as client:
            await client.insert(corpus.captures, corpus.bodies.__getitem__)
        status = cluster.wait_settled(len(corpus.bodies))
        assert node(status, "node3")["files"] == 0
        assert stored_spans(disk) == {} and stored_spans(disk, "structure") == {}

        unfill(disk)
        status = cluster.wait_for(
            lambda s: node(s, "node3")["state"] == "alive", "node3 alive again with room"
        )
        assert node(status, "node3")["reason"] is None

        # A state an admin chose is never changed by the disk filling or emptying.
        cluster.post("/admin/nodes/node3/state", {"state": "read-only"})
        fill(disk, 6 * MIB)
        status = cluster.wait_for(lambda s: node(s, "node3")["full"], "node3 to report full")
        assert node(status, "node3")["state"] == "read-only"
        assert node(status, "node3")["reason"] is None
        unfill(disk)
        status = cluster.wait_for(lambda s: not node(s, "node3")["full"], "node3 to have room")
        assert node(status, "node3")["state"] == "read-only"
        cluster.post("/admin/nodes/node3/state", {"state": "alive"})
        assert node(cluster.status(), "node3")["state"] == "alive"


def test_an_import_no_node_has_room_for_fails_and_acknowledges_nothing(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=0, replicas=1)
    source = sources.warcio_file(tmp_path)
    with small_disk(cluster.root / "node1") as first, small_disk(cluster.root / "node2") as second:
        for name, disk in (("node1", first), ("node2", second)):
            cluster.add_node(name, *RESERVE)
            fill(disk, 6 * MIB)
        cluster.wait_for(
            lambda s: [n["reason"] for n in s["nodes"]] == ["full", "full"], "both nodes full"
        )
        done = dlweb("import", "-c", str(cluster.config_path), str(source.path), check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert "the import stopped" in done.stderr
        assert "full disks keep node1, node2 from taking any" in done.stderr
        status = cluster.status()
        assert status["files"] == {"content": 0, "structure": 0}
        for disk in (first, second):
            assert stored_spans(disk) == {} and stored_spans(disk, "structure") == {}
