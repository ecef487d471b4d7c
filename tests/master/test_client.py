"""The cluster client reads through damage: a holder serving wrong bytes is skipped, and asked\nto check its copy."""

import hashlib

import pytest

from archive.cluster import ClusterClient, ClusterError
from archive.errors import NotFound
from deploy.testing.disk import overwrite_content, stored_bytes

from .conftest import make_corpus


async def test_a_replica_with_wrong_bytes_is_skipped(cluster_factory) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    corpus = make_corpus(3, urls=3)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
        cluster.wait_settled(len(corpus.bodies))
        roots = [cluster.root / n for n in ("node1", "node2")]
        # Whichever holder answers first, the read falls back to the good copy if it must.
        name = corpus.captures[1].content
        good = corpus.bodies[name]
        overwrite_content(roots[0], name, b"rotten" + good[6:])
        assert await client.get_content(name) == good
        # A copy that served bytes of another hash is checked by its node and quarantined.
        both = corpus.captures[2].content
        for root in roots:
            overwrite_content(root, both, b"rotten" + corpus.bodies[both][6:])
        with pytest.raises(ClusterError, match="served bytes of another hash"):
            await client.get_content(both)
        for root in roots:
            assert stored_bytes(root, both) is None
            assert (root / "quarantine" / "content" / both).exists()

        unknown = hashlib.sha256(b"never stored").hexdigest()
        with pytest.raises(NotFound, match="on no node"):
            await client.get_content(unknown)
        with pytest.raises(NotFound, match="not in the archive"):
            await client.closest("http://never.example/", corpus.captures[0].time)
        with pytest.raises(NotFound, match="no capture"):
            await client.closest(corpus.captures[0].url, 0, mode="before")
