"""`dlweb up`, `dlweb down`, `dlweb status` and `dlweb admin` as an admin types them."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive.cluster import ClusterClient
from archive.config import load_config
from tests.master.conftest import make_corpus


def dlweb(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "archive", *args], capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def pids(data: Path) -> list[int]:
    state = json.loads((data / "cluster.json").read_text())
    return [p["pid"] for p in state["processes"].values() if p["pid"]]


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except OSError:
        return False


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    yield directory
    if (directory / "cluster.json").exists():
        dlweb("down", "--data", str(directory), check=False)


async def test_up_down_and_up_again_keeps_the_data(data: Path) -> None:
    started = dlweb("up", "--data", str(data), "--nodes", "3", "--grace", "2")
    assert "cluster ready" in started.stdout
    config = str(data / "dlweb.yaml")
    status = json.loads(dlweb("status", "-c", config, "--json").stdout)
    assert sorted(n["id"] for n in status["nodes"]) == ["node1", "node2", "node3"]
    assert all(n["state"] == "alive" for n in status["nodes"])
    first = pids(data)
    assert len(first) == 5 and all(map(running, first))

    again = dlweb("up", "--data", str(data))
    assert "already running" in again.stdout
    assert pids(data) == first

    corpus = make_corpus(20, urls=5)
    async with ClusterClient(load_config(data / "dlweb.yaml")) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)

    stopped = dlweb("down", "--data", str(data))
    assert "stopped" in stopped.stdout
    assert not any(map(running, first))

    dlweb("up", "--data", str(data))
    status = json.loads(dlweb("status", "-c", config, "--json").stdout)
    assert status["files"]["content"] == len(corpus.bodies)
    async with ClusterClient(load_config(data / "dlweb.yaml")) as client:
        capture = corpus.captures[3]
        found = await client.closest(capture.url, capture.time, mode="exact")
        assert await client.get_content(found.capture.content) == corpus.bodies[capture.content]


def test_admin_commands_against_a_running_cluster(data: Path) -> None:
    dlweb("up", "--data", str(data), "--nodes", "2", "--replicas", "1")
    config = str(data / "dlweb.yaml")
    table = dlweb("admin", "nodes", "-c", config).stdout
    assert "node1" in table and "node2" in table and "alive" in table
    assert "now draining" in dlweb("admin", "drain", "node2", "-c", config).stdout
    nodes = json.loads(dlweb("admin", "nodes", "-c", config, "--json").stdout)
    assert {n["id"]: n["state"] for n in nodes}["node2"] == "draining"
    dlweb("admin", "undrain", "node2", "-c", config)
    fsck = dlweb("admin", "fsck", "-c", config)
    assert fsck.stdout.strip().endswith("ok")
    plan = dlweb("admin", "rebalance", "-c", config).stdout
    assert "nothing moved" in plan
    assert "node1: started" in dlweb("admin", "scrub", "node1", "-c", config).stdout
    unknown = dlweb("admin", "drain", "node9", "-c", config, check=False)
    assert unknown.returncode == 2 and "no node 'node9'" in unknown.stderr

    dlweb("down", "--data", str(data))
    gone = dlweb("status", "-c", config, check=False)
    assert gone.returncode == 2
    assert "does not answer" in gone.stderr and "Traceback" not in gone.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "-1"], "must be a whole number from 1 to 64"),
        (["--nodes", "2", "--replicas", "3"], "--replicas 3 is more than --nodes 2"),
        (["--port-base", "80"], "must be a port from 1024 to 65000"),
    ],
)
def test_bad_arguments_get_one_line_errors(data: Path, args: list[str], message: str) -> None:
    result = dlweb("up", "--data", str(data), *args, check=False)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_data_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("")
    result = dlweb("up", "--data", str(path), check=False)
    assert result.returncode == 2
    assert "exists and is not a directory" in result.stderr
    assert os.path.getsize(path) == 0
