"""The cluster client reads through damage: a holder serving wrong bytes is skipped."""

import hashlib

import pytest

from archive.cluster import ClusterClient, ClusterError
from archive.errors import NotFound
from tests.disk import overwrite_content

from .conftest import make_corpus


async def test_a_replica_with_wrong_bytes_is_skipped(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    corpus = make_corpus(3, urls=3)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
        cluster.wait_settled(len(corpus.bodies))
        name = corpus.captures[1].content
        roots = [cluster.root / n for n in ("node1", "node2")]
        good = corpus.bodies[name]
        rotten = b"rotten" + good[6:]
        # Whichever holder answers first, one of these two reads must fall back to the other.
        for root in roots:
            overwrite_content(root, name, rotten)
            assert await client.get_content(name) == good
            overwrite_content(root, name, good)
        for root in roots:
            overwrite_content(root, name, rotten)
        with pytest.raises(ClusterError, match="served bytes of another hash"):
            await client.get_content(name)

        unknown = hashlib.sha256(b"never stored").hexdigest()
        with pytest.raises(NotFound, match="on no node"):
            await client.get_content(unknown)
        with pytest.raises(NotFound, match="not in the archive"):
            await client.closest("http://never.example/", corpus.captures[0].time)
        with pytest.raises(NotFound, match="no capture"):
            await client.closest(corpus.captures[0].url, 0, mode="before")
