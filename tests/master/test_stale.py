"""Records appended to a structure file's active copy make its replicas stale until the master
refreshes them: the master tells their nodes at once, and a node coming back which copies
diverged while it was away, so that they answer lookups late and readers take the active copy
meanwhile (docs/cluster.md)."""

import asyncio
import http.client
import json
import signal

from archive.cluster import ClusterClient
from archive.urlkey import structure_name
from deploy.testing.waits import wait_until

from .conftest import make_corpus
from .copies import (
    active_node,
    appended_to,
    at_url,
    every_copy_holds,
    insert,
    move_the_active_copy,
    one_url_everywhere,
    stale_copies,
    times_on,
)


async def test_replicas_are_told_they_are_stale_until_the_refresh(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    async with ClusterClient(cluster.config) as client:
        first, name = await one_url_everywhere(cluster, client)
        url = first.captures[0].url
        active = active_node(cluster, name)
        replicas = sorted(node for node in cluster.nodes if node != active)
        # A copy made by the master is fresh: nothing was marked yet.
        assert all(stale_copies(cluster, node)["marked"] == 0 for node in cluster.nodes)

        later = at_url(make_corpus(2, urls=1, seed=1), url)
        await insert(client, later)

    wait_until(
        lambda: all(stale_copies(cluster, node)["marked"] >= 1 for node in replicas),
        "the replicas' nodes to hear their copies are stale",
    )
    assert stale_copies(cluster, active)["marked"] == 0
    every_copy_holds(cluster, name, {c.time for c in first.captures + later.captures})
    wait_until(
        lambda: all(stale_copies(cluster, node)["now"] == 0 for node in cluster.nodes),
        "the refreshed copies to be stale no more",
    )


async def test_a_returning_node_hears_its_diverged_copy_is_stale(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    async with ClusterClient(cluster.config) as client:
        first, only_there, later, lost = await move_the_active_copy(cluster, client)
    name = structure_name(first.captures[0].url)
    cluster.nodes[lost].start()
    wait_until(
        lambda: stale_copies(cluster, lost)["marked"] >= 1,
        "the returning node to hear its copy is stale",
    )
    captures = first.captures + only_there.captures + later.captures
    every_copy_holds(cluster, name, {c.time for c in captures})
    wait_until(
        lambda: stale_copies(cluster, lost)["now"] == 0, "the merged copy to be stale no more"
    )


async def test_a_draining_active_copy_stays_until_its_replicas_are_refreshed(
    cluster_factory,
) -> None:
    """Records appended to the active copy on a node being drained reach the replicas before
    another copy is made active and the drained one deleted."""
    cluster = cluster_factory(nodes=3, replicas=2)
    assert cluster.master is not None and cluster.master.process is not None
    master = cluster.master.process
    async with ClusterClient(cluster.config) as client:
        first, name = await one_url_everywhere(cluster, client)
        url = first.captures[0].url
        active = active_node(cluster, name)

        # With the master frozen, the master hears of the appends and of the drain together
        # (the insert is acknowledged once it has recorded the change).
        later = at_url(make_corpus(2, urls=1, seed=1), url)
        master.send_signal(signal.SIGSTOP)
        try:
            inserting = asyncio.ensure_future(insert(client, later))
            await appended_to(cluster, active, name, later)
            drain = http.client.HTTPConnection("127.0.0.1", cluster.master_port, timeout=60)
            drain.request(
                "POST",
                f"/admin/nodes/{active}/state",
                body=json.dumps({"state": "draining"}),
                headers={"Authorization": f"Bearer {cluster.config.write_token}"},
            )
        finally:
            master.send_signal(signal.SIGCONT)
        await inserting
        assert drain.getresponse().status == 200
        drain.close()

    cluster.wait_for(
        lambda s: next(n for n in s["nodes"] if n["id"] == active).get("drained") is True,
        f"{active} to be drained",
    )
    times = {c.time for c in first.captures + later.captures}
    for node in sorted(cluster.nodes):
        if node != active:
            assert times_on(cluster, node, name) == times, node
