"""Structure copies that diverged while their node was away are merged when it returns: no
acknowledged capture is lost, and every copy ends with every record (docs/cluster.md).

The clusters here acknowledge an insert with one copy (`write_copies: 1`): records then reach
the active copy alone, which is how copies diverge. (With the default quorum they also reach a
replica, so the copy made active after a loss often has them already.)"""

from archive.cluster import ClusterClient
from archive.urlkey import structure_name
from deploy.testing.cluster import alive
from deploy.testing.waits import wait_until

from .copies import (
    active_node,
    every_copy_holds,
    lose_the_active_copy,
    move_the_active_copy,
    stale_copies,
    times_on,
)


async def test_records_only_on_a_lost_active_copy_are_merged_when_it_returns(
    cluster_factory,
) -> None:
    # 3 nodes; structure files get 3 copies (2 + structure_extra).
    cluster = cluster_factory(nodes=3, replicas=2, write_copies=1)
    async with ClusterClient(cluster.config) as client:
        first, only_there, later, lost = await move_the_active_copy(cluster, client)
        name = structure_name(first.captures[0].url)
        # The other replica's copy, diverged too when the active copy moved, is merged at once
        # (it has nothing the new active copy lacks); the lost node's waits for its return.
        cluster.wait_for(lambda s: s["structures_diverged"] == 1, "the lost copy alone to wait")

        # The node comes back with its copy: its records join the active copy, and every copy
        # ends with every acknowledged record. (On a loaded machine the client may have sent a
        # refused insert again, to the new active copy: those records need no merge.)
        only_times = {c.time for c in only_there.captures}
        missing = only_times - times_on(cluster, active_node(cluster, name), name)
        cluster.nodes[lost].start()
        every_copy_holds(
            cluster, name, {c.time for c in first.captures + only_there.captures + later.captures}
        )
        assert cluster.status()["repairs"]["merged"] == len(missing)
        for capture in only_there.captures + later.captures:
            found = await client.closest(capture.url, capture.time, mode="exact")
            assert found.capture.content == capture.content


async def test_replicas_of_a_lost_active_copy_are_refreshed_when_it_returns(
    cluster_factory,
) -> None:
    """Nothing is appended while the node is away: it stays the active copy, and the replicas
    get the records they missed once it is back."""
    cluster = cluster_factory(nodes=3, replicas=2, write_copies=1)
    async with ClusterClient(cluster.config) as client:
        first, only_there, _ = await lose_the_active_copy(cluster, client)
        name = structure_name(first.captures[0].url)
        lost = active_node(cluster, name)
        cluster.nodes[lost].start()
        every_copy_holds(cluster, name, {c.time for c in first.captures + only_there.captures})
    # It answers lookups on time: its node is not told its copy is stale.
    assert stale_copies(cluster, lost) == {"now": 0, "marked": 0}


async def test_the_master_names_the_active_copy_first(cluster_factory) -> None:
    """A replica lacks what was appended since the master last refreshed it, and a reader (an
    export, a client in lookup mode master) believes the first holder that answers: the master
    names the active copy first, not the holder first in its tables."""
    # node1's disks are the most reliable, so it takes the first active copy; once it is lost,
    # the active copy moves to another node, which the tables list after node1 when it returns.
    cluster = cluster_factory(nodes=3, replicas=2, write_copies=1, start=False)
    cluster.start_master()
    for i, reliability in enumerate(("high", "normal", "normal"), start=1):
        cluster.add_node(f"node{i}", "--reliability", reliability)
    cluster.wait_for(lambda s: alive(s) == 3, "3 nodes to join")
    cluster.start_index()
    async with ClusterClient(cluster.config) as client:
        first, _, _, lost = await move_the_active_copy(cluster, client)
    assert lost == "node1"
    name = structure_name(first.captures[0].url)
    active = active_node(cluster, name)
    cluster.nodes[lost].start()

    def holders() -> list[str]:
        listed = cluster.get("/structures?limit=10")["structures"]
        return [node["id"] for node in listed[0]["nodes"]]

    wait_until(lambda: len(holders()) == 3, "the returning node's copy to be readable")
    assert sorted(holders())[0] == lost != active
    assert holders()[0] == active
    located = cluster.get(f"/locate/structure/{name}")["nodes"]
    assert located[0]["id"] == active
