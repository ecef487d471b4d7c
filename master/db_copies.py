"""MasterDB's nodes and their copies: node rows, the inventory batches nodes send, the copies the
master makes or forgets, reference counts and targets, and the files each node holds."""

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from archive.cluster import KINDS

from .db_keys import FileKeys, in_parts
from .db_rows import FileRef, NodeRow, TargetFn
from .db_structures import NEXT_CHANGE
from .file_ids import KIND_CODES, holders_text, name_of

# The holders of a file without one of them (its number between commas, the parameter).
_WITHOUT_HOLDER = "substr(replace(',' || holders, ?, ','), 2)"


class Copies(FileKeys):
    """Nodes, the copies they hold, and how those copies are learned and forgotten."""

    # -- nodes ----------------------------------------------------------------------------------

    def nodes(self) -> list[NodeRow]:
        rows = self.db.execute(
            "SELECT id, address, domain, reliability, admin_state, state, free, total, seq,"
            " groups, last_seen, last_scrub FROM nodes ORDER BY id"
        ).fetchall()
        return [
            NodeRow(
                id=row[0],
                address=row[1],
                domain=row[2],
                reliability=row[3],
                admin_state=row[4],
                state=row[5],
                free=row[6],
                total=row[7],
                seq=row[8],
                groups=json.loads(row[9]),
                last_seen=row[10],
                last_scrub=row[11],
            )
            for row in rows
        ]

    def save_node(self, node: NodeRow) -> None:
        self.db.execute(
            "INSERT INTO nodes (id, address, domain, reliability, admin_state, state, free, total,"
            " seq, groups, last_seen, last_scrub) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (id) DO UPDATE SET address=excluded.address, domain=excluded.domain,"
            " reliability=excluded.reliability, admin_state=excluded.admin_state,"
            " state=excluded.state, free=excluded.free, total=excluded.total,"
            " groups=excluded.groups, last_seen=excluded.last_seen, last_scrub=excluded.last_scrub",
            (
                node.id,
                node.address,
                node.domain,
                node.reliability,
                node.admin_state,
                node.state,
                node.free,
                node.total,
                node.seq,
                json.dumps(node.groups),
                node.last_seen,
                node.last_scrub,
            ),
        )

    def forget_locations(self, node: str) -> int:
        """Drop every copy on a node (dead, or its disk was replaced) and reset its position."""
        with self._transaction():
            number = self._known_number(node)
            on_node = "SELECT id FROM held WHERE node = ?"
            self.db.execute(
                f"INSERT INTO to_check (id) {on_node} ON CONFLICT DO NOTHING", (number,)
            )
            self.db.execute(
                f"UPDATE files SET holders = {_WITHOUT_HOLDER} WHERE id IN ({on_node})",
                (f",{number},", number),
            )
            count = int(self.db.execute("DELETE FROM held WHERE node = ?", (number,)).rowcount)
            self.db.execute("UPDATE nodes SET seq = 0 WHERE id = ?", (node,))
            self.db.execute("DELETE FROM active WHERE node = ?", (node,))
            self.db.execute("DELETE FROM diverged WHERE node = ?", (node,))
        return count

    # -- inventory ------------------------------------------------------------------------------

    def apply_inventory(
        self, node: str, entries: Sequence[dict[str, Any]], seq: int, targets: TargetFn
    ) -> None:
        """Record a batch of a node's inventory entries and its new position, atomically."""
        with self._transaction():
            # Runs of adds and of removes in their order; within a run each statement touches
            # one table, so many rows a statement give what one row at a time would.
            for adds, run in itertools.groupby(entries, key=lambda entry: entry["op"] == "add"):
                if adds:
                    changed = self._add_copies(
                        node, [(e["kind"], e["name"], e["size"]) for e in run], targets, True
                    )
                else:
                    changed = self._remove_copies(node, [(e["kind"], e["name"]) for e in run])
                self._mark_ids(changed)
            self._settle_pending_refs(targets)
            self.db.execute("UPDATE nodes SET seq = ? WHERE id = ?", (seq, node))

    def _add_copies(
        self,
        node: str,
        files: Sequence[tuple[str, str, int]],
        targets: TargetFn,
        resize: bool,
    ) -> list[int]:
        """Record copies on a node of files (kind, name, size), the files that are new to the
        master too; with `resize`, a known file's size is the one given. Their keys."""
        number = self._number(node)
        sizes = {(kind, name): size for kind, name, size in files}
        found, occupied = self._find(sizes)
        placed = self._place([key for key in sizes if key not in found], occupied)
        self._insert_rows(
            "INSERT INTO files (id, kind, rest, size, target, holders)",
            [
                (
                    key,
                    KIND_CODES[kind],
                    rest,
                    sizes[(kind, name)],
                    targets(kind, sizes[(kind, name)], 0),
                    holders_text([number]),
                )
                for (kind, name), (key, rest) in placed.items()
            ],
            "",
        )
        if resize:
            self.db.executemany(
                "UPDATE files SET size = ? WHERE id = ?",
                [(sizes[key], row.id) for key, row in found.items() if row.size != sizes[key]],
            )
        joined = [(row.id,) for row in found.values() if not row.held_by(number)]
        for part in in_parts(joined):
            chosen, values = self.engine.rows(part)
            self.db.execute(
                f"UPDATE files SET holders = holders || ? WHERE id IN ({chosen})",
                (holders_text([number]), *values),
            )
        self._insert_rows(
            "INSERT INTO held (node, id)",
            [(number, key) for (key, _) in placed.values()] + [(number, key) for (key,) in joined],
            "ON CONFLICT DO NOTHING",
        )
        # A structure file the master learns of with no active copy (its database was lost) is
        # appended to on the first holder it hears of, and is new to the change feed.
        structures = [(name,) for kind, name in sizes if kind == "structure"]
        if structures:
            self.db.executemany(
                "INSERT INTO active (name, node) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(name, node) for (name,) in structures],
            )
            self.db.executemany(
                f"INSERT INTO changes (name, seq) VALUES (?, {NEXT_CHANGE}) ON CONFLICT DO NOTHING",
                structures,
            )
        return [row.id for row in found.values()] + [key for key, _ in placed.values()]

    def _remove_copies(self, node: str, files: Sequence[tuple[str, str]]) -> list[int]:
        """Forget the copies on a node of these files (kind, name); the keys of those known."""
        number = self._known_number(node)
        ids = [(row.id,) for row in self._lookup(files).values()]
        for part in in_parts(ids):
            chosen, values = self.engine.rows(part)
            self.db.execute(
                f"DELETE FROM held WHERE node = ? AND id IN ({chosen})", (number, *values)
            )
            self.db.execute(
                f"UPDATE files SET holders = {_WITHOUT_HOLDER} WHERE id IN ({chosen})",
                (f",{number},", *values),
            )
        self.db.executemany(
            "DELETE FROM diverged WHERE name = ? AND node = ?",
            [(name, node) for kind, name in files if kind == "structure"],
        )
        return [key for (key,) in ids]

    def _settle_pending_refs(self, targets: TargetFn) -> None:
        """Give contents that just arrived the reference counts sent before they did."""
        if self.db.execute("SELECT 1 FROM pending_refs LIMIT 1").fetchone() is None:
            return
        pending = dict(self.db.execute("SELECT name, refs FROM pending_refs").fetchall())
        arrived = self._lookup(("content", name) for name in pending)
        self.db.executemany(
            "UPDATE files SET refs = ?, target = ? WHERE id = ?",
            [
                (pending[name], targets("content", row.size, pending[name]), row.id)
                for (_, name), row in arrived.items()
            ],
        )
        self.db.executemany(
            "DELETE FROM pending_refs WHERE name = ?", [(name,) for _, name in arrived]
        )
        self._mark_ids([row.id for row in arrived.values()])

    def add_locations(self, node: str, files: Iterable[FileRef], targets: TargetFn) -> None:
        """Record copies the master made itself, before the node's inventory confirms them."""
        with self._transaction():
            added = self._add_copies(
                node, [(ref.kind, ref.name, ref.size) for ref in files], targets, False
            )
            self._mark_ids(added)

    def remove_locations(self, node: str, files: Iterable[tuple[str, str]]) -> None:
        """Forget copies a node deleted or found bad, before its inventory says so."""
        with self._transaction():
            self._mark_ids(self._remove_copies(node, list(files)))

    def set_refs(self, refs: dict[str, int], targets: TargetFn) -> None:
        """Record contents' reference counts (sent by the index) and the targets they give."""
        with self._transaction():
            known = self._lookup(("content", name) for name in refs)
            for (_, name), row in known.items():
                self.db.execute(
                    "UPDATE files SET refs = ?, target = ? WHERE id = ?",
                    (refs[name], targets("content", row.size, refs[name]), row.id),
                )
            self._mark_ids([row.id for row in known.values()])
            for name, count in refs.items():
                if ("content", name) in known:
                    continue
                # Not heard of yet (its upload is still on the way): kept until it arrives.
                self.db.execute(
                    "INSERT INTO pending_refs (name, refs) VALUES (?, ?)"
                    f" ON CONFLICT (name) DO UPDATE SET refs = {self.engine.greatest}(pending_refs.refs,"
                    " excluded.refs)",
                    (name, count),
                )

    def retarget(self, targets: TargetFn) -> None:
        """Recompute every stored target (the policy in the configuration changed)."""
        rows = self.db.execute("SELECT id, kind, size, refs, target FROM files").fetchall()
        with self._transaction():
            changed = [
                (wanted, key)
                for key, kind, size, refs, target in rows
                if (wanted := targets(KINDS[kind], size, refs)) != target
            ]
            self.db.executemany("UPDATE files SET target = ? WHERE id = ?", changed)
            self._mark_ids([key for _, key in changed])

    # -- files by node --------------------------------------------------------------------------

    def files_on(self, node: str, limit: int, after: tuple[str, str] = ("", "")) -> list[FileRef]:
        """The files on a node in key order, the first `limit` after `after` (kind, name)."""
        start = self._start(after)
        if start is None:
            return []
        rows = self.db.execute(
            "SELECT f.kind, f.id, f.rest, f.size FROM held h JOIN files f ON f.id = h.id"
            " WHERE h.node = ? AND h.id >= ? ORDER BY h.id LIMIT ?",
            (self._known_number(node), start, limit),
        ).fetchall()
        return [
            FileRef(KINDS[kind], name_of(int(key), bytes(rest)), int(size))
            for kind, key, rest, size in rows
        ]

    def targets_of(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        return {key: row.target for key, row in self._lookup(files).items()}

    def iter_files(self) -> Iterator[tuple[str, str]]:
        """Every file (kind, name) the master knows of."""
        for kind, key, rest in self.db.execute("SELECT kind, id, rest FROM files"):
            yield KINDS[kind], name_of(int(key), bytes(rest))
