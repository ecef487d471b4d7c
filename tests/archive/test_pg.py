"""The metadata stores' PostgreSQL layer on a real server: metadata URLs, one SQL text for both
engines, a clear refusal for each way a database cannot be used (nothing written), versioned
migrations, and a server killed while in use, then brought back."""

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive.errors import ConfigError, DlwebError
from archive.metadata import cluster_id, mark_cluster, parse_metadata_url
from archive.pg import (
    DatabaseError,
    DatabaseUnavailable,
    PgDatabase,
    migrate,
    postgresql_schema,
    pyformat,
)
from archive.sql import migrate as sqlite_migrate
from deploy.testing.ports import free_port
from deploy.testing.postgres import PostgresServer

CLUSTER = cluster_id("test", b"s" * 32)
STEPS = (
    "CREATE TABLE files (name TEXT PRIMARY KEY, size INTEGER NOT NULL) WITHOUT ROWID",
    "ALTER TABLE files ADD COLUMN kind TEXT NOT NULL DEFAULT 'content'",
)
PG_STEPS = tuple(postgresql_schema(step) for step in STEPS)


@pytest.fixture
def db(postgres_url: str) -> Iterator[PgDatabase]:
    with PgDatabase(postgres_url) as opened:
        yield opened


def tables_and_meta(db: PgDatabase) -> tuple[list[str], list[tuple[str, str]]]:
    tables = db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
    ).fetchall()
    meta = []
    if ("dlweb_meta",) in tables:
        meta = db.execute("SELECT key, value FROM dlweb_meta ORDER BY key").fetchall()
    return [row[0] for row in tables], meta


# -- metadata URLs --------------------------------------------------------------------------------


