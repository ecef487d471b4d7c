"""`dlweb up` and `dlweb down` with real processes, as an admin types them."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from archive.cluster import ClusterClient
from archive.config import load_config, write_new_config
from archive.timestamps import format_digits
from deploy.launcher import write_config
from deploy.testing.ports import free_block
from deploy.testing.waits import wait_until
from tests.deploy.run_dlweb import (
    dlweb,
    dlweb_json,
    one_line_error,
    processes_naming,
    recorded_pids,
    running,
)
from tests.master.conftest import make_corpus

ALL = ["master", "index", "node1", "node2", "node3", "proxy"]


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    yield directory
    if directory.is_dir():
        dlweb("down", "--data", str(directory), check=False)


def pid_files(data: Path) -> list[str]:
    return sorted(path.stem for path in (data / "run").glob("*.pid"))


async def test_up_down_and_up_again_keeps_the_data(data: Path) -> None:
    started = dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "3", "--grace", "2")
    assert "cluster ready" in started.stdout
    config = str(data / "dlweb.yaml")
    status = dlweb_json("status", "-c", config)
    assert sorted(n["id"] for n in status["nodes"]) == ["node1", "node2", "node3"]
    assert all(n["state"] == "alive" for n in status["nodes"])
    first = recorded_pids(data)
    assert sorted(first) == sorted(ALL) and all(map(running, first.values()))
    assert pid_files(data) == sorted(ALL)
    for name, pid in first.items():
        assert (data / "run" / f"{name}.pid").read_text().strip() == str(pid)
        assert (data / "logs" / f"{name}.log").exists()
    secret = load_config(data / "dlweb.yaml").secret
    proxy = load_config(data / "dlweb.yaml").proxy
    assert proxy is not None and proxy in started.stdout
    browser = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    with browser.open("http://api.dlweb/date", timeout=10) as answer:
        setting = json.load(answer)
    assert setting.pop("token") and setting == {
        "date": None,
        "live": False,
        "record": False,
        "banner": False,
    }

    again = dlweb("up", "--data", str(data), "--proxy-port", "0")
    assert "already running" in again.stdout
    assert recorded_pids(data) == first

    corpus = make_corpus(20, urls=5)
    async with ClusterClient(load_config(data / "dlweb.yaml")) as client:
        await client.insert(corpus.captures, corpus.bodies.__getitem__)
    # Without a proxy, a capture is at its archival URL on the direct front.
    direct = re.search(r"open (http://\S+/web)/2019/", started.stdout)
    assert direct is not None, started.stdout
    shown = corpus.captures[3]
    memento = f"{direct.group(1)}/{format_digits(shown.time)}id_/{shown.url}"
    with urllib.request.urlopen(memento, timeout=10) as answer:
        assert answer.read() == corpus.bodies[shown.content]

    stopped = dlweb("down", "--data", str(data))
    assert "stopped" in stopped.stdout
    assert not any(map(running, first.values()))
    assert pid_files(data) == [] and recorded_pids(data) == {}
    assert "nothing was running" in dlweb("down", "--data", str(data)).stdout

    dlweb("up", "--data", str(data), "--proxy-port", "0")
    assert load_config(data / "dlweb.yaml").secret == secret
    assert load_config(data / "dlweb.yaml").proxy == proxy  # the same port again
    with urllib.request.urlopen(memento, timeout=10) as answer:  # and the front's
        assert answer.status == 200
    status = dlweb_json("status", "-c", config)
    assert sorted(n["id"] for n in status["nodes"]) == ["node1", "node2", "node3"]
    assert status["files"]["content"] == len(corpus.bodies)
    async with ClusterClient(load_config(data / "dlweb.yaml")) as client:
        capture = corpus.captures[3]
        found = await client.closest(capture.url, capture.time, mode="exact")
        assert await client.get_content(found.capture.content) == corpus.bodies[capture.content]


def test_up_starts_only_what_is_not_running_and_can_add_nodes(data: Path) -> None:
    dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "2", "--replicas", "1")
    first = recorded_pids(data)
    os.kill(first["node2"], signal.SIGKILL)
    wait_until(lambda: not running(first["node2"]), "node2 to be gone")

    restarted = dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "3")
    assert "started node2, node3" in restarted.stdout
    after = recorded_pids(data)
    assert {name: after[name] for name in ("master", "index", "node1")} == {
        name: first[name] for name in ("master", "index", "node1")
    }
    assert after["node2"] != first["node2"] and running(after["node2"])
    nodes = dlweb_json("admin", "nodes", "-c", str(data / "dlweb.yaml"))
    assert sorted(n["id"] for n in nodes) == ["node1", "node2", "node3"]

    # Without --nodes, a later start keeps the three.
    dlweb("down", "--data", str(data))
    dlweb("up", "--data", str(data), "--proxy-port", "0")
    assert sorted(recorded_pids(data)) == sorted(ALL)


def test_a_process_that_cannot_start_stops_the_others(data: Path) -> None:
    base = free_block(5)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base + 3))  # node2's port
        squatter.listen()
        result = dlweb(
            "up", "--data", str(data), "--proxy-port", "0", "--port-base", str(base), check=False
        )
    assert result.returncode == 2
    assert "node2 exited at start" in result.stderr
    assert str(data / "logs" / "node2.log") in result.stderr
    state = json.loads((data / "cluster.json").read_text())
    ports = {name: proc["port"] for name, proc in state["processes"].items()}
    assert ports.pop("proxy") > 0  # --proxy-port 0: a free port, not one of the block
    assert ports == {name: base + i for i, name in enumerate(ALL) if name != "proxy"}
    assert recorded_pids(data) == {} and pid_files(data) == []
    assert processes_naming(data) == []


def test_a_cluster_not_ready_in_time_is_stopped(data: Path) -> None:
    result = dlweb("up", "--data", str(data), "--proxy-port", "0", "--timeout", "0.2", check=False)
    assert result.returncode == 2
    assert "is not ready after 0.2 s" in result.stderr
    assert recorded_pids(data) == {} and pid_files(data) == []
    assert processes_naming(data) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "-1"], "must be a whole number from 1 to 64"),
        (["--nodes", "0"], "must be a whole number from 1 to 64"),
        (["--nodes", "three"], "must be a whole number from 1 to 64"),
        (["--nodes", "2", "--replicas", "3"], "--replicas 3 is more than --nodes 2"),
        (["--port-base", "80"], "must be a port from 1024 to 65000"),
        (["--timeout", "-5"], "must be a positive number"),
        (["--db", "mysql://host/db"], "the engine 'mysql' is not one of"),
    ],
)
def test_bad_arguments_get_one_line_errors(data: Path, args: list[str], message: str) -> None:
    result = dlweb("up", "--data", str(data), "--proxy-port", "0", *args, check=False)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (data / "dlweb.yaml").exists()


def test_a_data_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("")
    for command in ("up", "down"):
        line = one_line_error(dlweb(command, "--data", str(path), check=False))
        assert "exists and is not a directory" in line
    assert os.path.getsize(path) == 0


def test_an_existing_cluster_keeps_its_settings(data: Path) -> None:
    write_config(data / "dlweb.yaml", "127.0.0.1", 18100, replicas=2)
    line = one_line_error(
        dlweb("up", "--data", str(data), "--proxy-port", "0", "--replicas", "3", check=False)
    )
    assert "was created with --replicas 2" in line
    line = one_line_error(
        dlweb("up", "--data", str(data), "--proxy-port", "0", "--host", "127.0.0.2", check=False)
    )
    assert "was created with --host 127.0.0.1" in line
    (data / "cluster.json").write_text(json.dumps({"nodes": 3, "processes": {}}))
    line = one_line_error(
        dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "2", check=False)
    )
    assert "has 3 storage nodes" in line
    assert pid_files(data) == []


def test_a_configuration_without_master_is_refused(data: Path) -> None:
    write_new_config(data / "dlweb.yaml")
    line = one_line_error(dlweb("up", "--data", str(data), "--proxy-port", "0", check=False))
    assert "has no master key" in line


def test_each_new_cluster_gets_its_own_secret_and_multicast(tmp_path: Path) -> None:
    write_config(tmp_path / "a.yaml", "127.0.0.1", 18100, replicas=3)
    write_config(tmp_path / "b.yaml", "127.0.0.1", 18200, replicas=2)
    a, b = load_config(tmp_path / "a.yaml"), load_config(tmp_path / "b.yaml")
    assert a.master == "http://127.0.0.1:18100" and a.replication.default == 3
    assert a.lookup == "both" and a.secret != b.secret
    assert (a.multicast.group_base, a.multicast.port) != (b.multicast.group_base, b.multicast.port)
    raw = yaml.safe_load((tmp_path / "a.yaml").read_text())
    assert raw["replication"] == {"default": 3}
    assert oct((tmp_path / "a.yaml").stat().st_mode & 0o777) == "0o600"


def test_python_m_deploy_runs_up_and_down(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "deploy", "down", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "nothing was running" in result.stdout
    result = subprocess.run(
        [sys.executable, "-m", "deploy", "--data", str(tmp_path), "--nodes", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "usage: python -m deploy up" in result.stderr


def test_up_with_search_runs_an_indexer_for_the_proxys_folder_and_later_starts_keep_it(
    data: Path,
) -> None:
    dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "1", "--search")
    pids = recorded_pids(data)
    assert sorted(pids) == sorted(["master", "index", "node1", "proxy", "search"])
    # The folder the proxy searches by default (search beside its proxy folder) gets an index.
    wait_until(lambda: (data / "search" / "dlweb-search.json").exists(), "the search index")
    dlweb("down", "--data", str(data))
    assert not running(pids["search"])
    dlweb("up", "--data", str(data), "--proxy-port", "0")
    again = recorded_pids(data)
    assert "search" in again and running(again["search"])


def test_up_with_db_keeps_the_masters_metadata_in_postgresql(data: Path, postgres_url: str) -> None:
    dlweb(
        "up",
        "--data",
        str(data),
        "--proxy-port",
        "0",
        "--nodes",
        "1",
        "--replicas",
        "1",
        "--db",
        postgres_url,
    )
    assert load_config(data / "dlweb.yaml").metadata == postgres_url
    assert not (data / "master" / "master.db").exists()
    status = dlweb_json("status", "-c", str(data / "dlweb.yaml"))
    assert [node["state"] for node in status["nodes"]] == ["alive"]
    assert status["metadata"]["database_bytes"] > 0 and status["metadata"]["wal_bytes"] == 0
    # An existing cluster keeps where its metadata is: moving it is migrate-metadata's work.
    moved = dlweb(
        "up", "--data", str(data), "--proxy-port", "0", "--db", "sqlite:///elsewhere", check=False
    )
    assert moved.returncode != 0 and "use dlweb admin migrate-metadata" in moved.stderr
