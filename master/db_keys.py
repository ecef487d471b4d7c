"""What every part of MasterDB (master/db.py) stands on: its connection and small settings, the
numbers nodes' copies are kept under, files found by their keys (master/file_ids.py), and
statements of many rows."""

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from .db_rows import FileRow
from .engine import Connection, Engine
from .file_ids import (
    FIRST_ID,
    KIND_CODES,
    LAST_ID,
    SPREAD_KEY,
    candidates,
    holder_numbers,
    key_taken,
    natural_id,
    place,
    rest_of,
)

# A file's row as MasterDB reads it (FileRow).
FILE_COLUMNS = "id, kind, rest, size, refs, target, holders"

T = TypeVar("T")

# Rows one INSERT or DELETE of many rows takes (MasterDB._insert_rows): at most 3,000 values, well
# under either engine's bound on parameters.
ROWS_PER_STATEMENT = 500


def in_parts(rows: Sequence[T]) -> Iterator[Sequence[T]]:
    """The rows in parts of ROWS_PER_STATEMENT, each for one statement (MasterDB._insert_rows)."""
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        yield rows[start : start + ROWS_PER_STATEMENT]


def next_key(start: int | None) -> int | None:
    """The key after `start`, None past the last."""
    return None if start is None or start == LAST_ID else start + 1


class FileKeys:
    """The state the parts of MasterDB share; MasterDB.__init__ sets it."""

    engine: Engine
    db: Connection
    where: str
    # How far past its natural key a name may be (master/file_ids.py), kept under SPREAD_KEY.
    _spread: int
    # The number each node's copies are kept under, and the other way round.
    _numbers: dict[str, int]
    _nodes_by_number: dict[int, str]

    def close(self) -> None:
        self.engine.close()

    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        return self.engine.transaction()

    # -- small settings -------------------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # -- node numbers and file keys -------------------------------------------------------------

    def _read_numbers(self) -> None:
        """Read the node numbers from the database: at the start, and for a node not known yet."""
        self._numbers = {
            str(node): int(number)
            for node, number in self.db.execute("SELECT id, num FROM node_numbers")
        }
        self._nodes_by_number = {number: node for node, number in self._numbers.items()}

    def _known_number(self, node: str) -> int:
        """The number a node's copies are kept under, for a read or a removal: 0, which no copy
        has, for a node that never held one (no number is given to it here)."""
        if node not in self._numbers:
            self._read_numbers()
        return self._numbers.get(node, 0)

    def _number(self, node: str) -> int:
        """The number a node's copies are kept under, given the first time it holds one."""
        if not self._known_number(node):
            self.db.execute(
                "INSERT INTO node_numbers (id, num)"
                " SELECT ?, COALESCE(MAX(num), 0) + 1 FROM node_numbers",
                (node,),
            )
            self._read_numbers()
        return self._numbers[node]

    def _holders(self, row: FileRow) -> tuple[str, ...]:
        """The nodes holding a file, by name."""
        return tuple(self._nodes_by_number[number] for number in holder_numbers(row.holders))

    def _rows(self, ids: Sequence[int]) -> list[FileRow]:
        """The rows of the files with these keys (those that exist)."""
        found: list[FileRow] = []
        for part in in_parts([(key,) for key in ids]):
            chosen, values = self.engine.rows(part)
            found += [
                FileRow(*row)
                for row in self.db.execute(
                    f"SELECT {FILE_COLUMNS} FROM files WHERE id IN ({chosen})", values
                )
            ]
        return found

    def _find(
        self, files: Iterable[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], FileRow], set[int]]:
        """The rows of these files (kind, name) that exist, and every key taken among those
        their files may have (file_ids.candidates)."""
        # A row is matched by its kind, key and rest without making its name: by the natural
        # key and the rest of the name, or (a name that did not get its natural key) by all of
        # it, which only a spread above 0 allows.
        wanted: dict[tuple[int, int, bytes], tuple[str, str]] = {}
        for kind, name in files:
            wanted[(KIND_CODES[kind], natural_id(name), rest_of(name))] = (kind, name)
            if self._spread:
                wanted[(KIND_CODES[kind], FIRST_ID, bytes.fromhex(name))] = (kind, name)
        if self._spread:
            keys = candidates({name for _, name in wanted.values()}, self._spread)
        else:
            keys = [key for _, key, _ in wanted]
        found: dict[tuple[str, str], FileRow] = {}
        occupied: set[int] = set()
        for row in self._rows(keys):
            occupied.add(row.id)
            match = (row.code, FIRST_ID if len(row.rest) == 32 else row.id, row.rest)
            if match in wanted:
                found[wanted[match]] = row
        return found, occupied

    def _lookup(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], FileRow]:
        """The rows of these files (kind, name) that exist."""
        return self._find(files)[0]

    def _place(
        self, missing: Iterable[tuple[str, str]], occupied: set[int]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        """Keys for new files, the spread kept if it grew (file_ids.place)."""
        placed, spread = place(missing, occupied, self._spread, partial(key_taken, self.db))
        if spread != self._spread:
            self._spread = spread
            self.set_meta(SPREAD_KEY, spread)
        return placed

    def _start(self, after: tuple[str, str]) -> int | None:
        """The first key after a file (kind, name) in key order, wherever a walk that gave it
        last resumes; the first key of all after ("", "")."""
        if not after[1]:
            return FIRST_ID
        row = self._lookup([after]).get(after)
        return next_key(row.id if row is not None else natural_id(after[1]))

    # -- the holders of files -------------------------------------------------------------------

    def holders(self, kind: str, name: str) -> list[str]:
        return self.holders_of(kind, [name])[name]

    def holders_of(self, kind: str, names: Sequence[str]) -> dict[str, list[str]]:
        """`holders` of many files, in a few queries."""
        found: dict[str, list[str]] = {name: [] for name in names}
        for (_, name), row in self._lookup((kind, name) for name in names).items():
            found[name] = list(self._holders(row))
        return found

    # -- statements of many rows ----------------------------------------------------------------

    def _mark_ids(self, ids: Iterable[int]) -> None:
        """Have the repair pass look at the files of these keys again."""
        self._insert_rows(
            "INSERT INTO to_check (id)", [(key,) for key in ids], "ON CONFLICT DO NOTHING"
        )

    def _insert_rows(
        self, head: str, rows: Sequence[Sequence[Any]], tail: str, key: int = 0
    ) -> None:
        """`head VALUES (...), (...) tail` for the rows, ROWS_PER_STATEMENT a statement: one
        statement for many rows costs PostgreSQL one round trip and one firing of the triggers
        that keep its totals. With `key`, of rows whose first `key` values repeat only the last
        is kept (an upsert may not change a row twice in one statement)."""
        if key:
            rows = list({tuple(row[:key]): row for row in rows}.values())
        for part in in_parts(rows):
            chosen, values = self.engine.rows(part)
            self.db.execute(f"{head} {chosen} {tail}", values)

    def _delete_ids(self, table: str, ids: Sequence[int]) -> None:
        """Delete the rows of a table keyed by file (its `id`) of these files, many a statement."""
        for part in in_parts([(key,) for key in ids]):
            chosen, values = self.engine.rows(part)
            self.db.execute(f"DELETE FROM {table} WHERE id IN ({chosen})", values)
