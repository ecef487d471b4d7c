"""A whole cluster of real processes on loopback: master, index node, storage nodes, each a
subprocess started and waited for until it answers, on a configuration of its own (its own
multicast groups and port, so parallel runs never mix); and what the master's status says of it.
"""

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive.config import ClusterConfig, load_config
from deploy.testing.ports import free_port
from deploy.testing.spawn import end, spawn, tail
from deploy.testing.waits import answers, wait_until

READY_TIMEOUT = 20.0


def write_cluster_config(path: Path, join: str = "all", wait_ms: int = 100) -> ClusterConfig:
    """A cluster configuration on its own multicast groups and port, so parallel runs never mix."""
    base = f"230.{random.randint(1, 254)}.{random.randint(0, 255)}.0"
    path.write_text(
        "cluster:\n"
        "  name: test\n"
        f"  secret: {os.urandom(24).hex()}\n"
        "multicast:\n"
        f"  group_base: {base}\n"
        f"  port: {free_port(socket.SOCK_DGRAM)}\n"
        f"  join: {join}\n"
        f"  wait_ms: {wait_ms}\n"
    )
    return load_config(path)


def write_config(
    path: Path, master_port: int, replicas: int = 2, lookup: str = "both", **replication: int
) -> None:
    """A cluster configuration with its master; `replication` sets more keys of that section."""
    write_cluster_config(path)
    with open(path, "a") as out:
        out.write(
            f"master: http://127.0.0.1:{master_port}\n"
            f"lookup: {lookup}\n"
            f"replication:\n  default: {replicas}\n"
        )
        out.writelines(f"  {key}: {value}\n" for key, value in replication.items())


@dataclass
class NodeProcess:
    """A storage node running as a subprocess."""

    root: Path
    config_path: Path
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    extra_args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "NodeProcess":
        command = [
            sys.executable,
            "-m",
            "storage_node",
            "--root",
            str(self.root),
            "--listen",
            f"127.0.0.1:{self.port}",
            "-c",
            str(self.config_path),
            *self.extra_args,
        ]
        self.process = spawn(command, self.log_path)
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        wait_until(
            lambda: answers(f"{self.url}/status"),
            "the storage node to answer",
            READY_TIMEOUT,
            interval=0.02,
            process=self.process,
            details=self.log,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        process, self.process = self.process, None
        # A node syncs its state before it exits; a shared disk can take long to.
        return end(process, sig, 60, self.log_path)


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
        self.process = spawn(self.command, self.log_path)
        wait_until(
            lambda: answers(f"{self.url}/status"),
            f"{self.command[2]} to answer",
            READY_TIMEOUT,
            interval=0.02,
            process=self.process,
            details=self.log,
        )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self) -> dict[str, Any]:
        """Its GET /status answer."""
        with urllib.request.urlopen(f"{self.url}/status", timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
            return result

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process, self.process = self.process, None
        if process is not None:
            end(process, sig, 20, self.log_path)


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
        database = ("--db", self.metadata) if self.metadata else ()
        grace = ("--grace", str(self.grace))
        self.master = self._start("master", "master", self.master_port, *grace, *database, *extra)
        return self.master

    def start_index(self) -> Service:
        self.index = self._start("master.index", "index", free_port())
        self.wait_for(lambda s: len(s["index_nodes"]) == 1, "the index node to join")
        return self.index

    def _start(self, module: str, name: str, port: int, *extra: str) -> Service:
        """`python -m module` on this cluster's configuration, its files in root/name, answering
        on `port`, once it answers."""
        command = [
            sys.executable,
            "-m",
            module,
            "--data",
            str(self.root / name),
            "--listen",
            f"127.0.0.1:{port}",
            "-c",
            str(self.config_path),
            *extra,
        ]
        return Service(command, port, self.root / f"{name}.log").start()

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
        status: dict[str, Any] = {}

        def holds() -> bool:
            nonlocal status
            try:
                status = self.status()
            except (urllib.error.URLError, ConnectionError):
                status = {}
            return bool(status) and condition(status)

        wait_until(holds, what, timeout, details=lambda: self._not_alive(status))
        return status

    def _not_alive(self, status: dict[str, Any]) -> str:
        """The last status seen, and the end of the log of each node it does not show alive."""
        shown = {node["id"] for node in status.get("nodes", ()) if node["state"] == "alive"}
        logs = [
            f"\n--- the end of {node.log_path.name}:\n{tail(node.log_path, 3000)}"
            for name, node in self.nodes.items()
            if name not in shown
        ]
        return f"last status: {status}" + "".join(logs)

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
        write_config(path, port, replicas, "both", **replication)
        url = metadata if isinstance(metadata, str) else None  # a path: SQLite, the default
        cluster = Cluster(root, path, load_config(path), port, grace, url)
        made.append(cluster)
        return cluster.start(nodes) if start else cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()


# -- what the master's status says ------------------------------------------------------------


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
