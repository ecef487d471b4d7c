"""The cluster client reads through damage: a holder serving wrong bytes is skipped."""

import hashlib

import pytest

from archive.cluster import ClusterClient, ClusterError
from archive.errors import NotFound

from .conftest import make_corpus


async def test_a_replica_with_wrong_bytes_is_skipped(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    corpus = make_corpus(3, urls=3)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
        cluster.wait_settled(len(corpus.bodies))
        name = corpus.captures[1].content
        paths = [
            cluster.root / n / "content" / name[:2] / name[2:4] / name for n in ("node1", "node2")
        ]
        good = corpus.bodies[name]
        # Whichever holder answers first, one of these two reads must fall back to the other.
        for rotten in paths:
            rotten.write_bytes(b"rotten" + good[6:])
            assert await client.get_content(name) == good
            rotten.write_bytes(good)
        for rotten in paths:
            rotten.write_bytes(b"rotten" + good[6:])
        with pytest.raises(ClusterError, match="served bytes of another hash"):
            await client.get_content(name)

        unknown = hashlib.sha256(b"never stored").hexdigest()
        with pytest.raises(NotFound, match="on no node"):
            await client.get_content(unknown)
        with pytest.raises(NotFound, match="not in the archive"):
            await client.closest("http://never.example/", corpus.captures[0].time)
        with pytest.raises(NotFound, match="no capture"):
            await client.closest(corpus.captures[0].url, 0, mode="before")
