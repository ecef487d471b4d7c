"""The PostgreSQL server of the metadata tests: one per worker, a new database per test, and a
crash it recovers from."""

from deploy.testing.postgres import PostgresServer


def test_each_test_gets_a_new_empty_database(postgres: PostgresServer, postgres_url: str) -> None:
    name = postgres_url.rsplit("/", 1)[1]
    postgres.sql("CREATE TABLE t (n integer); INSERT INTO t VALUES (1)", database=name)
    other = postgres.create_database().rsplit("/", 1)[1]
    assert other != name
    assert postgres.sql("SELECT count(*) FROM pg_tables WHERE tablename = 't'", other) == "0\n"
    assert postgres.sql("SELECT n FROM t", name) == "1\n"


def test_the_server_comes_back_after_a_crash_with_what_was_committed(
    postgres: PostgresServer, postgres_url: str
) -> None:
    name = postgres_url.rsplit("/", 1)[1]
    postgres.sql("CREATE TABLE t (n integer); INSERT INTO t VALUES (7)", database=name)
    postgres.kill()
    assert postgres.process is None
    postgres.start()
    assert postgres.sql("SELECT n FROM t", name) == "7\n"
