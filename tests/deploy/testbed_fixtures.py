"""A dlweb cluster spread over the hosts of a test bed, each process in its own namespace.

Host 1 runs the master and the index node, hosts 2 to 4 a storage node each (failure domains
rack2 to rack4), host 5 the consultation proxy, host 6 the clients (tests/deploy/testbed_client.py)
and a website, host 7 a crawler agent.
The test process itself is in none of the hosts: it asks through processes it starts in them.
"""

import json
import os
import random
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deploy.testbed import Lan, LanUnavailable, down
from deploy.testing.cluster import checked
from deploy.testing.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
MASTER_HOST, PROXY_HOST, CLIENT_HOST, AGENT_HOST = 1, 5, 6, 7
NODE_HOSTS = (2, 3, 4)
HOSTS = 7
MASTER_PORT, INDEX_PORT, NODE_PORT, PROXY_PORT = 8100, 8102, 8101, 8080
GRACE = 2.0
READY = 60.0


def unique_prefix() -> str:
    """Namespace names of their own, so parallel runs never meet."""
    return f"dlt{os.getpid():x}{secrets.token_hex(2)}"


def make_lan(hosts: int) -> Lan:
    """A test bed, or a skip naming why this machine cannot have one."""
    lan = Lan(unique_prefix(), hosts, f"10.{random.randint(64, 127)}.{random.randint(0, 255)}.0/24")
    try:
        lan.up()
    except LanUnavailable as exc:
        pytest.skip(f"no multi-host test bed on this machine: {exc}")
    return lan


@pytest.fixture(name="lan")
def lan_fixture() -> Iterator[Lan]:
    """A test bed of three hosts, removed after the test, whatever happened."""
    bed = make_lan(3)
    try:
        yield bed
    finally:
        down(bed.prefix)


def node_name(host: int) -> str:
    return f"node{host}"


