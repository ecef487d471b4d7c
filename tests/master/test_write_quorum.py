"""An insert is acknowledged only once each new file has its copies on distinct nodes: a node
killed right after loses nothing acknowledged, even when its disk is lost with it."""

import shutil
import signal
import time
from collections import Counter

from archive.cluster import INSERT_BATCH, ClusterClient
from deploy.testing.cluster import Cluster, NodeProcess
from deploy.testing.disk import stored_spans

from .conftest import Corpus, make_corpus


async def insert(cluster: Cluster, corpus: Corpus) -> None:
    async with ClusterClient(cluster.config) as client:
        summary = await client.insert(corpus.captures, corpus.bodies.__getitem__)
    assert summary.added == len(corpus.captures)


def busiest(cluster: Cluster) -> str:
    """The node holding the most contents on its disk."""
    held = {name: len(stored_spans(node.root)) for name, node in cluster.nodes.items()}
    return max(held, key=held.__getitem__)


async def kill_busiest_right_after_insert(cluster: Cluster, corpus: Corpus) -> NodeProcess:
    """Insert the corpus, then kill -9 the node holding the most contents 0.1 s after the
    insert is acknowledged; that node."""
    await insert(cluster, corpus)
    time.sleep(0.1)
    node = cluster.nodes[busiest(cluster)]
    node.stop(signal.SIGKILL)
    return node


def copies_on_disk(cluster: Cluster, kind: str) -> Counter[str]:
    """How many nodes' disks hold each file of a kind."""
    counts: Counter[str] = Counter()
    for node in cluster.nodes.values():
        counts.update(list(stored_spans(node.root, kind)))
    return counts


async def reads_back(cluster: Cluster, corpus: Corpus) -> None:
    """Every capture is found exactly at its time, and its content and header block read back
    byte-identical."""
    async with ClusterClient(cluster.config) as client:
        for capture in corpus.captures:
            found = await client.closest(capture.url, capture.time, "exact")
            assert found.capture.content == capture.content
            assert await client.get_content(capture.content) == corpus.bodies[capture.content]
            assert await client.get_content(capture.header) == corpus.bodies[capture.header]


async def test_each_new_file_is_on_two_disks_when_the_insert_returns(cluster_factory) -> None:
    cluster = cluster_factory(nodes=3, replicas=2)
    corpus = make_corpus(60, urls=20)
    await insert(cluster, corpus)
    # Looked at at once: the master's repair pass has not had the time to make copies.
    contents = copies_on_disk(cluster, "content")
    structures = copies_on_disk(cluster, "structure")
    assert all(contents[name] >= 2 for name in corpus.bodies), contents
    assert len(structures) == 20 and min(structures.values()) >= 2, structures


async def test_a_node_killed_right_after_an_acknowledged_insert_loses_nothing(
    cluster_factory,
) -> None:
    cluster = cluster_factory(nodes=3, replicas=2, grace=60.0)
    corpus = make_corpus(300, urls=100)
    await kill_busiest_right_after_insert(cluster, corpus)
    await reads_back(cluster, corpus)


async def test_a_node_whose_disk_is_lost_right_after_an_insert_gets_its_files_again(
    cluster_factory,
) -> None:
    # Back within its grace period, so that no copy was made elsewhere meanwhile: its files are
    # made again on it, from the other copies (the copies made elsewhere would otherwise leave
    # it nothing to hold, depending on how fast it came back).
    cluster = cluster_factory(nodes=3, replicas=2, grace=15.0)
    corpus = make_corpus(300, urls=100)
    node = await kill_busiest_right_after_insert(cluster, corpus)
    shutil.rmtree(node.root)
    await reads_back(cluster, corpus)
    node.start()
    cluster.wait_settled(len(corpus.bodies), timeout=120)
    assert len(stored_spans(node.root)) > 0
    await reads_back(cluster, corpus)


async def test_batches_racing_to_a_new_structure_file_are_all_on_two_nodes(
    cluster_factory,
) -> None:
    # Two nodes: no spare to fall back on when a batch's append reaches the named copy before
    # the batch that creates it there. The client sends the next batch while the index node
    # still appends the last one.
    cluster = cluster_factory(nodes=2, replicas=2)
    corpus = make_corpus(3 * INSERT_BATCH, urls=3)
    await insert(cluster, corpus)
    structures = copies_on_disk(cluster, "structure")
    assert len(structures) == 3 and min(structures.values()) == 2, structures
