"""Fixtures of clusters of real processes on loopback (deploy/testing/cluster.py starts them),
and captures to insert into them."""

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from archive.cluster import NewCapture
from deploy.testing.cluster import Cluster, clusters_in

HEADER = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"


@pytest.fixture(params=["sqlite", "postgresql"])
def metadata(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a test's master database lives, on each engine: an SQLite file, or a new database
    on this worker's PostgreSQL server (its URL)."""
    if request.param == "sqlite":
        return tmp_path / "m.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    with clusters_in(tmp_path) as make:
        yield make


@pytest.fixture(scope="module")
def module_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Cluster]]:
    """`cluster_factory` for a module's tests that share one cluster."""
    with clusters_in(tmp_path_factory.mktemp("cluster")) as make:
        yield make


@dataclass
class Corpus:
    """Captures to insert and the bytes of every content and header block they name."""

    captures: list[NewCapture]
    bodies: dict[str, bytes]


def make_corpus(count: int, urls: int, size: int = 4096, seed: int = 0) -> Corpus:
    """`count` captures of `urls` URLs, each with a content of its own, one shared header block."""
    header = hashlib.sha256(HEADER).hexdigest()
    bodies = {header: HEADER}
    captures = []
    base = 1_600_000_000_000_000 + seed * 10**12
    for i in range(count):
        data = os.urandom(size)
        name = hashlib.sha256(data).hexdigest()
        bodies[name] = data
        captures.append(
            NewCapture(
                url=f"http://site{seed}.example/page/{i % urls}",
                time=base + i * 1_000_000,
                content=name,
                header=header,
                status=200,
                size=size,
                header_size=len(HEADER),
            )
        )
    return Corpus(captures, bodies)
