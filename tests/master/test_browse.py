"""`dlweb get` and `dlweb captures` against a real cluster."""

import json
import subprocess
import sys

from archive.cluster import ClusterClient

from .conftest import HEADER, make_corpus


def dlweb(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "dlweb", *args], capture_output=True, timeout=60)


async def test_get_and_captures_of_a_url(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    corpus = make_corpus(6, urls=2)
    async with ClusterClient(cluster.config) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    config = str(cluster.config_path)
    first, third = corpus.captures[0], corpus.captures[2]
    assert first.url == third.url

    got = dlweb("get", first.url, "--at", str(third.time), "-c", config)
    assert got.returncode == 0, got.stderr
    assert got.stdout == corpus.bodies[third.content]
    early = dlweb("get", first.url, "--at", "1990", "--mode", "after", "--headers", "-c", config)
    assert early.stdout == HEADER + corpus.bodies[first.content]

    listed = dlweb("captures", first.url, "--json", "-c", config)
    times = [c["time"] for c in json.loads(listed.stdout)]
    assert times == [c.time for c in corpus.captures if c.url == first.url]

    missing = dlweb("get", "http://never.example/", "-c", config)
    assert missing.returncode == 2
    assert b"not in the archive" in missing.stderr and b"Traceback" not in missing.stderr
    bad = dlweb("get", first.url, "--at", "yesterday", "-c", config)
    assert bad.returncode == 2 and b"--at" in bad.stderr
