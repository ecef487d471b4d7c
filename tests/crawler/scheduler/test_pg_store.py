"""The scheduler's store on PostgreSQL beyond what test_store.py runs on both engines: a database
it must refuse at start (nothing written), a server lost while running and brought back, and the
scheduler itself started with --db."""

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from archive.errors import DlwebError
from archive.metadata import cluster_id
from archive.pg import DatabaseUnavailable, PgDatabase, migrate
from crawler.scheduler.pg_store import PgStore
from deploy.testing.cluster import write_cluster_config
from deploy.testing.ports import free_port
from deploy.testing.postgres import PostgresServer
from deploy.testing.waits import answers, wait_until

CLUSTER = cluster_id("test", b"k" * 32)


def contents(postgres: PostgresServer, url: str) -> str:
    """Every table's rows, to compare before and after a refusal."""
    database = url.rsplit("/", 1)[1]
    tables = postgres.sql(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", database
    ).split()
    return "".join(postgres.sql(f"SELECT * FROM {table} ORDER BY 1", database) for table in tables)


def test_another_clusters_or_a_newer_or_a_foreign_database_is_refused_at_start(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with PgStore(postgres_url, CLUSTER) as store:
        store.add_site("http://a.example/", "")
    before = contents(postgres, postgres_url)
    other = cluster_id("prod", b"p" * 32)
    with pytest.raises(DlwebError, match=r"belongs to another cluster \('test'.*not to this one"):
        PgStore(postgres_url, other)
    database = postgres_url.rsplit("/", 1)[1]
    postgres.sql("UPDATE dlweb_meta SET value = '5' WHERE key = 'schema_version'", database)
    with pytest.raises(DlwebError, match="has schema version 5, newer than this dlweb knows"):
        PgStore(postgres_url, CLUSTER)
    assert contents(postgres, postgres_url) == before.replace(
        "schema_version|4", "schema_version|5"
    )
    master = postgres.create_database()
    with PgDatabase(master) as db:
        migrate(db, "master", ("CREATE TABLE files (name TEXT)",), CLUSTER)
    with pytest.raises(DlwebError, match="holds the metadata of dlweb's master, not of its"):
        PgStore(master, CLUSTER)


def test_a_lost_server_refuses_writes_and_the_store_resumes_when_it_is_back(
    postgres: PostgresServer, postgres_url: str
) -> None:
    store = PgStore(postgres_url, CLUSTER)
    first = store.add_site("http://a.example/", "")
    try:
        postgres.kill()
        with pytest.raises(DatabaseUnavailable, match="lost the connection to PostgreSQL") as lost:
            store.add_site("http://b.example/", "")
        assert lost.value.status == 503
        with pytest.raises(DatabaseUnavailable, match="no PostgreSQL server answers"):
            store.site(first.id)
    finally:
        postgres.start()
    # A site written while the store was away (as a commit whose answer was lost would be): the
    # store reads its memory's state again when it connects.
    postgres.sql(
        "INSERT INTO sites (start_url, accept, reject, max_depth, state, priority, seed, source,"
        " next_crawl, interval, created) VALUES ('http://c.example/', '//c.example', '', 5,"
        " 'queued', 9, 0, 'operator', 0, 86400, 0)",
        postgres_url.rsplit("/", 1)[1],
    )
    second = store.add_site("http://b.example/", "")
    found = store.find_site_for("http://c.example/page")
    assert found is not None and found.priority == 9
    assert [site.start_url for site in store.next_sites(1.0, 10)] == [
        "http://c.example/",
        "http://a.example/",
        "http://b.example/",
    ]
    assert store.counts()["sites"] == 3 and second.id != first.id
    store.close()


def test_the_scheduler_keeps_its_campaign_in_the_database_db_names(
    tmp_path: Path, postgres: PostgresServer, postgres_url: str
) -> None:
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    data = tmp_path / "scheduler"
    url = f"http://127.0.0.1:{free_port()}"

    def start() -> subprocess.Popen[bytes]:
        with open(tmp_path / "scheduler.log", "ab") as log:
            command = [sys.executable, "-m", "crawler.scheduler", "--data", str(data)]
            command += ["--listen", url[7:], "--db", postgres_url, "-c", str(config)]
            return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def sites() -> list[str]:
        with urllib.request.urlopen(f"{url}/api/sites", timeout=10) as answer:
            return [site["start_url"] for site in json.loads(answer.read())["sites"]]

    scheduler = start()
    try:
        wait_until(lambda: answers(f"{url}/api/status"), "the scheduler to answer")
        added = subprocess.run(
            [sys.executable, "-m", "dlweb", "sites", "add", "http://a.example/"]
            + ["--scheduler", url, "-c", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stderr
        scheduler.terminate()
        scheduler.wait(timeout=30)
        assert not (data / "campaign.sqlite").exists()
        database = postgres_url.rsplit("/", 1)[1]
        assert postgres.sql("SELECT start_url FROM sites", database) == "http://a.example/\n"
        scheduler = start()
        wait_until(lambda: answers(f"{url}/api/status"), "the scheduler to answer again")
        assert sites() == ["http://a.example/"]
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=30)


@pytest.mark.parametrize(
    ("db", "message"),
    [
        ("mysql://u@h/campaign", "--db 'mysql://u@h/campaign': the engine 'mysql' is not one of"),
        ("postgresql://u@127.0.0.1:1/campaign", "no PostgreSQL server answers: Connection refused"),
    ],
)
def test_a_bad_or_unreachable_db_is_one_line_at_start(
    tmp_path: Path, db: str, message: str
) -> None:
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    done = subprocess.run(
        [sys.executable, "-m", "crawler.scheduler", "--data", str(tmp_path / "s")]
        + ["--listen", f"127.0.0.1:{free_port()}", "--db", db, "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
