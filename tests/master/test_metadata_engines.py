"""The master on either engine of its metadata, and the move from one to the other: a running
master's SQLite metadata copied into PostgreSQL while captures are inserted loses none of them
once the master is started again on the copy; a database of another cluster, or one that cannot
be reached, is refused at start with one line and nothing written."""

import asyncio
import json
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from archive.cluster import ClusterError
from deploy.testing.cluster import Cluster, alive, settled, write_cluster_config
from deploy.testing.postgres import PostgresServer
from master.db import MasterDB
from tests.deploy.run_dlweb import dlweb
from tests.small_disk import MIB, fill, small_disk, unfill

from .conftest import make_corpus
from .test_cluster import check_readable, insert


def start_master(config: Path, data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`python -m master` that is expected to refuse to start."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "master",
            "--data",
            str(data),
            "--listen",
            "127.0.0.1:1",
            "-c",
            str(config),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def migrate(cluster: Cluster, url: str) -> subprocess.CompletedProcess[str]:
    """`dlweb admin migrate-metadata` from the cluster's SQLite master to `url`."""
    database = str(cluster.root / "master" / "master.db")
    config = str(cluster.config_path)
    return dlweb(
        "admin", "migrate-metadata", "--from", database, "--to", url, "-c", config, check=False
    )


async def test_a_migration_to_postgresql_under_load_loses_no_capture(
    cluster_factory, postgres_url: str
) -> None:
    cluster: Cluster = cluster_factory(nodes=3, replicas=2)
    before, during, after = (make_corpus(60, urls=20, seed=seed) for seed in (1, 2, 3))
    await insert(cluster, before)
    cluster.wait_settled(len(before.bodies))

    # Captures go on arriving while the metadata is copied, and after the copy.
    inserting = asyncio.ensure_future(insert(cluster, during))
    migrated = await asyncio.to_thread(migrate, cluster, postgres_url)
    assert migrated.returncode == 0 and "copied and checked" in migrated.stdout
    await inserting
    await insert(cluster, after)

    # The master is started again on the copy: the nodes send what came after it.
    assert cluster.master is not None
    cluster.master.stop()
    cluster.start_master("--db", postgres_url)
    cluster.wait_for(lambda s: alive(s) == 3, "the nodes to join the master on PostgreSQL")
    contents = len(before.bodies | during.bodies | after.bodies)
    status = cluster.wait_for(
        lambda s: s["files"]["content"] >= contents and settled(s), "every capture placed"
    )
    assert status["files"]["content"] == contents
    for corpus in (before, during, after):
        await check_readable(cluster, corpus)
    assert cluster.get("/admin/fsck?recount=1", token=True)["totals_drift"] == {}
    # Into a database that holds files already, nothing is copied.
    again = migrate(cluster, postgres_url)
    assert again.returncode != 0 and "holds files already" in again.stderr


def test_a_database_of_another_cluster_is_refused_on_either_engine(
    tmp_path: Path, metadata: Path | str
) -> None:
    theirs = MasterDB(metadata, "theirs/0123456789abcdef")
    theirs.close()
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    where = metadata if isinstance(metadata, str) else str(metadata)
    done = start_master(config, tmp_path / "data", "--db", where)
    assert done.returncode == 2, done.stderr
    assert "belongs to another cluster ('theirs'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_or_unknown_database_is_refused_with_one_line(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    for url, said in (
        ("postgresql://dlweb@127.0.0.1:1/nowhere", "no PostgreSQL server answers"),
        (postgres.url("no_such_database"), "does not exist"),
        ("mysql://host/db", "the engine 'mysql' is not one of"),
    ):
        done = start_master(config, tmp_path / "data", "--db", url)
        assert done.returncode == 2, done.stderr
        assert said in done.stderr and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "data" / "master.db").exists()


async def test_a_master_whose_postgresql_is_away_refuses_then_resumes(
    cluster_factory, postgres: PostgresServer, postgres_url: str
) -> None:
    cluster: Cluster = cluster_factory(nodes=2, replicas=2, metadata=postgres_url)
    first, away, back = (make_corpus(20, urls=5, seed=seed) for seed in (1, 2, 3))
    await insert(cluster, first)
    cluster.wait_settled(len(first.bodies))

    postgres.kill()
    with pytest.raises(urllib.error.HTTPError) as refused:
        cluster.status()
    assert refused.value.code == 503
    assert "PostgreSQL" in json.loads(refused.value.read())["error"]
    with pytest.raises(ClusterError) as not_taken:
        await insert(cluster, away)
    assert "no PostgreSQL server answers" in str(not_taken.value)

    postgres.start()
    cluster.wait_settled(len(first.bodies))
    await insert(cluster, back)
    cluster.wait_settled(len(first.bodies | back.bodies))
    await check_readable(cluster, first)
    await check_readable(cluster, back)
    assert cluster.get("/admin/fsck?recount=1", token=True)["totals_drift"] == {}


def test_a_full_disk_under_the_database_is_refused_with_one_line_and_nothing_left(
    tmp_path: Path,
) -> None:
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    with small_disk(tmp_path / "disk", 4 * MIB) as disk:
        (disk / "master").mkdir()
        fill(disk, 0)
        done = start_master(config, disk / "master")
        assert done.returncode == 2, done.stderr
        assert "master.db: its disk is full" in done.stderr and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert list((disk / "master").iterdir()) == []
        # With room again, the same master starts on the same folder.
        unfill(disk)
        MasterDB(disk / "master" / "master.db").close()
