"""`dlweb admin migrate-metadata`: copy a master's SQLite metadata into a PostgreSQL database (to
outgrow one file, or to give the master a standby), while the master runs.

The copy is one snapshot of every table (a read transaction of SQLite's WAL), written into the
new database in one transaction and checked there: each table has the snapshot's rows, and the
totals the new database's triggers kept agree with a full count. What the master records after
the snapshot is not lost when it is restarted on the new database: each node's inventory
position is part of the snapshot, so the nodes send again every entry after it, and the full
scan at start looks at every file again.
"""

import sqlite3
from collections.abc import Callable
from pathlib import Path

from archive.errors import DlwebError
from archive.metadata import parse_metadata_url

from .db import MasterDB

BATCH = 10_000  # rows read and written at a time
# The tables copied, a file before its copies (a copy's trigger counts its file's size). The
# totals tables are not copied: the new database's triggers count them as rows arrive.
TABLES = (
    "nodes",
    "node_numbers",
    "files",
    "held",
    "active",
    "dirty",
    "diverged",
    "moves",
    "to_check",
    "nodes_to_check",
    "over_target",
    "pending_refs",
    "meta",
    "changes",
    "short",
)
# Rows the new database may hold already: its meta rows are replaced by the master's own.
_REPLACED = {"meta": " ON CONFLICT (key) DO UPDATE SET value = excluded.value"}


class MigrationError(DlwebError):
    """The metadata could not be copied, or the copy does not match its source."""


def migrate_metadata(
    source: Path, target: str, cluster: str, progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Copy the master's SQLite database at `source` into the database of the metadata URL
    `target` (created, or empty), marked with the cluster's id; the rows copied, by table.
    Nothing is committed unless every table and total matches."""
    if parse_metadata_url(target, "--to").engine != "postgresql":
        raise MigrationError(
            f"--to {target!r}: give a postgresql:// URL (an SQLite master is moved by copying"
            " its folder while it is stopped)"
        )
    if not source.is_file():
        raise MigrationError(f"{source}: no such file (the master's master.db in its --data)")
    try:
        snapshot = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise MigrationError(f"{source}: cannot open it: {error}") from None
    try:
        snapshot.execute("BEGIN")
        _check_source(snapshot, source)
        copy = MasterDB(target, cluster)
        try:
            return _copy(snapshot, copy, progress)
        finally:
            copy.close()
    finally:
        snapshot.close()


def _check_source(snapshot: sqlite3.Connection, source: Path) -> None:
    try:
        tables = {row[0] for row in snapshot.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as error:
        raise MigrationError(f"{source}: not a master's database ({error})") from None
    missing = [table for table in TABLES if table not in tables]
    if missing:
        raise MigrationError(
            f"{source}: not a master's database of this release (no table {missing[0]});"
            " start the master on it once to bring it up to date"
        )


def _copy(
    snapshot: sqlite3.Connection, copy: MasterDB, progress: Callable[[str, int], None] | None
) -> dict[str, int]:
    if copy.db.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None:
        raise MigrationError(f"{copy.where} holds files already: migrate into an empty database")
    copied: dict[str, int] = {}
    with copy.engine.transaction():
        for table in TABLES:
            columns = [row[1] for row in snapshot.execute(f"PRAGMA table_info({table})")]
            insert = (
                f"INSERT INTO {table} ({', '.join(columns)})"
                f" VALUES ({', '.join('?' * len(columns))}){_REPLACED.get(table, '')}"
            )
            rows = snapshot.execute(f"SELECT {', '.join(columns)} FROM {table}")
            copied[table] = 0
            while batch := rows.fetchmany(BATCH):
                copy.db.executemany(insert, batch)
                copied[table] += len(batch)
                if progress is not None:
                    progress(table, copied[table])
        # The ids of new moves go on after the ids copied.
        copy.db.execute(
            "SELECT setval(pg_get_serial_sequence('moves', 'id'), COALESCE(MAX(id), 0) + 1,"
            " false) FROM moves"
        )
        _verify(copy, copied)
    return copied


def _verify(copy: MasterDB, copied: dict[str, int]) -> None:
    """Every table holds the snapshot's rows, and the totals kept agree with a full count."""
    for table, rows in copied.items():
        if table == "meta":
            continue  # the new database had its own rows too
        found = int(copy.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        if found != rows:
            raise MigrationError(f"{copy.where}: {table} holds {found} rows, not {rows}")
    drift = copy.recount(mend=False)
    if drift:
        raise MigrationError(f"{copy.where}: the totals differ from a full count: {drift}")
