"""What the scheduler's store is written on: its SQL, written once for both engines, reads,
streams and writes through `SqlEngine`, which SqliteStore (store.py) and PgStore (pg_store.py)
implement; and the errors a store gives."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, Self

from archive.errors import DlwebError

__all__ = ["IN_USE", "Connection", "SqlEngine", "StoreError"]

IN_USE = "the scheduler's database is in use by another process"


class StoreError(DlwebError):
    """The scheduler's database cannot be opened or written, or was asked something invalid."""


class Connection(Protocol):
    """What a store writes through in a transaction: an sqlite3 connection, or archive.pg's."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...


class SqlEngine:
    """Reading, streaming and writing, as each engine implements them, and the few words of SQL
    the engines spell differently."""

    where: str  # the database, as messages name it
    _LEAST = "MIN"  # the smaller of two values (SQLite's MIN, PostgreSQL's LEAST), and the larger
    _GREATEST = "MAX"

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        """The rows of a query."""

    @abstractmethod
    def _stream(self, sql: str) -> Iterator[Any]:
        """The rows of a query, read a batch at a time."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]:
        """One transaction, committed (and synced) on leaving, rolled back on an error."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
