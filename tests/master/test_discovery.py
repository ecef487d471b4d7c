"""A cluster whose configuration names no master: the master announces itself on the LAN
(zeroconf on loopback), and a storage node, an index node and a client find it there."""

import uuid
from pathlib import Path

from archive.cluster import ClusterClient
from archive.config import load_config
from archive.discovery import MASTER, DiscoveryError, find
from deploy.testing.cluster import Cluster, alive, write_cluster_config
from deploy.testing.ports import free_port
from tests.deploy.run_dlweb import dlweb_json

from .conftest import make_corpus


async def test_a_cluster_without_master_address_finds_its_master(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    write_cluster_config(path)
    name = f"found-{uuid.uuid4().hex[:8]}"
    text = path.read_text().replace("name: test", f"name: {name}")
    path.write_text(text + "lookup: both\nreplication:\n  default: 1\n")
    config = load_config(path)
    assert config.master is None and config.discovery
    cluster = Cluster(tmp_path, path, config, free_port())
    try:
        master = cluster.start_master()
        node = cluster.add_node("node1")  # no --master option, no master key
        status = cluster.wait_for(lambda s: alive(s) == 1, "the node to find the master and join")
        assert [n["id"] for n in status["nodes"]] == ["node1"]
        assert f"found _dlweb-master._tcp at {master.url}" in node.log()

        cluster.start_index()  # it too finds the master, and joins it
        corpus = make_corpus(3, urls=2)
        async with ClusterClient(config) as client:
            assert await client.master_url() == master.url
            await client.insert(corpus.captures, corpus.bodies.__getitem__)
            capture = corpus.captures[0]
            assert await client.get_content(capture.content) == corpus.bodies[capture.content]
        cluster.wait_settled(len(corpus.bodies))  # the master learnt them from the node
        # The admin commands find it too.
        status = dlweb_json("status", "--json", "-c", str(path))
        assert [n["id"] for n in status["nodes"]] == ["node1"]

        master.stop()  # withdrawn with goodbye packets: nobody finds it any more
        try:
            await find(MASTER, config, timeout=1.5)
            raise AssertionError("the stopped master is still found")
        except DiscoveryError as exc:
            assert f"of cluster {name!r}" in str(exc)
    finally:
        cluster.stop()
