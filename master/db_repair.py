"""The repair pass's tables in MasterDB: the files and nodes marked for it to look at, the steps of
its full scan, and what it found (files below target and why, files above target)."""

from collections.abc import Iterable, Sequence

from .db_keys import FILE_COLUMNS, FileKeys, next_key
from .db_rows import FileRow, Problem, Replicas
from .file_ids import FIRST_ID, KIND_CODES, holder_numbers

# Marked files `count_marked` counts at most: after an import of millions of files, a count of
# them all would make `status` as slow as the files are many.
MARKED_COUNTED = 10_000


# The first row of a table of file keys, looked for through its key: PostgreSQL then marks the
# index entries of rows deleted for good as it passes them, and the next look skips them, where a
# scan of the table would read every deleted row again until the table is vacuumed (after the
# repair pass took the million marks of an import, say). Not in EXISTS, whose ORDER BY PostgreSQL
# drops.
_FIRST = "ORDER BY id LIMIT 1"


class RepairQueues(FileKeys):
    """What the repair pass is to look at, and what it found."""

    # -- files to check -------------------------------------------------------------------------

    def mark(self, files: Iterable[tuple[str, str]]) -> None:
        """Have the repair pass look at these files again."""
        with self._transaction():
            self._mark_ids(row.id for row in self._lookup(files).values())

    def mark_node(self, node: str) -> None:
        """Have the repair pass look at every file of a node again, from its first one."""
        self.db.execute(
            "INSERT INTO nodes_to_check (node, next_id) VALUES (?, ?)"
            " ON CONFLICT (node) DO UPDATE SET next_id = excluded.next_id",
            (node, FIRST_ID),
        )

    def take_marked(self, limit: int) -> list[Replicas]:
        """Up to `limit` marked files, unmarked as they are returned: half for marked files,
        the rest for the files of marked nodes, and what those leave for marked files again."""
        with self._transaction():
            files = self._take("to_check", limit // 2)
            files += self._take_node_files(limit - len(files))
            files += self._take("to_check", limit - len(files))
        return list({(f.kind, f.name): f for f in files}.values())

    def any_marked(self) -> bool:
        """Whether the repair pass has a marked file or node to look at."""
        row = self.db.execute(
            f"SELECT (SELECT id FROM to_check {_FIRST}) IS NOT NULL"
            " OR EXISTS (SELECT 1 FROM nodes_to_check)"
        ).fetchone()
        return bool(row[0])

    def count_marked(self) -> tuple[int, int]:
        """How many files (MARKED_COUNTED at most: counting more would cost what the marks
        do), and how many nodes, are marked for the repair pass to look at."""
        row = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM to_check ORDER BY id LIMIT ?) marked),"
            " (SELECT COUNT(*) FROM nodes_to_check)",
            (MARKED_COUNTED,),
        ).fetchone()
        return int(row[0]), int(row[1])

    def take_over_target(self, limit: int) -> list[Replicas]:
        """Up to `limit` files recorded above target, as they are now, no longer recorded."""
        with self._transaction():
            return self._take("over_target", limit)

    def _take(self, table: str, limit: int) -> list[Replicas]:
        """The first `limit` files of a table of file keys, deleted from it."""
        if limit <= 0:
            return []
        ids = [
            int(row[0])
            for row in self.db.execute(f"SELECT id FROM {table} ORDER BY id LIMIT ?", (limit,))
        ]
        if ids:
            self.db.execute(f"DELETE FROM {table} WHERE id <= ?", (ids[-1],))
        return self._replicas(ids)

    def _take_node_files(self, limit: int) -> list[Replicas]:
        """Up to `limit` files of marked nodes, moving each node's position on (a node whose
        last file was reached is no longer marked)."""
        files: list[Replicas] = []
        marked = self.db.execute("SELECT node, next_id FROM nodes_to_check").fetchall()
        for node, start in marked:
            wanted = limit - len(files)
            if wanted <= 0:
                break
            ids = [
                int(row[0])
                for row in self.db.execute(
                    "SELECT id FROM held WHERE node = ? AND id >= ? ORDER BY id LIMIT ?",
                    (self._known_number(node), start, wanted),
                )
            ]
            files += self._replicas(ids)
            following = next_key(ids[-1]) if len(ids) == wanted else None
            if following is None:
                self.db.execute("DELETE FROM nodes_to_check WHERE node = ?", (node,))
            else:
                self.db.execute(
                    "UPDATE nodes_to_check SET next_id = ? WHERE node = ?", (following, node)
                )
        return files

    def _replicas(self, ids: Sequence[int]) -> list[Replicas]:
        """The files of these keys, each with its target and holders."""
        return [
            Replicas(row.kind, row.name, row.size, row.target, self._holders(row))
            for row in self._rows(ids)
        ]

    # -- the full scan --------------------------------------------------------------------------

    def scan(
        self,
        counting: Sequence[str],
        usable: int,
        unreliable_extra: int,
        start: int,
        limit: int,
    ) -> tuple[list[tuple[str, str]], int | None]:
        """A step of the full scan: the files below or above target among the first `limit`
        from key `start` on, and the key to go on from (None once the last file was reached).
        It reads on a connection of its own, so that it can run in a thread while the master
        goes on serving."""
        reader = self.engine.reader()
        rows = [
            FileRow(*row)
            for row in reader.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE id >= ? ORDER BY id LIMIT ?",
                (start, limit),
            )
        ]
        numbers = reader.execute(
            "SELECT n.id, n.num, s.reliability FROM node_numbers n LEFT JOIN nodes s ON s.id = n.id"
        ).fetchall()
        reliable = {
            int(number) for _, number, reliability in numbers if reliability not in (None, "low")
        }
        counted = {int(number) for node, number, _ in numbers if node in counting}
        found = []
        for row in rows:
            have = [number for number in holder_numbers(row.holders) if number in counted]
            extra = 0 if any(number in reliable for number in have) else unreliable_extra
            if len(have) < min(row.target + extra, usable) or len(have) > row.target:
                found.append((row.kind, row.name))
        return found, next_key(rows[-1].id) if len(rows) == limit else None

    # -- what the repair pass found -------------------------------------------------------------

    def record_review(
        self,
        short: Iterable[Problem],
        not_short: Iterable[tuple[str, str]],
        over: Iterable[tuple[str, str]],
        not_over: Iterable[tuple[str, str]],
    ) -> None:
        """Record what the repair pass found of the files it just looked at: which are below
        target and why, and which have copies above target (for the trim step)."""
        short, not_short, over, not_over = list(short), list(not_short), list(over), list(not_over)
        with self._transaction():
            found = self._lookup([(p.kind, p.name) for p in short] + not_short + over + not_over)
            self._insert_rows(
                "INSERT INTO short (id, kind, have, want, size, cause)",
                [
                    (found[key].id, KIND_CODES[p.kind], p.have, p.want, p.size, p.cause)
                    for p in short
                    if (key := (p.kind, p.name)) in found
                ],
                "ON CONFLICT (id) DO UPDATE SET have = excluded.have,"
                " want = excluded.want, size = excluded.size, cause = excluded.cause",
                key=1,
            )
            self._delete_ids("short", [found[key].id for key in not_short if key in found])
            if self.db.execute(f"SELECT 1 FROM over_target {_FIRST}").fetchone() is not None:
                self._delete_ids("over_target", [found[key].id for key in not_over if key in found])
            self._insert_rows(
                "INSERT INTO over_target (id)",
                [(found[key].id,) for key in over if key in found],
                "ON CONFLICT DO NOTHING",
            )

    def mark_short(self) -> None:
        """Have the repair pass look again at every file below target: why each is (a copy
        readable or not, a node to place one or not) depends on nodes that just changed."""
        self.db.execute(
            "INSERT INTO to_check (id) SELECT id FROM short WHERE true ON CONFLICT DO NOTHING"
        )
