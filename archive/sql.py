"""SQLite as the master and the index node use it: opening a database, and queries that look
up many values at once."""

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# Values one `IN (...)` query takes, well under SQLite's bound on parameters.
IN_CHUNK = 500
# Rows keyed by SHA-256 names land on random pages: a page cache of 64 MiB (SQLite's default is
# 2 MiB) keeps the hot ones in memory instead of reading them again for every batch. The WAL is
# still checkpointed every 1,000 pages (SQLite's default): a checkpoint runs inside a commit, on
# the event loop, and a larger one stalls it for longer.
CACHE_KIB = 64 * 1024


def open_database(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with a write-ahead log.

    synchronous=NORMAL in WAL mode survives a process crash; a power loss may undo the last
    transactions, which their writers must be able to redo (a node sends its inventory entries
    again from the position the master kept).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    return db


def in_chunks(values: Sequence[T]) -> Iterator[tuple[Sequence[T], str]]:
    """The values in parts of IN_CHUNK, each with its `?,?,...` for an IN clause."""
    for start in range(0, len(values), IN_CHUNK):
        part = values[start : start + IN_CHUNK]
        yield part, ",".join("?" * len(part))
