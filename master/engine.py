"""Where the metadata of the master and of the index nodes lives: an SQLite file beside the
process (the default, nothing to install) or a PostgreSQL database (for a cluster that outgrows
one file, or whose master needs a standby). MasterDB and ContentIndex write their SQL once; what
differs between the engines beyond their schemas is here: opening and migrating, transactions, a
few words of SQL, a second connection for reads in a thread, and the bytes stored."""

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from archive import pg
from archive.metadata import check_cluster, parse_metadata_url
from archive.sql import migrate, open_database, transaction, wal_bytes, writable

from .schema import Schema


class Connection(Protocol):
    """What MasterDB calls on either engine's connection: sqlite3's, or archive.pg's."""

    def execute(self, sql: str, parameters: Any = ()) -> Any: ...

    def executemany(self, sql: str, rows: Any) -> Any: ...


class Engine(Protocol):
    # SQL that differs: the larger of two values.
    greatest: str

    @property
    def db(self) -> Connection: ...

    @property
    def where(self) -> str:
        """The database as messages name it."""
        ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def rows(self, rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
        """Rows as a query gives them, to insert (`INSERT INTO t (...) <rows>`) or to match
        (`WHERE (...) IN (<rows>)`), and its parameters."""
        ...

    def reader(self) -> Connection:
        """A connection of its own, for reads made in a thread while the master serves."""
        ...

    def storage(self) -> dict[str, int]: ...

    def close(self) -> None: ...


class SqliteEngine:
    greatest = "MAX"

    def __init__(self, path: Path, schema: Schema, cluster: str | None) -> None:
        self.path = path
        self.where = str(path)
        with writable(path):
            self.db = open_database(path)
            try:
                migrate(self.db, schema.sqlite, path)
                if cluster is not None:
                    _check_sqlite_cluster(self.db, cluster, self.where)
            except BaseException:
                self.db.close()
                raise
        self._reader: sqlite3.Connection | None = None

    def transaction(self) -> AbstractContextManager[None]:
        return transaction(self.db)

    def rows(self, rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
        marks = ",".join([f"({','.join('?' * len(rows[0]))})"] * len(rows))
        return f"VALUES {marks}", [value for row in rows for value in row]

    def reader(self) -> sqlite3.Connection:
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, check_same_thread=False)
            self._reader.execute("PRAGMA query_only = ON")
        return self._reader

    def storage(self) -> dict[str, int]:
        """Bytes of the database file, of its pages free for reuse (left by rows deleted, as
        the repair pass's marks are), and of its write-ahead log."""
        pages = int(self.db.execute("PRAGMA page_count").fetchone()[0])
        free = int(self.db.execute("PRAGMA freelist_count").fetchone()[0])
        size = int(self.db.execute("PRAGMA page_size").fetchone()[0])
        return {
            "database_bytes": pages * size,
            "free_bytes": free * size,
            "wal_bytes": wal_bytes(self.path),
        }

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.db.close()


class PgEngine:
    greatest = "GREATEST"

    def __init__(self, url: str, schema: Schema, cluster: str | None) -> None:
        self.url = url
        self.db = pg.PgDatabase(url)
        self.where = self.db.where
        try:
            pg.migrate(self.db, schema.component, schema.postgresql, cluster)
        except BaseException:
            self.db.close()
            raise
        self._reader: pg.PgDatabase | None = None

    def transaction(self) -> AbstractContextManager[Any]:
        return self.db.transaction()

    def rows(self, rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
        """One array a column: the statement stays the same whatever the number of rows, so
        psycopg prepares it once, and PostgreSQL reads the arrays as a table."""
        columns = list(zip(*rows, strict=True))
        casts = ", ".join(f"?::{_ARRAYS[type(column[0])]}" for column in columns)
        return f"SELECT * FROM unnest({casts})", [list(column) for column in columns]

    def reader(self) -> pg.PgDatabase:
        if self._reader is None:
            self._reader = pg.PgDatabase(self.url)
        return self._reader

    def storage(self) -> dict[str, int]:
        """Bytes of the database (PostgreSQL's write-ahead log is the server's, not shown)."""
        row = self.db.execute("SELECT pg_database_size(current_database())").fetchone()
        return {"database_bytes": int(row[0]) if row else 0, "free_bytes": 0, "wal_bytes": 0}

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self.db.close()


# PostgreSQL's array type for the Python type of a column's values (PgEngine.rows).
_ARRAYS = {str: "text[]", int: "bigint[]", float: "double precision[]", bytes: "bytea[]"}


def open_engine(where: Path | str, schema: Schema, cluster: str | None = None) -> Engine:
    """The database of a component's metadata, brought to its schema: a path is an SQLite file,
    a string a metadata URL (archive.metadata). `cluster` (archive.metadata.cluster_id) refuses
    another cluster's database, before anything is written to it, and marks a new one (on
    SQLite, in the schema's `meta` table)."""
    if isinstance(where, Path):
        return SqliteEngine(where, schema, cluster)
    url = parse_metadata_url(where, "metadata")
    if url.path is not None:
        return SqliteEngine(url.path, schema, cluster)
    return PgEngine(url.url, schema, cluster)


def _check_sqlite_cluster(db: sqlite3.Connection, cluster: str, where: str) -> None:
    """The cluster check of archive.pg.migrate, on the SQLite master's meta table (of JSON
    values)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'cluster'").fetchone()
    check_cluster(None if row is None else str(json.loads(row[0])), cluster, where)
    if row is None:
        db.execute("INSERT INTO meta (key, value) VALUES ('cluster', ?)", (json.dumps(cluster),))
