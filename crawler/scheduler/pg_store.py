"""The scheduler's store on a PostgreSQL database: Store's SQL through archive.pg, for a
campaign whose state should live on a database server (docs/operations.md "Metadata on
PostgreSQL").

One scheduler at a time: each connection takes a session lock (an advisory lock, released by the
server when the connection ends), and a second scheduler on the same database is refused as on
one SQLite file. When the connection is lost, every call fails with DatabaseUnavailable until one
connects again; since a write whose commit was not answered may or may not have been done, what
the store keeps in memory is then read again from the database.
"""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from archive.pg import DatabaseUnavailable, PgDatabase, migrate, postgresql_schema

from .sql_engine import IN_USE, StoreError
from .steering_registry import _STEERING_SCHEMA
from .store import _LINKS_SCHEMA, _SCHEMA, Site, Store
from .stream_registry import _STREAM_SCHEMA

__all__ = ["COMPONENT", "PgStore"]

COMPONENT = "scheduler"  # what the database holds, as archive.pg.migrate marks it
# SCHEMA_VERSION 1, 2, 3, 4
STEPS = tuple(
    postgresql_schema(step) for step in (_SCHEMA, _STREAM_SCHEMA, _LINKS_SCHEMA, _STEERING_SCHEMA)
)
LOCK = 0x646C7765627363  # the advisory lock a scheduler holds on its database


class PgStore(Store):
    """The store on the PostgreSQL database of `url`, marked with the cluster's id (`cluster`)."""

    _LEAST = "LEAST"
    _GREATEST = "GREATEST"
    _DUE = ""

    def __init__(self, url: str, cluster: str) -> None:
        self._stale = False
        self._db = PgDatabase(url, on_connect=self._connected)
        self.where = self._db.where
        try:
            migrate(self._db, COMPONENT, STEPS, cluster)
            self._load()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def find_site_for(self, url: str) -> Site | None:
        self._fresh()
        return super().find_site_for(url)

    def next_sites(self, now: float, limit: int) -> list[Site]:
        self._fresh()
        return super().next_sites(now, limit)

    def _connected(self, db: PgDatabase) -> None:
        locked = db.execute(f"SELECT pg_try_advisory_lock({LOCK})").fetchone()
        if not locked or not locked[0]:
            raise StoreError(IN_USE, where=db.where)
        if db.connections > 1:
            self._stale = True

    def _fresh(self) -> None:
        """Reads the memory's state again after the connection was lost."""
        while self._stale:
            self._stale = False
            try:
                self._load()
            except BaseException:
                self._stale = True
                raise

    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, tuple(parameters)).fetchall()
        except DatabaseUnavailable:
            self._stale = True
            raise

    def _stream(self, sql: str) -> Iterator[Any]:
        try:
            yield from self._db.stream(sql)
        except DatabaseUnavailable:
            self._stale = True
            raise

    @contextmanager
    def _writing(self) -> Iterator[PgDatabase]:
        try:
            with self._db.transaction() as db:
                yield db
        except DatabaseUnavailable:
            self._stale = True
            raise
