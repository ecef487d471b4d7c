"""The index node's content database: which contents the archive holds, by the first 128 bits of
their SHA-256, and how many captures refer to each."""

import sqlite3
from collections.abc import Iterable
from pathlib import Path

CHUNK = 500


def prefix(name: str) -> bytes:
    return bytes.fromhex(name[:32])


class ContentIndex:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS contents (prefix BLOB PRIMARY KEY, refs INTEGER NOT NULL)"
            " WITHOUT ROWID"
        )

    def close(self) -> None:
        self.db.close()

    def known(self, names: Iterable[str]) -> set[str]:
        """Which of these names the archive already holds."""
        wanted = {prefix(name): name for name in names}
        keys = list(wanted)
        found: set[str] = set()
        for start in range(0, len(keys), CHUNK):
            part = keys[start : start + CHUNK]
            marks = ",".join("?" * len(part))
            for (key,) in self.db.execute(
                f"SELECT prefix FROM contents WHERE prefix IN ({marks})", part
            ):
                found.add(wanted[key])
        return found

    def count_refs(self, names: Iterable[str]) -> dict[str, int]:
        """Add one reference to each (known) name; returns the new counts."""
        counts: dict[str, int] = {}
        self.db.execute("BEGIN")
        try:
            for name in names:
                row = self.db.execute(
                    "UPDATE contents SET refs = refs + 1 WHERE prefix = ? RETURNING refs",
                    (prefix(name),),
                ).fetchone()
                if row is not None:
                    counts[name] = int(row[0])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return counts

    def add(self, names: Iterable[str]) -> None:
        """Record contents now stored on a node, each with its first reference."""
        self.db.execute("BEGIN")
        try:
            self.db.executemany(
                "INSERT OR IGNORE INTO contents (prefix, refs) VALUES (?, 1)",
                [(prefix(name),) for name in names],
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM contents").fetchone()[0])