def test_a_metadata_url_names_an_sqlite_file_or_a_postgresql_database() -> None:
    assert parse_metadata_url("data/master.db").path == Path("data/master.db")
    assert parse_metadata_url("sqlite:///var/lib/dlweb/m.db").path == Path("/var/lib/dlweb/m.db")
    url = parse_metadata_url("postgresql://dlweb:s3cret@db.example:5433/meta?sslmode=require")
    assert (url.engine, url.url) == (
        "postgresql",
        "postgresql://dlweb:s3cret@db.example:5433/meta?sslmode=require",
    )
    assert url.shown == "postgresql://dlweb@db.example:5433/meta"  # never the password
    assert parse_metadata_url("postgres://h/db").shown == "postgresql://h/db"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("mysql://u@h/db", "the engine 'mysql' is not one of sqlite, postgresql"),
        ("sqlite://host/db", "an SQLite URL is sqlite:/// followed by the file's path"),
        ("postgresql://u@h:99999/db", "the port must be a number from 1 to 65535"),
        ("postgresql://u@h:x/db", "the port must be a number from 1 to 65535"),
        ("postgresql:///db", "no host"),
        ("postgresql://u@h/", "the path must be the name of one database"),
        ("postgresql://u@h/a/b", "the path must be the name of one database"),
    ],
)
def test_a_bad_metadata_url_is_refused_naming_where_and_why(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_metadata_url(text, "--db")
    message = str(refused.value)
    assert message.startswith(f"--db {text!r}: {reason}") and "\n" not in message


# -- one SQL text for both engines ----------------------------------------------------------------


def test_placeholders_become_psycopg_s_outside_quotes_and_percents_are_doubled() -> None:
    assert pyformat("SELECT a FROM t WHERE b = ? AND c LIKE 'x?%' AND d = ?") == (
        "SELECT a FROM t WHERE b = %s AND c LIKE 'x?%%' AND d = %s"
    )
    assert pyformat("SELECT 'it''s ?', \"q?\" , ?") == "SELECT 'it''s ?', \"q?\" , %s"
    assert pyformat("SELECT ?") is pyformat("SELECT ?")  # translated once per statement


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_same_sql_gives_the_same_rows_on_both_engines(
    engine: str, tmp_path: Path, postgres: PostgresServer
) -> None:
    schema = "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER NOT NULL)"
    rows = [(f"a{n}%", 10 * n) for n in range(5)]
    if engine == "sqlite":
        db: sqlite3.Connection | PgDatabase = sqlite3.connect(tmp_path / "t.db")
        db.execute(schema)
        db.executemany("INSERT INTO t (name, size) VALUES (?, ?)", rows)
    else:
        db = PgDatabase(postgres.start().create_database())
        db.script(postgresql_schema(schema))
        db.executemany("INSERT INTO t (name, size) VALUES (?, ?)", rows)
    try:
        inserted = db.execute(
            "INSERT INTO t (name, size) VALUES (?, ?) RETURNING id", ("b?", 2**40)
        ).fetchone()
        assert inserted == (6,)
        found = db.execute(
            "SELECT name, size FROM t WHERE name LIKE 'a%' AND size >= ? AND name != '?'"
            " ORDER BY id",
            (20,),
        ).fetchall()
        assert found == [("a2%", 20), ("a3%", 30), ("a4%", 40)]
        assert db.execute("SELECT size FROM t WHERE name = ?", ("b?",)).fetchone() == (2**40,)
    finally:
        db.close()


# -- refused at start -----------------------------------------------------------------------------


def test_no_server_on_the_port_is_unavailable_in_one_line(postgres: PostgresServer) -> None:
    url = f"postgresql://dlweb:{postgres.password}@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(DatabaseUnavailable) as refused:
        PgDatabase(url)
    message = str(refused.value)
    assert message.startswith("postgresql://dlweb@127.0.0.1:")
    assert "no PostgreSQL server answers: Connection refused" in message
    assert "\n" not in message and postgres.password not in message
    assert refused.value.status == 503


def test_a_wrong_password_or_user_is_a_refused_login(postgres: PostgresServer) -> None:
    postgres.start()
    for url, user in (
        (postgres.url(password="wrong"), "dlweb"),
        (postgres.url(user="nobody"), "nobody"),
    ):
        with pytest.raises(DatabaseError) as refused:
            PgDatabase(url)
        assert not isinstance(refused.value, DatabaseUnavailable)
        assert str(refused.value).endswith(
            f'PostgreSQL refused the login: password authentication failed for user "{user}"'
        )
        assert postgres.password not in str(refused.value)


def test_a_missing_database_is_named(postgres: PostgresServer) -> None:
    with pytest.raises(DatabaseError) as refused:
        PgDatabase(postgres.start().url("nosuch"))
    assert str(refused.value) == (
        f"postgresql://dlweb@127.0.0.1:{postgres.port}/nosuch: database"
        ' "nosuch" does not exist on that server: create it first'
    )


# -- migrations and the cluster's mark ------------------------------------------------------------


def test_migrations_run_once_each_and_mark_the_component_and_cluster(db: PgDatabase) -> None:
    migrate(db, "master", PG_STEPS[:1], CLUSTER)
    assert tables_and_meta(db) == (
        ["dlweb_meta", "files"],
        [("cluster", CLUSTER), ("component", "master"), ("schema_version", "1")],
    )
    db.execute("INSERT INTO files (name, size) VALUES ('a', 1)")
    migrate(db, "master", PG_STEPS[:1], CLUSTER)  # nothing to do
    migrate(db, "master", PG_STEPS, CLUSTER)
    assert db.execute("SELECT name, size, kind FROM files").fetchall() == [("a", 1, "content")]
    assert tables_and_meta(db)[1][2] == ("schema_version", "2")


def test_two_processes_starting_at_once_migrate_once(postgres_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with PgDatabase(postgres_url) as db:
                migrate(db, "master", PG_STEPS, CLUSTER)
        except BaseException as error:  # reported to the test below
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with PgDatabase(postgres_url) as db:
        assert tables_and_meta(db)[1][2] == ("schema_version", "2")


def test_a_failing_step_leaves_the_database_at_the_step_before(db: PgDatabase) -> None:
    migrate(db, "master", PG_STEPS[:1], CLUSTER)
    broken = (PG_STEPS[0], "CREATE TABLE half (a TEXT); SELECT no_such_function()")
    with pytest.raises(DatabaseError, match="no_such_function"):
        migrate(db, "master", broken, CLUSTER)
    assert tables_and_meta(db)[0] == ["dlweb_meta", "files"]
    assert tables_and_meta(db)[1][2] == ("schema_version", "1")


def test_a_newer_schema_is_refused_as_on_sqlite_with_nothing_written(
    db: PgDatabase, tmp_path: Path
) -> None:
    migrate(db, "master", PG_STEPS, CLUSTER)
    before = tables_and_meta(db)
    with pytest.raises(DlwebError) as refused:
        migrate(db, "master", PG_STEPS[:1], CLUSTER)
    assert str(refused.value) == (
        f"{db.where} has schema version 2, newer than this dlweb knows (1):"
        " it was written by a later release"
    )
    assert tables_and_meta(db) == before
    sqlite = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    sqlite_migrate(sqlite, STEPS, tmp_path / "m.db")
    with pytest.raises(DlwebError) as on_sqlite:
        sqlite_migrate(sqlite, STEPS[:1], tmp_path / "m.db")
    sqlite.close()
    assert str(on_sqlite.value).replace(str(tmp_path / "m.db"), db.where) == str(refused.value)


def test_another_clusters_database_is_refused_with_nothing_written(db: PgDatabase) -> None:
    migrate(db, "master", PG_STEPS[:1], CLUSTER)
    before = tables_and_meta(db)
    other = cluster_id("test", b"t" * 32)
    with pytest.raises(DlwebError) as refused:
        migrate(db, "master", PG_STEPS, other)  # a migration due, not taken
    assert str(refused.value) == (
        f"{db.where} belongs to another cluster ('test', id {CLUSTER}), not to this one"
        f" ('test', id {other}): check the database URL and the cluster's secret"
    )
    assert tables_and_meta(db) == before


def test_a_database_of_another_component_or_of_no_dlweb_is_refused(
    postgres: PostgresServer,
) -> None:
    with PgDatabase(postgres.start().create_database()) as db:
        migrate(db, "scheduler", PG_STEPS, CLUSTER)
        with pytest.raises(DatabaseError, match="holds the metadata of dlweb's scheduler, not"):
            migrate(db, "master", PG_STEPS, CLUSTER)
    with PgDatabase(postgres.create_database()) as db:
        db.execute("CREATE TABLE accounts (id INTEGER)")
        with pytest.raises(DatabaseError, match=r"holds tables \(accounts\) but no dlweb_meta"):
            migrate(db, "master", PG_STEPS, CLUSTER)
        assert tables_and_meta(db) == (["accounts"], [])


def test_a_database_migrated_without_a_cluster_is_marked_at_the_next_start(db: PgDatabase) -> None:
    migrate(db, "index", PG_STEPS, None)
    assert ("cluster", CLUSTER) not in tables_and_meta(db)[1]
    migrate(db, "index", PG_STEPS, CLUSTER)
    assert ("cluster", CLUSTER) in tables_and_meta(db)[1]


def test_the_cluster_mark_is_written_alike_on_sqlite(tmp_path: Path) -> None:
    sqlite = sqlite3.connect(tmp_path / "m.db")
    sqlite.execute("CREATE TABLE dlweb_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    mark_cluster(sqlite, CLUSTER)
    assert sqlite.execute("SELECT value FROM dlweb_meta").fetchall() == [(CLUSTER,)]
    sqlite.close()


# -- transactions and a lost server ---------------------------------------------------------------


def test_a_transaction_commits_or_rolls_back_whole(db: PgDatabase) -> None:
    migrate(db, "master", PG_STEPS, CLUSTER)
    with db.transaction():
        db.execute("INSERT INTO files (name, size) VALUES ('a', 1)")
        assert db.in_transaction
    assert not db.in_transaction
    with pytest.raises(DatabaseError, match="duplicate key"), db.transaction():
        db.execute("INSERT INTO files (name, size) VALUES ('b', 2)")
        db.execute("INSERT INTO files (name, size) VALUES ('a', 3)")
    assert db.execute("SELECT name, size FROM files").fetchall() == [("a", 1)]
    assert list(db.stream("SELECT name FROM files WHERE size = ?", (1,))) == [("a",)]


def test_a_killed_server_refuses_writes_until_it_is_back(postgres: PostgresServer) -> None:
    connected: list[int] = []
    url = postgres.start().create_database()
    db = PgDatabase(url, on_connect=lambda opened: connected.append(opened.connections))
    migrate(db, "master", PG_STEPS, CLUSTER)
    db.execute("INSERT INTO files (name, size) VALUES ('kept', 1)")
    try:
        with pytest.raises(DatabaseUnavailable) as lost, db.transaction():
            db.execute("INSERT INTO files (name, size) VALUES ('lost', 2)")
            postgres.kill()
            db.execute("INSERT INTO files (name, size) VALUES ('lost too', 3)")
        assert str(lost.value) == (
            f"{db.where}: lost the connection to PostgreSQL (server closed the connection"
            " unexpectedly): not done; the next request connects again"
        )
        with pytest.raises(DatabaseUnavailable, match="no PostgreSQL server answers"):
            db.execute("SELECT 1")
    finally:
        postgres.start()
    assert db.execute("SELECT name FROM files ORDER BY name").fetchall() == [("kept",)]
    assert connected == [1, 2]
    db.close()
