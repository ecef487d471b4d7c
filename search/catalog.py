"""What a search index holds, in a SQLite file beside tantivy's: the versions indexed for each
structure file, the URL-key index of the CDX API (archive/url_index.py reads it), and how far in the
master's change feed the index is.

An update first lists here, as pending, every version of its files that tantivy may hold once
it commits (those indexed before and those it adds); then it commits tantivy; then it writes
the files' new versions and position, clearing the pending list, in one transaction. After a
crash between those steps, the files still pending are redone whole: every version listed for
them is deleted and each of their versions added again, whatever changed in the archive since.

It also lists the versions set aside (updating.py): those whose reading failed or whose
document tantivy refused, each with why, until an update deletes or adds that version again.
"""

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive.sql import in_chunks, transaction
from archive.timestamps import MAX_TIME, MIN_TIME, format_iso
from archive.url_index import URLKEYS_FILE, surt_key

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
CREATE TABLE IF NOT EXISTS set_aside (
    structure TEXT NOT NULL,
    time INTEGER NOT NULL,
    url TEXT NOT NULL,
    reason TEXT NOT NULL,
    error TEXT NOT NULL,
    PRIMARY KEY (structure, time)
);
"""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """What the catalog says of one structure file after an update: its URL when the CDX API
    lists it (None otherwise), and its versions as {time: digest}."""

    structure: str
    listed_url: str | None
    versions: dict[int, str]


@dataclass(frozen=True, slots=True)
class SetAside:
    """A version the index could not take, set aside so that the others are indexed: its
    structure file and time, its URL (cut short), why (a category) and the error."""

    structure: str
    time: int
    url: str
    reason: str
    error: str

    def when(self) -> str:
        """Its time in ISO 8601, or in microseconds past the years that can be written."""
        return format_iso(self.time) if MIN_TIME <= self.time <= MAX_TIME else f"{self.time} µs"

    def as_json(self) -> dict[str, str]:
        return {"url": self.url, "time": self.when(), "reason": self.reason, "error": self.error}


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
        found: dict[str, dict[int, str]] = {name: {} for name in structures}
        for name, time, digest in self._rows_of("versions", "time, digest", found):
            found[name][int(time)] = str(digest)
        return found

    def pending_of(self, structures: Iterable[str]) -> dict[str, set[int]]:
        """The versions of these files an unfinished update may have left in tantivy."""
        found: dict[str, set[int]] = {}
        for name, time in self._rows_of("pending", "time", structures):
            found.setdefault(name, set()).add(int(time))
        return found

    def _rows_of(
        self, table: str, columns: str, structures: Iterable[str]
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of `table` for these structure files, the file first."""
        for part, marks in in_chunks(list(structures)):
            yield from self._db.execute(
                f"SELECT structure, {columns} FROM {table} WHERE structure IN ({marks})", part
            )

    def mark_pending(self, entries: Iterable[FileEntry]) -> None:
        """List, before tantivy commits, every version these files may then hold there."""
        entries = list(entries)
        indexed = self.versions_of(entry.structure for entry in entries)
        with transaction(self._db):
            self._db.executemany(
                "INSERT OR IGNORE INTO pending VALUES (?, ?)",
                [
                    (entry.structure, time)
                    for entry in entries
                    for time in set(indexed[entry.structure]) | set(entry.versions)
                ],
            )

    def position(self) -> tuple[str | None, int]:
        """The change feed this index follows and the number of the last change it holds."""
        row = self._db.execute("SELECT feed, seq FROM position WHERE id = 0").fetchone()
        return (None, 0) if row is None else (row[0], int(row[1]))

    def record(
        self,
        entries: Iterable[FileEntry],
        position: tuple[str | None, int],
        redone: Iterable[tuple[str, int]] = (),
        set_aside: Iterable[SetAside] = (),
    ) -> None:
        """Replace what is said of these structure files (the last entry of a file said twice)
        and move the position, at once; the versions `redone` (structure file, time: deleted or
        added again) are no longer set aside, unless `set_aside` lists them."""
        entries = list({entry.structure: entry for entry in entries}.values())
        names = [(entry.structure,) for entry in entries]
        with transaction(self._db):
            self._db.executemany("DELETE FROM set_aside WHERE structure = ? AND time = ?", redone)
            self._db.executemany(
                "INSERT OR REPLACE INTO set_aside VALUES (?, ?, ?, ?, ?)",
                [(e.structure, e.time, e.url, e.reason, e.error) for e in set_aside],
            )
            for table in ("pending", "versions", "urls"):
                self._db.executemany(f"DELETE FROM {table} WHERE structure = ?", names)
            self._db.executemany(
                "INSERT INTO versions VALUES (?, ?, ?)",
                [
                    (entry.structure, time, digest)
                    for entry in entries
                    for time, digest in entry.versions.items()
                ],
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO urls VALUES (?, ?, ?)",
                [
                    (surt_key(entry.listed_url), entry.listed_url, entry.structure)
                    for entry in entries
                    if entry.listed_url is not None
                ],
            )
            self._db.execute(
                "INSERT INTO position VALUES (0, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET feed = excluded.feed, seq = excluded.seq",
                position,
            )

    def url_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM urls").fetchone()[0])

    def set_aside(self, last: int) -> tuple[int, list[SetAside]]:
        """How many versions are set aside, and the `last` set aside, the latest first."""
        count = int(self._db.execute("SELECT COUNT(*) FROM set_aside").fetchone()[0])
        rows = self._db.execute(
            "SELECT structure, time, url, reason, error FROM set_aside ORDER BY rowid DESC LIMIT ?",
            (last,),
        )
        return count, [SetAside(*row) for row in rows]
