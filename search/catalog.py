"""What a search index holds, in a SQLite file beside tantivy's: the versions indexed for each
structure file, the URL-key index of the CDX API (urlkeys.py reads it), and how far in the
master's change feed the index is.

An update first lists here, as pending, every version of its files that tantivy may hold once
it commits (those indexed before and those it adds); then it commits tantivy; then it writes
the files' new versions and position, clearing the pending list, in one transaction. After a
crash between those steps, the files still pending are redone whole: every version listed for
them is deleted and each of their versions added again, whatever changed in the archive since.
"""

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from archive.urlkeys import URLKEYS_FILE, surt_key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    urlkey TEXT NOT NULL,
    url TEXT NOT NULL,
    structure TEXT NOT NULL,
    PRIMARY KEY (urlkey, url)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_by_structure ON urls (structure);
CREATE TABLE IF NOT EXISTS versions (
    structure TEXT NOT NULL,
    time INTEGER NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (structure, time)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS position (id INTEGER PRIMARY KEY CHECK (id = 0), feed TEXT, seq INTEGER);
CREATE TABLE IF NOT EXISTS pending (
    structure TEXT NOT NULL,
    time INTEGER NOT NULL,
    PRIMARY KEY (structure, time)
) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """What the catalog says of one structure file after an update: its URL when the CDX API
    lists it (None otherwise), and its versions as {time: digest}."""

    structure: str
    listed_url: str | None
    versions: dict[int, str]


class Catalog:
    """The catalog of one index folder, open for updating."""

    def __init__(self, folder: Path) -> None:
        self._db = sqlite3.connect(
            folder / URLKEYS_FILE, isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")  # the CDX API reads while an update writes
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def versions_of(self, structures: Iterable[str]) -> dict[str, dict[int, str]]:
        """The versions indexed for each structure file, {time: digest} (empty when none)."""
        found: dict[str, dict[int, str]] = {}
        for name in structures:
            rows = self._db.execute(
                "SELECT time, digest FROM versions WHERE structure = ?", (name,)
            )
            found[name] = {int(time): str(digest) for time, digest in rows}
        return found

    def pending_of(self, structures: Iterable[str]) -> dict[str, set[int]]:
        """The versions of these files an unfinished update may have left in tantivy."""
        found: dict[str, set[int]] = {}
        for name in structures:
            rows = self._db.execute("SELECT time FROM pending WHERE structure = ?", (name,))
            times = {int(time) for (time,) in rows}
            if times:
                found[name] = times
        return found

    def mark_pending(self, entries: Iterable[FileEntry]) -> None:
        """List, before tantivy commits, every version these files may then hold there."""
        self._db.execute("BEGIN")
        try:
            for entry in entries:
                rows = self._db.execute(
                    "SELECT time FROM versions WHERE structure = ?", (entry.structure,)
                )
                times = {int(time) for (time,) in rows} | set(entry.versions)
                self._db.executemany(
                    "INSERT OR IGNORE INTO pending VALUES (?, ?)",
                    [(entry.structure, time) for time in times],
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def position(self) -> tuple[str | None, int]:
        """The change feed this index follows and the number of the last change it holds."""
        row = self._db.execute("SELECT feed, seq FROM position WHERE id = 0").fetchone()
        return (None, 0) if row is None else (row[0], int(row[1]))

    def record(self, entries: Iterable[FileEntry], position: tuple[str | None, int]) -> None:
        """Replace what is said of these structure files and move the position, at once."""
        self._db.execute("BEGIN")
        try:
            for entry in entries:
                self._db.execute("DELETE FROM pending WHERE structure = ?", (entry.structure,))
                self._db.execute("DELETE FROM versions WHERE structure = ?", (entry.structure,))
                self._db.executemany(
                    "INSERT INTO versions VALUES (?, ?, ?)",
                    [(entry.structure, time, digest) for time, digest in entry.versions.items()],
                )
                self._db.execute("DELETE FROM urls WHERE structure = ?", (entry.structure,))
                if entry.listed_url is not None:
                    self._db.execute(
                        "INSERT OR IGNORE INTO urls VALUES (?, ?, ?)",
                        (surt_key(entry.listed_url), entry.listed_url, entry.structure),
                    )
            self._db.execute(
                "INSERT INTO position VALUES (0, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET feed = excluded.feed, seq = excluded.seq",
                position,
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def url_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM urls").fetchone()[0])
