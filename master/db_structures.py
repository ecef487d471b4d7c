"""MasterDB's structure files: the node holding each one's active copy, copies that diverged from
it, copies waiting for a refresh, and the change feed that numbers their changes
(archive/changes.py)."""

import uuid
from collections.abc import Iterable, Iterator, Sequence

from archive.sql import in_chunks

from .db_keys import FileKeys
from .file_ids import KIND_CODES, holder_numbers, name_of

# The next number of the change feed (archive/changes.py), given to a file changed anew.
NEXT_CHANGE = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM changes)"


class Structures(FileKeys):
    """Structure files' active, diverged and dirty copies, and their change feed."""

    # How often each structure file waiting for a refresh was marked since this process
    # started: a refresh clears a mark only if no other came while it copied.
    _dirtied: dict[str, int]

    # -- structure files ------------------------------------------------------------------------

    def active_node(self, name: str) -> str | None:
        return self.active_nodes([name]).get(name)

    def active_nodes(self, names: Sequence[str]) -> dict[str, str]:
        """`active_node` of many structure files, in a few queries; those without an active
        copy are left out."""
        found: dict[str, str] = {}
        for part, marks in in_chunks(names):
            found.update(
                self.db.execute(f"SELECT name, node FROM active WHERE name IN ({marks})", part)
            )
        return found

    def set_active(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Make these (structure name, node) copies the active ones, those appended to."""
        with self._transaction():
            self.db.executemany(
                "INSERT INTO active (name, node) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET node = excluded.node",
                list(pairs),
            )

    def structures_without_active(self, readable: Sequence[str]) -> int:
        """How many structure files have no active copy on a readable node that holds it."""
        active: dict[str, str] = dict(self.db.execute("SELECT name, node FROM active").fetchall())
        missing = 0
        for key, rest, holders in self.db.execute(
            "SELECT id, rest, holders FROM files WHERE kind = ?", (KIND_CODES["structure"],)
        ):
            node = active.get(name_of(int(key), bytes(rest)), "")
            number = self._numbers.get(node) if node in readable else None
            missing += number is None or number not in holder_numbers(holders)
        return missing

    def structure_holders(self, names: Sequence[str]) -> dict[str, list[str]]:
        """`holders_of` structure files, each one's active copy first: the other copies lack the
        records appended since the master last refreshed them, and a reader believes the first
        holder that answers."""
        active = self.active_nodes(names)
        return {
            name: sorted(nodes, key=lambda node: node != active.get(name))
            for name, nodes in self.holders_of("structure", names).items()
        }

    def add_diverged(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Remember (structure name, node) copies to merge into the active copy later."""
        with self._transaction():
            self.db.executemany(
                "INSERT INTO diverged (name, node) VALUES (?, ?) ON CONFLICT DO NOTHING",
                list(pairs),
            )

    def diverged(self, limit: int, nodes: Sequence[str]) -> list[tuple[str, str]]:
        """Diverged copies on the given nodes, at most `limit`."""
        marks = ",".join("?" * len(nodes)) or "''"
        rows = self.db.execute(
            f"SELECT name, node FROM diverged WHERE node IN ({marks}) LIMIT ?",
            (*nodes, limit),
        )
        return [(str(name), str(node)) for name, node in rows]

    def diverged_names(self, node: str) -> list[str]:
        """The structure files whose copy on a node waits to be merged."""
        rows = self.db.execute("SELECT name FROM diverged WHERE node = ?", (node,))
        return [str(row[0]) for row in rows]

    def diverged_on(self, name: str) -> set[str]:
        """The nodes whose copy of a structure file waits to be merged."""
        rows = self.db.execute("SELECT node FROM diverged WHERE name = ?", (name,))
        return {str(row[0]) for row in rows}

    def diverged_on_many(self, names: Sequence[str]) -> dict[str, set[str]]:
        """`diverged_on` of many structure files, in a few queries; those with no copy waiting
        are left out."""
        found: dict[str, set[str]] = {}
        for part, marks in in_chunks(names):
            rows = self.db.execute(f"SELECT name, node FROM diverged WHERE name IN ({marks})", part)
            for name, node in rows:
                found.setdefault(str(name), set()).add(str(node))
        return found

    def settle_diverged(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self._transaction():
            self.db.executemany("DELETE FROM diverged WHERE name = ? AND node = ?", list(pairs))

    def count_diverged(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM diverged").fetchone()[0])

    def mark_dirty(self, names: Iterable[str]) -> None:
        """Mark structure files whose replicas wait for a refresh, counting the marks (`clean`)."""
        marked = list(names)
        with self._transaction():
            self.db.executemany(
                "INSERT INTO dirty (name) VALUES (?) ON CONFLICT DO NOTHING", [(n,) for n in marked]
            )
        for name in marked:
            self._dirtied[name] = self._dirtied.get(name, 0) + 1

    def dirty_marks(self, names: Iterable[str]) -> dict[str, int]:
        """Where the marks of these structure files stand, for `clean`."""
        return {name: self._dirtied.get(name, 0) for name in names}

    def dirty(self, limit: int) -> list[str]:
        """Up to `limit` structure files whose replicas wait for a refresh."""
        return [row[0] for row in self.db.execute("SELECT name FROM dirty LIMIT ?", (limit,))]

    def dirty_among(self, names: Sequence[str]) -> set[str]:
        """Those of these structure files whose replicas wait for a refresh."""
        found: set[str] = set()
        for part, marks in in_chunks(names):
            rows = self.db.execute(f"SELECT name FROM dirty WHERE name IN ({marks})", part)
            found.update(str(row[0]) for row in rows)
        return found

    def clean(self, names: Iterable[str], marks: dict[str, int] | None = None) -> None:
        """Clear the refresh marks of these structure files; with `marks` (`dirty_marks` taken
        before their copies were made), only of those not marked again since."""
        done = [n for n in names if marks is None or self._dirtied.get(n, 0) == marks.get(n, 0)]
        with self._transaction():
            self.db.executemany("DELETE FROM dirty WHERE name = ?", [(n,) for n in done])
        for name in done:
            self._dirtied.pop(name, None)

    def count_dirty(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM dirty").fetchone()[0])

    # -- the change feed of structure files (archive/changes.py) --------------------------------

    def _start_feed(self) -> None:
        """Name the feed once, numbering the structure files known before it existed."""
        if self.get_meta("feed") is not None:
            return
        with self._transaction():
            self.db.executemany(
                "INSERT INTO changes (name, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(name, seq) for seq, name in enumerate(sorted(self._structures()), start=1)],
            )
            self.set_meta("feed", uuid.uuid4().hex)

    def _structures(self) -> Iterator[str]:
        """The names of every structure file."""
        for key, rest in self.db.execute(
            "SELECT id, rest FROM files WHERE kind = ?", (KIND_CODES["structure"],)
        ):
            yield name_of(int(key), bytes(rest))

    @property
    def feed(self) -> str:
        """The feed's id, drawn once: a follower that finds another starts over."""
        return str(self.get_meta("feed"))

    def record_changes(self, names: Iterable[str]) -> None:
        """Number these structure files' latest change."""
        with self._transaction():
            self.db.executemany(
                f"INSERT INTO changes (name, seq) VALUES (?, {NEXT_CHANGE})"
                " ON CONFLICT (name) DO UPDATE SET seq = excluded.seq",
                [(name,) for name in dict.fromkeys(names)],
            )

    def last_change(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])

    def changes_after(self, after: int, limit: int) -> list[tuple[str, int]]:
        """The structure files changed after number `after`, in change order."""
        rows = self.db.execute(
            "SELECT name, seq FROM changes WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
        )
        return [(str(name), int(seq)) for name, seq in rows]

    def structure_page(self, after: str, limit: int) -> list[str]:
        """Structure file names in key order (their names' order), the first `limit` after
        `after`."""
        start = self._start(("structure", after))
        if start is None:
            return []
        rows = self.db.execute(
            "SELECT id, rest FROM files WHERE kind = ? AND id >= ? ORDER BY id LIMIT ?",
            (KIND_CODES["structure"], start, limit),
        )
        return [name_of(int(key), bytes(rest)) for key, rest in rows]