@dataclass
class Bed:
    """The cluster's processes on the test bed, its configuration, and ways to look at it."""

    lan: Lan
    root: Path
    processes: dict[str, "subprocess.Popen[bytes]"] = field(default_factory=dict)
    hosts: dict[str, int] = field(default_factory=dict)

    @property
    def config(self) -> Path:
        return self.root / "dlweb.yaml"

    @property
    def master(self) -> str:
        return f"http://{self.lan.address(MASTER_HOST)}:{MASTER_PORT}"

    @property
    def proxy(self) -> str:
        return f"http://{self.lan.address(PROXY_HOST)}:{PROXY_PORT}"

    def node(self, host: int) -> str:
        return f"http://{self.lan.address(host)}:{NODE_PORT}"

    def write_config(self) -> None:
        self.config.write_text(
            "cluster:\n"
            "  name: testbed\n"
            f"  secret: {secrets.token_hex(24)}\n"
            f"master: {self.master}\n"
            "lookup: multicast\n"
            "multicast:\n"
            f"  group_base: 230.{random.randint(1, 254)}.{random.randint(0, 255)}.0\n"
            "  port: 47800\n"
            "  interface: 0.0.0.0\n"
            "  wait_ms: 1000\n"  # a loaded machine answers late; only misses wait it all
            "replication:\n"
            "  default: 2\n"
            "consultation:\n"
            f"  allow: [{self.lan.subnet}]\n"
        )

    # -- processes -----------------------------------------------------------------------------

    def start(self, name: str, host: int, *argv: str) -> None:
        """Start `python -m ARGV` in a host, its output in ROOT/NAME.log."""
        with open(self.root / f"{name}.log", "ab") as log:
            self.processes[name] = self.lan.popen(
                host,
                [sys.executable, "-m", *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.hosts[name] = host

    def start_master(self) -> None:
        self.start(
            "master",
            MASTER_HOST,
            "master",
            "--data",
            str(self.root / "master"),
            "--listen",
            f"{self.lan.address(MASTER_HOST)}:{MASTER_PORT}",
            "--grace",
            f"{GRACE:g}",
            "-c",
            str(self.config),
        )

    def start_index(self) -> None:
        self.start(
            "index",
            MASTER_HOST,
            "master.index",
            "--data",
            str(self.root / "index"),
            "--listen",
            f"{self.lan.address(MASTER_HOST)}:{INDEX_PORT}",
            "-c",
            str(self.config),
        )

    def start_node(self, host: int) -> None:
        name = node_name(host)
        self.start(
            name,
            host,
            "storage_node",
            "--root",
            str(self.root / name),
            "--listen",
            f"{self.lan.address(host)}:{NODE_PORT}",
            "-c",
            str(self.config),
            "--id",
            name,
            "--domain",
            f"rack{host}",
        )

    def start_proxy(self) -> None:
        self.start(
            "proxy",
            PROXY_HOST,
            "proxy",
            "--data",
            str(self.root / "proxy"),
            "--listen",
            f"{self.lan.address(PROXY_HOST)}:{PROXY_PORT}",
            "-c",
            str(self.config),
        )

    def kill(self, name: str, sig: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            process.send_signal(sig)
        process.wait(timeout=30)

    def stop(self) -> None:
        for name in list(self.processes):
            self.kill(name)

    def check_running(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"{name} exited ({process.returncode}):\n{self.log(name)}")

    def log(self, name: str) -> str:
        text = (self.root / f"{name}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-40:])

    # -- clients in a host ---------------------------------------------------------------------

    def client(self, *args: str, host: int = CLIENT_HOST, timeout: float = 60) -> Any:
        """Run the test bed client in a host; the JSON it printed last."""
        done = self.lan.run(
            host, [sys.executable, "-m", "tests.deploy.testbed_client", *args], timeout, cwd=ROOT
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise AssertionError(f"testbed_client {' '.join(args[:3])}: {done.stderr[-3000:]}")
        return json.loads(lines[-1])

    def client_process(self, *args: str, host: int = CLIENT_HOST) -> "subprocess.Popen[str]":
        """Start the test bed client in a host, talking through pipes (JSON lines out)."""
        return self.lan.popen(
            host,
            [sys.executable, "-m", "tests.deploy.testbed_client", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def get_json(self, url: str) -> Any:
        """The JSON at url, as a client host sees it; None when it does not answer."""
        answer = self.client("get", url, "--timeout", "5")
        if answer.get("status") != 200:
            return None
        return json.loads(answer["text"])

    def status(self) -> dict[str, Any]:
        status = self.get_json(f"{self.master}/status")
        return status if isinstance(status, dict) else {}

    def wait_for(
        self, condition: Callable[[dict[str, Any]], bool], what: str, timeout: float = READY
    ) -> dict[str, Any]:
        """Poll the master's status until condition holds; fail naming what did not happen."""
        status: dict[str, Any] = {}

        def holds() -> bool:
            nonlocal status
            self.check_running()
            status = self.status()
            return bool(status) and condition(status)

        wait_until(
            holds, what, timeout, interval=0.2, details=lambda: f"last master status: {status}"
        )
        return status

    def proxy_answers(self) -> bool:
        answer = self.client("get", "http://api.dlweb/date", "--proxy", self.proxy)
        return "status" in answer


def node_states(status: dict[str, Any]) -> dict[str, str]:
    return {node["id"]: node["state"] for node in status.get("nodes", [])}


def all_alive(status: dict[str, Any], count: int = len(NODE_HOSTS)) -> bool:
    states = node_states(status)
    return len(states) == count and set(states.values()) == {"alive"}


def settled(status: dict[str, Any]) -> bool:
    return (
        status["below_target"] == 0
        and status["structures_dirty"] == 0
        and status["structures_diverged"] == 0
        and status["repairs"]["running"] == 0
        and checked(status)
    )


@pytest.fixture(scope="module", name="bed")
def bed_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """The whole cluster on seven hosts, ready: every node joined, the index node and the proxy
    answering."""
    lan = make_lan(HOSTS)
    cluster = Bed(lan, tmp_path_factory.mktemp("testbed"))
    try:
        cluster.write_config()
        cluster.start_master()
        for host in NODE_HOSTS:
            cluster.start_node(host)
        cluster.start_index()
        cluster.start_proxy()
        cluster.wait_for(
            lambda s: all_alive(s) and len(s["index_nodes"]) == 1, "the nodes and index to join"
        )

        def proxy_answers() -> bool:
            if cluster.proxy_answers():
                return True
            cluster.check_running()
            return False

        wait_until(
            proxy_answers,
            "the proxy to answer",
            READY,
            interval=0.2,
            details=lambda: cluster.log("proxy"),
        )
        yield cluster
    finally:
        cluster.stop()
        down(lan.prefix)
