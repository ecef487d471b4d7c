"""PostgreSQL drivers on the metadata stores' hot paths: psycopg 3 (synchronous and asyncio) and
asyncpg side by side, with SQLite (the embedded engine) as the reference.

    pip install asyncpg                              # the peer, not a dependency of dlweb
    python benchmarks/bench_pg_drivers.py            # about 40 s on 2 cores
    python benchmarks/bench_pg_drivers.py --quick

It starts its own PostgreSQL server as the tests do (deploy/testing/postgres.py: initdb in a
temporary folder, a loopback port, fsync off, so that the figures are the drivers' and not the
disk's) and times, on a table of (kind, name as 64 hex digits, size) keyed by name:

- a batch of 1,000 inserts with ON CONFLICT DO NOTHING, in one transaction (executemany), and
  for the two PostgreSQL drivers that differ most the same batch as one INSERT of unnested arrays;
- a point lookup by primary key, one at a time;
- an IN-list lookup of 500 keys (the `IN (?, ?, ...)` query archive.sql.in_chunks builds);
- the read of a counters row (the figures status shows, kept instead of COUNT).

Each figure is the best of several rounds, in ms per operation, with its ratio to psycopg's
synchronous driver.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg

try:
    import asyncpg
except ImportError:
    sys.exit("bench_pg_drivers: asyncpg, the driver psycopg is measured against, is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from deploy.testing.postgres import PostgresServer  # noqa: E402

BATCH = 1_000
IN_KEYS = 500
ROUNDS = 5
SCHEMA = (
    "CREATE TABLE files (kind TEXT NOT NULL, name TEXT PRIMARY KEY, size BIGINT NOT NULL)",
    "CREATE TABLE counters (id INTEGER PRIMARY KEY, files BIGINT NOT NULL, bytes BIGINT NOT NULL)",
    "INSERT INTO counters VALUES (1, 0, 0)",
)
INSERT = "INSERT INTO files (kind, name, size) VALUES ({}, {}, {}) ON CONFLICT (name) DO NOTHING"
# The same batch as one statement of three arrays, which PostgreSQL unnests into rows.
UNNEST = (
    "INSERT INTO files (kind, name, size) SELECT * FROM unnest({}::text[], {}::text[], {}::bigint[])"
    " ON CONFLICT (name) DO NOTHING"
)
POINT = "SELECT kind, size FROM files WHERE name = {}"
COUNTERS = "SELECT files, bytes FROM counters WHERE id = 1"
DRIVERS = ("psycopg", "psycopg async", "asyncpg", "sqlite3")


def rows(count: int) -> list[tuple[str, str, int]]:
    return [("content", os.urandom(32).hex(), 1000 + n) for n in range(count)]


def columns(count: int) -> list[list[object]]:
    """A batch of rows as three arrays, for UNNEST."""
    kinds, names, sizes = zip(*rows(count), strict=True)
    return [list(kinds), list(names), list(sizes)]


def in_list(marks: list[str]) -> str:
    return f"SELECT name, size FROM files WHERE name IN ({', '.join(marks)})"


def best(run: Callable[[], object], count: int) -> float:
    """The fastest of ROUNDS rounds of `count` calls, in ms per call."""
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(count):
            run()
        times.append((time.perf_counter() - start) / count * 1000)
    return min(times)


async def best_async(run: Callable[[], Awaitable[object]], count: int) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(count):
            await run()
        times.append((time.perf_counter() - start) / count * 1000)
    return min(times)


def bench_psycopg(url: str, batches: int, lookups: int) -> dict[str, float]:
    with psycopg.connect(url, autocommit=True) as db:
        for statement in SCHEMA:
            db.execute(statement)
        insert = INSERT.format("%s", "%s", "%s")

        def batch() -> None:
            with db.transaction(), db.cursor() as cursor:
                cursor.executemany(insert, rows(BATCH))

        figures = {"insert 1,000": best(batch, batches)}
        unnest = UNNEST.format("%s", "%s", "%s")
        figures["unnest 1,000"] = best(lambda: db.execute(unnest, columns(BATCH)), batches)
        names = [row[0] for row in db.execute("SELECT name FROM files").fetchall()]
        point = POINT.format("%s")
        figures["point lookup"] = best(
            lambda: db.execute(point, (names[len(names) // 2],)).fetchone(), lookups
        )
        query = in_list(["%s"] * IN_KEYS)
        keys = names[:IN_KEYS]
        figures["IN 500 keys"] = best(
            lambda: db.execute(query, keys).fetchall(), max(lookups // 50, 10)
        )
        figures["counters row"] = best(lambda: db.execute(COUNTERS).fetchone(), lookups)
    return figures


async def bench_psycopg_async(url: str, batches: int, lookups: int) -> dict[str, float]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        for statement in SCHEMA:
            await db.execute(statement)
        insert = INSERT.format("%s", "%s", "%s")

        async def batch() -> None:
            async with db.transaction(), db.cursor() as cursor:
                await cursor.executemany(insert, rows(BATCH))

        figures = {"insert 1,000": await best_async(batch, batches)}
        names = [row[0] for row in await (await db.execute("SELECT name FROM files")).fetchall()]
        point = POINT.format("%s")
        middle = names[len(names) // 2]

        async def lookup() -> object:
            return await (await db.execute(point, (middle,))).fetchone()

        figures["point lookup"] = await best_async(lookup, lookups)
        query = in_list(["%s"] * IN_KEYS)
        keys = names[:IN_KEYS]

        async def many() -> object:
            return await (await db.execute(query, keys)).fetchall()

        figures["IN 500 keys"] = await best_async(many, max(lookups // 50, 10))

        async def counters() -> object:
            return await (await db.execute(COUNTERS)).fetchone()

        figures["counters row"] = await best_async(counters, lookups)
    return figures


async def bench_asyncpg(url: str, batches: int, lookups: int) -> dict[str, float]:
    db = await asyncpg.connect(url)
    try:
        for statement in SCHEMA:
            await db.execute(statement)
        insert = INSERT.format("$1", "$2", "$3")

        async def batch() -> None:
            async with db.transaction():
                await db.executemany(insert, rows(BATCH))

        figures = {"insert 1,000": await best_async(batch, batches)}
        unnest = UNNEST.format("$1", "$2", "$3")
        figures["unnest 1,000"] = await best_async(
            lambda: db.execute(unnest, *columns(BATCH)), batches
        )
        names = [row[0] for row in await db.fetch("SELECT name FROM files")]
        point = POINT.format("$1")
        middle = names[len(names) // 2]
        figures["point lookup"] = await best_async(lambda: db.fetchrow(point, middle), lookups)
        query = in_list([f"${n}" for n in range(1, IN_KEYS + 1)])
        keys = names[:IN_KEYS]
        figures["IN 500 keys"] = await best_async(
            lambda: db.fetch(query, *keys), max(lookups // 50, 10)
        )
        figures["counters row"] = await best_async(lambda: db.fetchrow(COUNTERS), lookups)
    finally:
        await db.close()
    return figures


def bench_sqlite(folder: Path, batches: int, lookups: int) -> dict[str, float]:
    db = sqlite3.connect(folder / "bench.db", isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for statement in SCHEMA:
            db.execute(statement)
        insert = INSERT.format("?", "?", "?")

        def batch() -> None:
            db.execute("BEGIN")
            db.executemany(insert, rows(BATCH))
            db.execute("COMMIT")

        figures = {"insert 1,000": best(batch, batches)}
        names = [row[0] for row in db.execute("SELECT name FROM files")]
        point = POINT.format("?")
        figures["point lookup"] = best(
            lambda: db.execute(point, (names[len(names) // 2],)).fetchone(), lookups
        )
        query = in_list(["?"] * IN_KEYS)
        keys = names[:IN_KEYS]
        figures["IN 500 keys"] = best(
            lambda: db.execute(query, keys).fetchall(), max(lookups // 50, 10)
        )
        figures["counters row"] = best(lambda: db.execute(COUNTERS).fetchone(), lookups)
    finally:
        db.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds' operations")
    args = parser.parse_args()
    batches, lookups = (4, 500) if args.quick else (10, 3_000)
    server = PostgresServer()
    results: dict[str, dict[str, float]] = {}
    try:
        server.start()
        with tempfile.TemporaryDirectory(prefix="bench-pg-") as folder:
            results["psycopg"] = bench_psycopg(server.create_database(), batches, lookups)
            results["psycopg async"] = asyncio.run(
                bench_psycopg_async(server.create_database(), batches, lookups)
            )
            results["asyncpg"] = asyncio.run(
                bench_asyncpg(server.create_database(), batches, lookups)
            )
            results["sqlite3"] = bench_sqlite(Path(folder), batches, lookups)
    finally:
        server.remove()
    print(
        f"psycopg {psycopg.__version__} (libpq {psycopg.pq.version()}, {psycopg.pq.__impl__}),"
        f" asyncpg {asyncpg.__version__}, SQLite {sqlite3.sqlite_version};"
        f" PostgreSQL over TCP on 127.0.0.1, best of {ROUNDS} rounds, ms per operation"
        " (ratio to psycopg)"
    )
    print(f"{'':>14}" + "".join(f"{driver:>22}" for driver in DRIVERS))
    for path in results["psycopg"]:
        reference = results["psycopg"][path]
        cells = (
            f"{results[driver][path]:9.3f} ms ({results[driver][path] / reference:5.2f}x)"
            if path in results[driver]
            else "-"
            for driver in DRIVERS
        )
        print(f"{path:>14}" + "".join(f"{cell:>22}" for cell in cells))


if __name__ == "__main__":
    main()
