"""The totals `status` shows (files and bytes by kind and by node) are kept in the transaction of
each change they count: exact through every way files come and go, across a kill -9 of the
master, and checked against a full count by `dlweb admin fsck --recount`."""

import asyncio
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from archive.errors import DlwebError
from archive.sql import wal_bytes
from deploy.testing.cluster import alive, write_cluster_config
from deploy.testing.ports import free_port
from master.db import FileRef, MasterDB
from master.schema import SCHEMA, STEPS

from .conftest import make_corpus
from .test_cluster import insert, node_state


def name(i: int) -> str:
    return f"{i:064x}"


def target(kind: str, size: int, refs: int) -> int:
    return 2


def test_the_totals_agree_with_a_full_count_after_every_change(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    rng = random.Random(47)
    nodes = ["a", "b", "c"]
    sizes: dict[str, int] = {}
    for step in range(300):
        node = rng.choice(nodes)
        picked = [name(rng.randrange(60)) for _ in range(rng.randrange(1, 8))]
        action = rng.randrange(6)
        if action <= 1:  # a node's inventory: adds, some with a size not heard before
            for file in picked:
                sizes[file] = sizes.get(file, rng.randrange(1, 10_000))
                if rng.random() < 0.05:
                    sizes[file] += 1
            entries = [
                {
                    "op": rng.choice(["add", "add", "remove"]),
                    "kind": "content",
                    "name": file,
                    "size": sizes[file],
                }
                for file in picked
            ]
            db.apply_inventory(node, entries, step, target)
        elif action == 2:  # copies the master made itself
            known = [file for file in picked if file in sizes]
            db.add_locations(
                node, [FileRef("content", file, sizes[file]) for file in known], target
            )
        elif action == 3:
            db.remove_locations(node, [("content", file) for file in picked])
        elif action == 4:
            db.apply_inventory(
                node,
                [{"op": "add", "kind": "structure", "name": name(1000 + step), "size": 7}],
                step,
                target,
            )
        elif rng.random() < 0.1:  # the node is lost
            db.forget_locations(node)
        assert db.recount(mend=False) == {}, f"step {step}"
    assert sum(files for files, _ in db.node_totals().values()) > 0
    db.close()


def test_a_recount_finds_and_mends_totals_that_drifted(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    db.apply_inventory(
        "a", [{"op": "add", "kind": "content", "name": name(1), "size": 10}], 1, target
    )
    db.db.execute("UPDATE node_totals SET files = 5")
    db.db.execute("UPDATE kind_totals SET bytes = 0")
    drift = db.recount(mend=True)
    assert drift == {
        "kinds": {"content": {"kept": [1, 0], "counted": [1, 10]}},
        "nodes": {"a": {"kept": [5, 10], "counted": [1, 10]}},
    }
    assert db.recount(mend=False) == {}
    assert db.node_totals() == {"a": (1, 10)}
    db.close()


def test_a_database_from_before_the_totals_gets_them_counted_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    old = sqlite3.connect(path)
    old.executescript(SCHEMA)
    old.executemany(
        "INSERT INTO files (kind, name, size, target) VALUES (?, ?, ?, 2)",
        [("content", name(1), 10), ("content", name(2), 5), ("structure", name(3), 3)],
    )
    old.executemany(
        "INSERT INTO locations (kind, name, node) VALUES (?, ?, ?)",
        [("content", name(1), "a"), ("content", name(2), "a"), ("content", name(1), "b")],
    )
    old.commit()
    old.close()
    db = MasterDB(path)
    assert db.file_counts() == {"content": 2, "structure": 1}
    assert db.node_totals() == {"a": (2, 15), "b": (1, 10)}
    assert db.db.execute("PRAGMA user_version").fetchone()[0] == len(STEPS)
    db.close()


def test_a_database_of_a_newer_schema_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "master.db"
    MasterDB(path).close()
    newer = sqlite3.connect(path)
    newer.execute("PRAGMA user_version = 99")
    newer.close()
    before = path.read_bytes()
    with pytest.raises(DlwebError, match="schema version 99, newer than this dlweb knows"):
        MasterDB(path)
    assert path.read_bytes() == before
    # The master says so in one line at start, and exits.
    write_cluster_config(tmp_path / "dlweb.yaml")
    listen = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "master",
            "--data",
            str(tmp_path),
            "--listen",
            listen,
            "-c",
            str(tmp_path / "dlweb.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "schema version 99" in done.stderr and "Traceback" not in done.stderr


def test_the_write_ahead_log_is_cut_back_once_checkpointed(tmp_path: Path) -> None:
    db = MasterDB(tmp_path / "m.db")
    db.db.execute("PRAGMA journal_size_limit = 65536")
    entries = [{"op": "add", "kind": "content", "name": name(i), "size": i} for i in range(20_000)]
    db.apply_inventory("a", entries, 1, target)
    grown = wal_bytes(tmp_path / "m.db")
    assert grown > 1_000_000
    db.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    db.set_meta("after", 1)  # the next write starts the log again, cut to the limit
    assert wal_bytes(tmp_path / "m.db") <= 65536
    assert db.storage()["wal_bytes"] == wal_bytes(tmp_path / "m.db")
    db.close()


async def test_status_totals_stay_exact_through_a_master_killed_amid_inserts_and_repairs(
    cluster_factory, metadata
) -> None:
    cluster = cluster_factory(nodes=3, replicas=2, grace=1.0, metadata=metadata)
    first, second = make_corpus(300, urls=100, seed=1), make_corpus(300, urls=100, seed=2)
    await insert(cluster, first)
    cluster.wait_settled(len(first.bodies))
    assert cluster.get("/admin/fsck?recount=1", token=True)["totals_drift"] == {}

    # The master is killed as the inventories of a second insert's files reach it (the client
    # waits for a master that is away). It comes back copying slowly, for the next step.
    inserting = asyncio.ensure_future(insert(cluster, second))
    await asyncio.to_thread(
        cluster.wait_for,
        lambda s: s["files"]["content"] > len(first.bodies),
        "the second insert's first files",
    )
    assert cluster.master is not None
    cluster.master.stop(signal.SIGKILL)
    cluster.start_master("--repair-rate", "40")
    await inserting
    contents = len(first.bodies | second.bodies)
    cluster.wait_settled(contents)
    assert cluster.get("/admin/fsck?recount=1", token=True)["totals_drift"] == {}

    # A node is lost, and the master is killed while its files are being copied again.
    cluster.kill_node("node3")
    cluster.wait_for(lambda s: node_state(s, "node3") == "down", "node3 to be marked down")
    midway = cluster.wait_for(lambda s: s["repairs"]["copied"] > 0, "the repairs to begin")
    assert midway["below_target"] > 0
    cluster.master.stop(signal.SIGKILL)
    cluster.start_master()
    cluster.wait_for(lambda s: alive(s) == 2, "the nodes to join the new master")
    status = cluster.wait_settled(contents)
    report = cluster.get("/admin/fsck?recount=1", token=True)
    assert report["totals_drift"] == {}
    held = {n["id"]: n["files"] for n in status["nodes"]}
    assert held["node1"] + held["node2"] >= 2 * contents
    assert status["metadata"]["database_bytes"] > 0


async def test_a_recount_needs_the_cluster_token(cluster_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with pytest.raises(Exception, match="401"):
        cluster.get("/admin/fsck?recount=1")
    assert cluster.get("/admin/fsck")["totals_drift"] is None
