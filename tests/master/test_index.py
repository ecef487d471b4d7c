"""Index nodes: several behind one master, dedup that survives a restart, refused strangers."""

import dataclasses
import sys
from pathlib import Path

import pytest

from archive.cluster import ClusterClient, ClusterError
from tests.conftest import free_port

from .conftest import Cluster, Service, make_corpus


def second_index(cluster: Cluster) -> Service:
    port = free_port()
    return Service(
        [
            sys.executable,
            "-m",
            "master.index",
            "--data",
            str(cluster.root / "index2"),
            "--listen",
            f"127.0.0.1:{port}",
            "-c",
            str(cluster.config_path),
        ],
        port,
        cluster.root / "index2.log",
    ).start()


async def test_clients_are_spread_over_several_index_nodes(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    other = second_index(cluster)
    try:
        cluster.wait_for(lambda s: len(s["index_nodes"]) == 2, "two index nodes")
        for seed in range(4):
            corpus = make_corpus(10, urls=10, seed=seed)
            async with ClusterClient(cluster.config) as client:
                summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
                assert summary.added == 10
        assert cluster.index is not None
        served = [s.log().count("connected from") for s in (cluster.index, other)]
        assert all(count >= 1 for count in served), served
    finally:
        other.stop()


async def test_dedup_survives_an_index_restart(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(30, urls=10)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert cluster.index is not None
    cluster.index.stop()
    cluster.wait_for(lambda s: not s["index_nodes"], "the index node to leave")
    cluster.start_index()
    again = [dataclasses.replace(c, url=c.url + "?v=2") for c in corpus.captures]
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(again, corpus.bodies.__getitem__)
    assert (summary.added, summary.uploaded) == (30, 0)


async def test_a_client_without_the_secret_is_refused(cluster_factory, tmp_path: Path) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    stranger = dataclasses.replace(cluster.config, secret=b"not the cluster secret at all")
    corpus = make_corpus(1, urls=1)
    async with ClusterClient(stranger) as client:
        with pytest.raises(ClusterError, match="insert failed"):
            await client.insert(corpus.captures, corpus.bodies.__getitem__)


async def test_inserting_without_an_index_node_fails_clearly(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    assert cluster.index is not None
    cluster.index.stop()
    cluster.wait_for(lambda s: not s["index_nodes"], "the index node to leave")
    corpus = make_corpus(1, urls=1)
    async with ClusterClient(cluster.config) as client:
        with pytest.raises(ClusterError, match="no index node"):
            await client.insert(corpus.captures, corpus.bodies.__getitem__)
