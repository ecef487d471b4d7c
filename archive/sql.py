"""SQLite as the master, the index node and the search catalog use it: opening a database,
checkpointing its WAL, versioned schemas, transactions, and queries that look up many values at
once."""

import logging
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from .errors import DlwebError

T = TypeVar("T")

log = logging.getLogger(__name__)

# Values one `IN (...)` query takes, well under SQLite's bound on parameters.
IN_CHUNK = 500
# Rows keyed by SHA-256 names land on random pages: a page cache of 64 MiB (SQLite's default is
# 2 MiB) keeps the hot ones in memory instead of reading them again for every batch.
CACHE_KIB = 64 * 1024
# A Checkpointer copies the WAL into the database this often, from a thread of its own: a commit
# on the event loop then only appends to the WAL, and a page changed by several commits in a
# second is written to the database once. SQLite's own checkpoint, inside a commit, is kept only
# as a bound (this many pages, 200 MiB) should the checkpointer fall behind.
CHECKPOINT_EVERY = 1.0
CHECKPOINT_BOUND_PAGES = 50_000
# Once checkpointed whole, the WAL starts again from its beginning, and its file is cut back to
# this size: without it the file stays at the largest size it ever reached.
WAL_KEPT_BYTES = 64 * 1024 * 1024


def open_database(path: Path, checkpoint_every: float = CHECKPOINT_EVERY) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with a write-ahead log, which a
    Checkpointer copies into the database until the connection is closed.

    synchronous=NORMAL in WAL mode survives a process crash; a power loss may undo the last
    transactions, which their writers must be able to redo (a node sends its inventory entries
    again from the position the master kept).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, factory=_CheckpointedConnection
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BOUND_PAGES}")
    db.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
    db.checkpointer = Checkpointer(path, checkpoint_every)
    return db


class Checkpointer:
    """Checkpoints a database's WAL every `every` seconds from a thread, on a connection of its
    own (SQLite lets commits go on meanwhile), until closed."""

    def __init__(self, path: Path, every: float) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._every = every
        self._stop = threading.Event()
        self.checkpoints = 0
        self._thread = threading.Thread(
            target=self._run, name=f"checkpoint {path.name}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.checkpoints += 1
            except sqlite3.Error as exc:
                log.warning(
                    "checkpoint of the WAL failed (tried again in %g s): %s", self._every, exc
                )

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._db.close()


class _CheckpointedConnection(sqlite3.Connection):
    """A connection that stops its WAL's Checkpointer when it is closed."""

    checkpointer: Checkpointer | None = None

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None
        super().close()


# A step of a schema: an SQL script, or a function for what SQL alone cannot do (a conversion
# of the rows), called in the step's transaction.
Step = str | Callable[[sqlite3.Connection], None]


def migrate(db: sqlite3.Connection, steps: Sequence[Step], where: Path) -> None:
    """Bring a database to the schema of the last of `steps`, each taking the version before it
    (PRAGMA user_version; 0 for a new database) to its own, in a transaction of its own.
    DlwebError for a database of a newer schema: an older dlweb must not write it."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > len(steps):
        raise newer_schema(where, version, len(steps))
    for number, step in enumerate(steps[version:], start=version + 1):
        try:
            db.execute("BEGIN")
            if callable(step):
                step(db)
            else:
                run_script(db, step)
            db.execute(f"PRAGMA user_version = {number}")
            db.execute("COMMIT")
        except sqlite3.Error:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        log.info("%s: schema version %d", where, number)


def run_script(db: sqlite3.Connection, script: str) -> None:
    """The statements of a script, one at a time: unlike executescript, inside the transaction
    under way."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        db.execute(statement)


def newer_schema(where: str | Path, version: int, known: int) -> DlwebError:
    """The refusal of a database whose schema is newer than this dlweb's, on either engine."""
    return DlwebError(
        f"{where} has schema version {version}, newer than this dlweb knows ({known}):"
        " it was written by a later release"
    )


@contextmanager
def writable(path: Path) -> Iterator[None]:
    """Opening or migrating the database at `path`: a disk that is full or fails is said in one
    line naming the database, and a database file this attempt made is removed again (its
    empty file would pass for a database the next time)."""
    existed = path.exists()
    try:
        yield
    except sqlite3.OperationalError as error:
        code = getattr(error, "sqlite_errorcode", None)
        if code not in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN):
            raise
        if not existed:
            for made in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                made.unlink(missing_ok=True)
        if code == sqlite3.SQLITE_FULL:
            free = shutil.disk_usage(path.parent).free
            raise DlwebError(
                f"{path}: its disk is full ({free:,} bytes free), so the database cannot be"
                " written: free some space, then start again"
            ) from None
        raise DlwebError(f"{path}: the database cannot be written: {error}") from None


def wal_bytes(path: Path) -> int:
    """The size of a database's write-ahead log (0 when there is none)."""
    try:
        return path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        return 0


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN ... COMMIT around a block, ROLLBACK when it raises (on a connection that leaves
    transactions to its caller: isolation_level=None)."""
    db.execute("BEGIN")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def in_chunks(values: Sequence[T]) -> Iterator[tuple[Sequence[T], str]]:
    """The values in parts of IN_CHUNK, each with its `?,?,...` for an IN clause."""
    for start in range(0, len(values), IN_CHUNK):
        part = values[start : start + IN_CHUNK]
        yield part, ",".join("?" * len(part))
