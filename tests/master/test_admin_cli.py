"""`dlweb status` and `dlweb admin ...` against a real cluster started with `dlweb up`."""

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from archive.cluster import ClusterClient
from archive.config import load_config, write_new_config
from deploy.testing.cluster import checked
from deploy.testing.ports import free_port
from deploy.testing.waits import wait_until
from tests.deploy.run_dlweb import dlweb, dlweb_json, one_line_error, running
from tests.master.conftest import make_corpus


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running two-node cluster shared by the tests that leave it as they found it."""
    data = tmp_path_factory.mktemp("admin") / "cluster"
    dlweb("up", "--data", str(data), "--proxy-port", "0", "--nodes", "2", "--replicas", "1")
    yield str(data / "dlweb.yaml")
    dlweb("down", "--data", str(data), check=False)


def states(config: str) -> dict[str, str]:
    return {n["id"]: n["state"] for n in dlweb_json("admin", "nodes", "-c", config)}


def test_nodes_lists_every_node(config: str) -> None:
    table = dlweb("admin", "nodes", "-c", config).stdout.splitlines()
    assert table[0].split() == ["node", "address", "state", "domain", "free", "files", "held"]
    assert [line.split()[0] for line in table[1:]] == ["node1", "node2"]
    assert all(" alive " in line and "http://127.0.0.1:" in line for line in table[1:])
    nodes = dlweb_json("admin", "nodes", "-c", config)
    assert {n["id"] for n in nodes} == {"node1", "node2"}
    assert all(n["address"].startswith("http://127.0.0.1:") for n in nodes)


def test_status_summarises_the_cluster(config: str) -> None:
    text = dlweb("status", "-c", config).stdout
    assert "below replica target: 0" in text and "repairs: 0 running" in text
    assert "rebalance:" in text and "index nodes: ws://" in text
    assert "node1" in text and "node2" in text
    status = dlweb_json("status", "-c", config)
    assert {"nodes", "files", "below_target", "repairs", "rebalance"} <= set(status)


def test_drain_undrain_and_read_only_change_the_state(config: str) -> None:
    assert "node node2 is now draining" in dlweb("admin", "drain", "node2", "-c", config).stdout
    assert states(config) == {"node1": "alive", "node2": "draining"}
    assert "draining (empty)" in dlweb("admin", "nodes", "-c", config).stdout
    dlweb("admin", "undrain", "node2", "-c", config)
    assert states(config) == {"node1": "alive", "node2": "alive"}
    answer = dlweb_json("admin", "read-only", "node1", "-c", config)
    assert answer["state"] == "read-only"
    assert states(config) == {"node1": "read-only", "node2": "alive"}
    dlweb("admin", "undrain", "node1", "-c", config)
    assert states(config) == {"node1": "alive", "node2": "alive"}


def test_fsck_on_an_empty_cluster_is_ok(config: str) -> None:
    fsck = dlweb("admin", "fsck", "-c", config)
    assert "below replica target: 0" in fsck.stdout
    assert fsck.stdout.strip().endswith("ok")
    report = dlweb_json("admin", "fsck", "-c", config)
    assert report["ok"] is True and report["problems"] == []


def test_rebalance_shows_the_plan_and_applies_it(config: str) -> None:
    plan = dlweb("admin", "rebalance", "-c", config).stdout
    assert plan.startswith("plan: move 0 files") and "not applied" in plan
    assert dlweb_json("admin", "rebalance", "-c", config)["plan"]["moves"] == []
    applied = dlweb("admin", "rebalance", "--apply", "--files-per-s", "50", "-c", config)
    assert "nothing to move" in applied.stdout
    stopped = dlweb_json("admin", "rebalance", "--stop", "-c", config)
    assert "progress" in stopped
    both = dlweb("admin", "rebalance", "--apply", "--stop", "-c", config, check=False)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_scrub_one_node_or_all(config: str) -> None:
    assert dlweb("admin", "scrub", "node1", "-c", config).stdout.strip() == "node1: started"
    every = dlweb_json("admin", "scrub", "-c", config)
    assert set(every["scrub"]) == {"node1", "node2"}


def test_an_unknown_node_gets_the_masters_error(config: str) -> None:
    for command in (["drain", "node9"], ["scrub", "node9"], ["read-only", "no/such"]):
        line = one_line_error(dlweb("admin", *command, "-c", config, check=False))
        assert "refused" in line and "no node" in line


def test_a_wrong_token_is_refused(config: str, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    write_new_config(other, extra={"master": load_config(Path(config)).master})
    line = one_line_error(dlweb("admin", "drain", "node1", "-c", str(other), check=False))
    assert "wrong cluster token" in line
    assert states(config)["node1"] == "alive"


def test_a_configuration_without_master_or_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    write_new_config(path, extra={"discovery": False})
    line = one_line_error(dlweb("admin", "nodes", "-c", str(path), check=False))
    assert "no master URL" in line and "give the key `master" in line
    missing = str(tmp_path / "missing.yaml")
    line = one_line_error(dlweb("status", "-c", missing, check=False))
    assert "not found" in line


def test_a_master_that_does_not_answer(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    write_new_config(path, extra={"master": f"http://127.0.0.1:{free_port()}"})
    for command in (["status"], ["admin", "fsck"], ["admin", "undrain", "node1"]):
        line = one_line_error(dlweb(*command, "-c", str(path), check=False))
        assert "does not answer" in line


def _fsck(config: str) -> Any:
    """The fsck report (the command exits 1 when it finds problems)."""
    return json.loads(dlweb("admin", "fsck", "-c", config, "--json", check=False).stdout)


async def test_fsck_finds_lost_contents_and_a_stopped_master(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    config = str(data / "dlweb.yaml")
    dlweb(
        "up",
        "--data",
        str(data),
        "--proxy-port",
        "0",
        "--nodes",
        "2",
        "--replicas",
        "1",
        "--grace",
        "1",
    )
    try:
        corpus = make_corpus(12, urls=3)
        async with ClusterClient(load_config(Path(config))) as client:
            await client.insert(corpus.captures, corpus.bodies.__getitem__)
        wait_until(lambda: bool(_fsck(config)["ok"]), "the inserted files to be at target")
        nodes = dlweb_json("admin", "nodes", "-c", config)
        fullest = max(nodes, key=lambda n: n["files"])["id"]
        pid = int((data / "run" / f"{fullest}.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not running(pid), f"{fullest} to be gone")
        # Once the node is down its copies no longer count, and the repair pass looks at them.
        wait_until(
            lambda: (
                states(config)[fullest] == "down"
                and (answer := _fsck(config))["lost"] > 0
                and checked(answer)
            ),
            "fsck to see the lost contents",
        )

        fsck = dlweb("admin", "fsck", "-c", config, check=False)
        assert fsck.returncode == 1, fsck.stderr
        assert "PROBLEMS FOUND" in fsck.stdout and "first problems" in fsck.stdout
        assert "content " in fsck.stdout and "0 of 1 replicas" in fsck.stdout
        assert dlweb("admin", "fsck", "-c", config, "--json", check=False).returncode == 1
        assert states(config)[fullest] == "down"
    finally:
        dlweb("down", "--data", str(data))
    line = one_line_error(dlweb("status", "-c", config, check=False))
    assert "does not answer" in line
    assert yaml.safe_load(Path(config).read_text())["master"] in line


def test_counts_below_target_say_what_the_repair_pass_has_yet_to_look_at() -> None:
    from master.admin_cli import _below_target

    causes = {"repairing": 0, "cannot_place": 0, "no_readable_copy": 0}
    looking = {"to_check": 3, "nodes_to_check": 1, "full_scan_at": ["content", "ab"]}
    lines = _below_target({"below_target": 0, "below_target_causes": causes, "repairs": looking})
    assert lines == [
        "below replica target: 0",
        "  (as last looked at; still to look at: 3 files, the files of 1 node, a full scan)",
    ]
    done = {"to_check": 0, "nodes_to_check": 0, "full_scan_at": None}
    answer = {"below_target": 0, "below_target_causes": causes, "repairs": done}
    assert _below_target(answer) == ["below replica target: 0"]
