"""A whole cluster of real processes on loopback: master, index node, storage nodes."""

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from archive.cluster import NewCapture
from archive.config import ClusterConfig, load_config
from tests.conftest import (
    READY_TIMEOUT,
    NodeProcess,
    answers,
    free_port,
    write_cluster_config,
)

HEADER = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"


@dataclass
class Service:
    """A master or index node running as a subprocess."""

    command: list[str]
    port: int
    log_path: Path
    process: "subprocess.Popen[bytes] | None" = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Service":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT
        while not answers(f"{self.url}/status"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.command[2]} did not start:\n{self.log()}")
            time.sleep(0.02)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self) -> dict[str, Any]:
        """Its GET /status answer."""
        with urllib.request.urlopen(f"{self.url}/status", timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
            return result

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=20)
        self.process = None


@dataclass
class Cluster:
    root: Path
    config_path: Path
    config: ClusterConfig
    master_port: int
    grace: float = 1.0
    # Where the master keeps its metadata: a PostgreSQL URL, or None for SQLite in its folder.
    metadata: str | None = None
    master: Service | None = None
    index: Service | None = None
    nodes: dict[str, NodeProcess] = field(default_factory=dict)

    def start_master(self, *extra: str) -> Service:
        self.master = Service(
            [
                sys.executable,
                "-m",
                "master",
                "--data",
                str(self.root / "master"),
                "--listen",
                f"127.0.0.1:{self.master_port}",
                "-c",
                str(self.config_path),
                "--grace",
                str(self.grace),
                *(("--db", self.metadata) if self.metadata else ()),
                *extra,
            ],
            self.master_port,
            self.root / "master.log",
        ).start()
        return self.master

    def start_index(self) -> Service:
        port = free_port()
        self.index = Service(
            [
                sys.executable,
                "-m",
                "master.index",
                "--data",
                str(self.root / "index"),
                "--listen",
                f"127.0.0.1:{port}",
                "-c",
                str(self.config_path),
            ],
            port,
            self.root / "index.log",
        ).start()
        self.wait_for(lambda s: len(s["index_nodes"]) == 1, "the index node to join")
        return self.index

    def add_node(self, name: str, *extra: str, config_path: Path | None = None) -> NodeProcess:
        node = NodeProcess(
            self.root / name,
            config_path or self.config_path,
            free_port(),
            self.root / f"{name}.log",
            extra_args=["--id", name, *extra],
        )
        self.nodes[name] = node.start()
        return node

    def kill_node(self, name: str) -> None:
        """Kill a storage node with SIGKILL, as a crash would, and wait for it to be gone."""
        process = self.nodes[name].process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait()
        self.nodes[name].process = None

    def start(self, nodes: int = 3) -> "Cluster":
        self.start_master()
        for i in range(1, nodes + 1):
            self.add_node(f"node{i}")
        self.wait_for(lambda s: alive(s) == nodes, f"{nodes} nodes to join")
        self.start_index()
        return self

    # -- talking to the master -----------------------------------------------------------------

    def get(self, path: str, token: bool = False) -> Any:
        """The master's JSON answer to GET `path`, asked with the cluster token if `token`."""
        headers = {"Authorization": f"Bearer {self.config.write_token}"} if token else {}
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.master_port}{path}", headers=headers
        )
        with urllib.request.urlopen(request) as answer:
            return json.load(answer)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.master_port}{path}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.config.write_token}"},
            method="POST",
        )
        with urllib.request.urlopen(request) as answer:
            return json.load(answer)

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get("/status")
        return result

    def wait_for(
        self, condition: Callable[[dict[str, Any]], bool], what: str, timeout: float = 60
    ) -> dict[str, Any]:
        """Poll the master's status until condition holds; fail naming what did not happen."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                status = self.status()
            except (urllib.error.URLError, ConnectionError):
                status = {}
            if status and condition(status):
                return status
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; last status: {status}")

    def wait_settled(self, contents: int = 0, timeout: float = 60) -> dict[str, Any]:
        """Wait until the master knows at least `contents` contents, every file is at its target
        and every structure replica is fresh."""
        return self.wait_for(
            lambda s: s["files"]["content"] >= contents and settled(s),
            f"{contents} contents to reach their replica targets",
            timeout,
        )

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.process is not None:
                node.stop()
        for service in (self.index, self.master):
            if service is not None:
                service.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def metadata(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a test's master database lives, on each engine: an SQLite file, or a new database
    on this worker's PostgreSQL server (its URL)."""
    if request.param == "sqlite":
        return tmp_path / "m.db"
    return str(request.getfixturevalue("postgres_url"))


def alive(status: dict[str, Any]) -> int:
    return sum(1 for node in status["nodes"] if node["state"] == "alive")


def settled(status: dict[str, Any]) -> bool:
    """Every file at its target, as the repair pass found once it had looked at every change."""
    return (
        checked(status)
        and status["below_target"] == 0
        and status["structures_dirty"] == 0
        and status["repairs"]["running"] == 0
    )


def checked(status: dict[str, Any]) -> bool:
    """Whether the repair pass has looked at every change, so that the counts of files below
    target are current."""
    repairs = status["repairs"]
    return (
        repairs["to_check"] == 0
        and repairs["nodes_to_check"] == 0
        and repairs["full_scan_at"] is None
    )


def write_config(
    path: Path, master_port: int, replicas: int = 2, lookup: str = "both", **replication: int
) -> None:
    """A cluster configuration; `replication` sets more keys of that section."""
    write_cluster_config(path)
    with open(path, "a") as out:
        out.write(
            f"master: http://127.0.0.1:{master_port}\n"
            f"lookup: {lookup}\n"
            f"replication:\n  default: {replicas}\n"
        )
        out.writelines(f"  {key}: {value}\n" for key, value in replication.items())


@contextlib.contextmanager
def clusters_in(root: Path) -> Iterator[Callable[..., Cluster]]:
    """A maker of clusters of real processes with their files in `root`, stopped at the end."""
    made: list[Cluster] = []

    def make(
        nodes: int = 3,
        replicas: int = 2,
        grace: float = 1.0,
        start: bool = True,
        metadata: Path | str | None = None,
        **replication: int,
    ) -> Cluster:
        port = free_port()
        path = root / "dlweb.yaml"
        write_config(path, port, replicas, **replication)
        url = metadata if isinstance(metadata, str) else None  # a path: SQLite, the default
        cluster = Cluster(root, path, load_config(path), port, grace, url)
        made.append(cluster)
        return cluster.start(nodes) if start else cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()


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
