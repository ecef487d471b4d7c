"""The index node's content database: which contents the archive holds, by the first 128 bits of
their SHA-256, and how many captures refer to each; in SQLite or PostgreSQL (master/engine.py)."""

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from archive.sql import in_chunks

from ..engine import open_engine
from ..schema import INDEX


def prefix(name: str) -> bytes:
    return bytes.fromhex(name[:32])


class ContentIndex:
    def __init__(self, where: Path | str, cluster: str | None = None) -> None:
        """The contents at `where`, a path (SQLite) or a metadata URL; `cluster` (its id, from
        archive.metadata.cluster_id) refuses another cluster's database."""
        self.engine = open_engine(where, INDEX, cluster)
        self.db = self.engine.db

    def close(self) -> None:
        self.engine.close()

    def known(self, names: Iterable[str]) -> set[str]:
        """Which of these names the archive already holds."""
        return set(self._refs_of(names))

    def count_refs(self, added: Mapping[str, int]) -> dict[str, int]:
        """Add references to known names, in one transaction; the new counts of those found."""
        with self._transaction():
            counts = self._refs_of(added)
            self.db.executemany(
                "UPDATE contents SET refs = refs + ? WHERE prefix = ?",
                [(added[name], prefix(name)) for name in counts],
            )
        return {name: count + added[name] for name, count in counts.items()}

    def add(self, added: Mapping[str, int]) -> dict[str, int]:
        """Record contents now stored on a node with their references (a new one has at least
        one), in one transaction; the new counts."""
        with self._transaction():
            counts = self._refs_of(added)
            self.db.executemany(
                "INSERT INTO contents (prefix, refs) VALUES (?, ?)"
                " ON CONFLICT (prefix) DO UPDATE SET refs = contents.refs + ?",
                [(prefix(name), max(more, 1), more) for name, more in added.items()],
            )
        return {
            name: counts[name] + more if name in counts else max(more, 1)
            for name, more in added.items()
        }

    def _refs_of(self, names: Iterable[str]) -> dict[str, int]:
        """The reference counts of those of these names the archive holds."""
        wanted = {prefix(name): name for name in names}
        found: dict[str, int] = {}
        for part, marks in in_chunks(list(wanted)):
            for key, refs in self.db.execute(
                f"SELECT prefix, refs FROM contents WHERE prefix IN ({marks})", part
            ):
                found[wanted[key]] = int(refs)
        return found

    def refs(self, name: str) -> int | None:
        row = self.db.execute("SELECT refs FROM contents WHERE prefix = ?", (prefix(name),))
        found = row.fetchone()
        return None if found is None else int(found[0])

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM contents").fetchone()[0])

    def _transaction(self) -> AbstractContextManager[Any]:
        return self.engine.transaction()
