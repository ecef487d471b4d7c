"""Fixtures that start real dlweb processes on loopback and wait until they answer."""

import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from archive.config import ClusterConfig, load_config

if TYPE_CHECKING:
    from tests.postgres import PostgresServer
    from tests.stream_recording import Recorded

READY_TIMEOUT = 20.0


def answers(url: str) -> bool:
    """Whether an HTTP server answers 200 at `url` now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll a condition with a deadline; fail naming what did not happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"storage node exited early:\n{self.log()}")
            if answers(f"{self.url}/status"):
                return
            time.sleep(0.02)
        raise RuntimeError(f"storage node not ready after {READY_TIMEOUT}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        # A node syncs its state before it exits; a shared disk can take long to.
        code = self.process.wait(timeout=60)
        self.process = None
        return code


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[Path, ClusterConfig]:
    path = tmp_path / "dlweb.yaml"
    return path, write_cluster_config(path)


@pytest.fixture
def node_factory(tmp_path: Path, cluster: tuple[Path, ClusterConfig]) -> Iterator[object]:
    started: list[NodeProcess] = []

    def make(name: str = "n1", config_path: Path | None = None, *args: str) -> NodeProcess:
        node = NodeProcess(
            tmp_path / name,
            config_path or cluster[0],
            free_port(),
            tmp_path / f"{name}.log",
            extra_args=list(args),
        )
        started.append(node)
        return node.start()

    yield make
    for node in started:
        if node.process is not None:
            node.stop()


# The longest groups (1.5 to 4 minutes each on a loaded 2-core machine), started first under xdist
# (with --no-loadscope-reorder, which keeps this order): a long group left for the end would keep
# one worker busy while the others wait.
LONG_GROUPS = (
    "tests/crawler/scheduler/test_campaign.py",
    "tests/crawler/test_crawl.py",
    "tests/proxy/test_proxy.py",
    "tests/archive/warc/test_export.py",
    "tests/archive/warc/test_import.py",
    "stream_recording",
    "tests/master/test_cluster.py",
    "tests/crawler/test_browser_crawl.py",
    "tests/test_soak.py",
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's `--dist loadgroup` (pyproject.toml runs the tests on several
    workers): a test marked `xdist_group` keeps its group; one that reads `stream_recording` goes
    with the others that do, so that a single worker records the streams, once; any other test
    goes with the rest of its module, whose module fixtures (a cluster, a test web) then start
    once, on one worker, as they do without xdist."""
    groups: dict[pytest.Item, str] = {}
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker:
            groups[item] = str(marker.args[0] if marker.args else marker.kwargs.get("name"))
            continue
        if "stream_recording" in getattr(item, "fixturenames", ()):
            groups[item] = "stream_recording"
        else:
            groups[item] = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(groups[item]))
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike
        last = len(LONG_GROUPS)
        items.sort(key=lambda i: LONG_GROUPS.index(groups[i]) if groups[i] in LONG_GROUPS else last)


@pytest.fixture(scope="session")
def stream_recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator["Recorded"]:
    """Live streams recorded for a minute (tests/stream_recording.py), for every test that
    reads them back."""
    from tests.stream_recording import record_streams

    with record_streams(tmp_path_factory.mktemp("streams")) as recorded:
        yield recorded


@pytest.fixture(scope="session")
def postgres() -> Iterator["PostgresServer"]:
    """This worker's PostgreSQL server (tests/postgres.py), started at its first use and removed
    at the end of the session."""
    from tests.postgres import PostgresServer

    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.remove()


@pytest.fixture
def postgres_url(postgres: "PostgresServer") -> str:
    """A new empty database on this worker's server; its URL. The server is started again if an
    earlier test left it stopped."""
    return postgres.start().create_database()
