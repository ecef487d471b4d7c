"""The master's persistent view of the cluster, in SQLite or PostgreSQL (master/engine.py):
nodes, files and their copies, moves.

Everything a restarted master needs is here, so it rebuilds its view without rescanning a disk:
nodes send only the inventory entries after the position stored with their copies, in the same
transaction, so the two can never disagree. A file is keyed by an integer from its name
(master/file_ids.py) and holds the numbers of the nodes with a copy; `held` has the same copies
by node. The totals `status` shows (files and bytes by kind and by node) are kept by triggers,
in the transaction of each change they count, so they are read at once and a crash cannot make
them drift; `recount` checks them against a full count.
"""

import contextlib
import itertools
import json
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from archive.cluster import KINDS
from archive.sql import in_chunks

from .engine import Connection, open_engine
from .file_ids import (
    FIRST_ID,
    KIND_CODES,
    LAST_ID,
    SPREAD_KEY,
    candidates,
    holder_numbers,
    holders_text,
    key_taken,
    name_of,
    natural_id,
    place,
    rest_of,
)
from .schema import MASTER

# The totals counted anew from every file and copy, as the schema's triggers keep them.
COUNT_KINDS = "SELECT kind, COUNT(*), COALESCE(SUM(size), 0) FROM files GROUP BY kind"
COUNT_NODES = (
    "SELECT h.node, COUNT(*), COALESCE(SUM(f.size), 0) FROM held h"
    " LEFT JOIN files f ON f.id = h.id GROUP BY h.node"
)
COUNT_CAUSES = "SELECT cause, COUNT(*), COALESCE(SUM(size), 0) FROM short GROUP BY cause"

# A file's row as MasterDB reads it (FileRow).
FILE_COLUMNS = "id, kind, rest, size, refs, target, holders"

T = TypeVar("T")

# Marked files `count_marked` counts at most: after an import of millions of files, a count of
# them all would make `status` as slow as the files are many.
MARKED_COUNTED = 10_000

# Rows one INSERT or DELETE of many rows takes (MasterDB._insert_rows): at most 3,000 values, well
# under either engine's bound on parameters.
ROWS_PER_STATEMENT = 500

# The next number of the change feed (archive/changes.py), given to a file changed anew.
NEXT_CHANGE = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM changes)"

# The replica target of a file from its kind, size and reference count.
TargetFn = Callable[[str, int, int], int]

# Why a file is below target (Needy.cause), as /status and fsck count them.
REPAIRING, CANNOT_PLACE, NO_READABLE_COPY = "repairing", "cannot_place", "no_readable_copy"
CAUSES = (REPAIRING, CANNOT_PLACE, NO_READABLE_COPY)


@dataclass
class NodeRow:
    id: str
    address: str
    domain: str = "default"
    reliability: str = "normal"
    admin_state: str = "alive"
    state: str = "alive"
    free: int = 0
    total: int = 0
    seq: int = 0
    groups: list[int] = field(default_factory=list)
    last_seen: float = 0.0
    last_scrub: float = 0.0
    # Free space the node keeps, and whether it refuses new files for lack of space: as its
    # last stats said (not stored: a node says it again when it joins).
    reserve: int = 0
    full: bool = False

    @property
    def reason(self) -> str | None:
        """Why the node is in a state no admin chose: "full" for a read-only node whose disk
        is at its reserve."""
        full = self.full and self.state == "read-only" and self.admin_state == "alive"
        return "full" if full else None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "address": self.address,
            "domain": self.domain,
            "reliability": self.reliability,
            "state": self.state,
            "admin_state": self.admin_state,
            "reason": self.reason,
            "free": self.free,
            "total": self.total,
            "reserve": self.reserve,
            "full": self.full,
            "groups": self.groups,
        }


@dataclass(frozen=True, slots=True)
class FileRef:
    kind: str
    name: str
    size: int


@dataclass(frozen=True, slots=True)
class Needy:
    """A file with fewer counting replicas than its target."""

    kind: str
    name: str
    size: int
    have: int
    want: int
    holders: tuple[str, ...]

    def cause(self, readable: Collection[str], receivers: Collection[str]) -> str:
        """Why it is below target, one of CAUSES: no holder can be read now; or every node
        taking new files holds it already, so no copy can be placed; or copies are being made."""
        if not any(node in readable for node in self.holders):
            return NO_READABLE_COPY
        if all(node in self.holders for node in receivers):
            return CANNOT_PLACE
        return REPAIRING


@dataclass(frozen=True, slots=True)
class Problem:
    """A file the repair pass found below target: its replicas that count, its target then,
    and why (one of CAUSES)."""

    kind: str
    name: str
    have: int
    want: int
    size: int
    cause: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "replicas": self.have,
            "target": self.want,
            "cause": self.cause,
        }


class FileRow(NamedTuple):
    """A file's row as the files table keeps it: its key (master/file_ids.py), kind's code,
    what is kept of its name beside the key, size, reference count, replica target and
    holders (file_ids.holders_text)."""

    id: int
    code: int
    rest: bytes
    size: int
    refs: int
    target: int
    holders: str

    @property
    def kind(self) -> str:
        return KINDS[self.code]

    @property
    def name(self) -> str:
        return name_of(self.id, self.rest)

    def held_by(self, number: int) -> bool:
        return f",{number}," in f",{self.holders}"


@dataclass(frozen=True, slots=True)
class Replicas:
    """A file as the repair pass looks at it: its size, its target and every node holding it."""

    kind: str
    name: str
    size: int
    target: int
    holders: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Move:
    id: int
    kind: str
    name: str
    src: str
    dst: str
    size: int


def _differences(
    db: Connection, table: str, key: str, query: str
) -> dict[str, dict[str, list[int]]]:
    """Where a totals table differs from its count anew (rows of zero count as absent)."""
    kept = {
        row[0]: [int(row[1]), int(row[2])]
        for row in db.execute(f"SELECT {key}, files, bytes FROM {table}")
    }
    # int(): PostgreSQL's SUM of BIGINTs is a NUMERIC, which psycopg gives as a Decimal.
    counted = {row[0]: [int(row[1]), int(row[2])] for row in db.execute(query)}
    return {
        name: {"kept": kept.get(name, [0, 0]), "counted": counted.get(name, [0, 0])}
        for name in sorted(kept.keys() | counted.keys())
        if kept.get(name, [0, 0]) != counted.get(name, [0, 0])
    }


def _parts(rows: Sequence[T]) -> Iterator[Sequence[T]]:
    """The rows in parts of ROWS_PER_STATEMENT, each for one statement (MasterDB._insert_rows)."""
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        yield rows[start : start + ROWS_PER_STATEMENT]


# The kept totals `recount` checks: what its report calls them, their table and key, and how
# to count them anew.
RECOUNTED = (
    ("kinds", "kind_totals", "kind", COUNT_KINDS),
    ("nodes", "node_totals", "node", COUNT_NODES),
    ("causes", "short_totals", "cause", COUNT_CAUSES),
)


# The first row of a table of file keys, looked for through its key: PostgreSQL then marks the
# index entries of rows deleted for good as it passes them, and the next look skips them, where a
# scan of the table would read every deleted row again until the table is vacuumed (after the
# repair pass took the million marks of an import, say). Not in EXISTS, whose ORDER BY PostgreSQL
# drops.
_FIRST = "ORDER BY id LIMIT 1"

# The holders of a file without one of them (its number between commas, the parameter).
_WITHOUT_HOLDER = "substr(replace(',' || holders, ?, ','), 2)"


def _after(start: int | None) -> int | None:
    """The key after `start`, None past the last."""
    return None if start is None or start == LAST_ID else start + 1


class MasterDB:
    def __init__(self, where: Path | str, cluster: str | None = None) -> None:
        """The metadata at `where`, a path (SQLite) or a metadata URL; `cluster` (its id, from
        archive.metadata.cluster_id) refuses another cluster's database."""
        self.engine = open_engine(where, MASTER, cluster)
        self.db = self.engine.db
        self.where = self.engine.where
        try:
            self._start_feed()
        except BaseException:
            self.engine.close()
            raise
        # How often each structure file waiting for a refresh was marked since this process
        # started: a refresh clears a mark only if no other came while it copied.
        self._dirtied: dict[str, int] = {}
        self._spread = int(self.get_meta(SPREAD_KEY) or 0)
        self._numbers: dict[str, int] = {}
        self._nodes_by_number: dict[int, str] = {}
        self._read_numbers()

    def close(self) -> None:
        self.engine.close()

    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        return self.engine.transaction()

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

    # -- node numbers and file keys -------------------------------------------------------------

    def _read_numbers(self) -> None:
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
        return tuple(self._nodes_by_number[number] for number in holder_numbers(row.holders))

    def _rows(self, ids: Sequence[int]) -> list[FileRow]:
        """The rows of the files with these keys (those that exist)."""
        found: list[FileRow] = []
        for part in _parts([(key,) for key in ids]):
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
        return _after(row.id if row is not None else natural_id(after[1]))

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
        for part in _parts(joined):
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
        for part in _parts(ids):
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
        with self._transaction():
            self._mark_ids(self._remove_copies(node, list(files)))

    def set_refs(self, refs: dict[str, int], targets: TargetFn) -> None:
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

    # -- queries --------------------------------------------------------------------------------

    def holders(self, kind: str, name: str) -> list[str]:
        return self.holders_of(kind, [name])[name]

    def holders_of(self, kind: str, names: Sequence[str]) -> dict[str, list[str]]:
        """`holders` of many files, in a few queries."""
        found: dict[str, list[str]] = {name: [] for name in names}
        for (_, name), row in self._lookup((kind, name) for name in names).items():
            found[name] = list(self._holders(row))
        return found

    def structure_holders(self, names: Sequence[str]) -> dict[str, list[str]]:
        """`holders_of` structure files, each one's active copy first: the other copies lack the
        records appended since the master last refreshed them, and a reader believes the first
        holder that answers."""
        active = self.active_nodes(names)
        return {
            name: sorted(nodes, key=lambda node: node != active.get(name))
            for name, nodes in self.holders_of("structure", names).items()
        }

    def file_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(KINDS, 0)
        for kind, count in self.db.execute("SELECT kind, files FROM kind_totals"):
            counts[KINDS[kind]] = int(count)
        return counts

    def node_totals(self) -> dict[str, tuple[int, int]]:
        """Files and bytes held by each node, as the master knows them."""
        rows = self.db.execute(
            "SELECT n.id, t.files, t.bytes FROM node_totals t"
            " JOIN node_numbers n ON n.num = t.node WHERE t.files > 0"
        )
        return {str(node): (int(files), int(size)) for node, files, size in rows}

    def recount(self, mend: bool) -> dict[str, dict[str, dict[str, list[int]]]]:
        """The kept totals that differ from a count of every file, location and file below
        target, by kind, by node and by cause, each with what was kept and what was counted;
        with `mend`, the count replaces them. Empty when they agree, as they always should."""
        drift = {}
        with self._transaction():
            for label, table, key, query in RECOUNTED:
                found = _differences(self.db, table, key, query)
                if found:
                    drift[label] = {self._label(label, name): n for name, n in found.items()}
                if found and mend:
                    self.db.execute(f"DELETE FROM {table}")
                    self.db.execute(f"INSERT INTO {table} {query}")
        return drift

    def _label(self, totals: str, key: Any) -> str:
        """How the report of `recount` names a key of the totals: a kind or a node by name."""
        if totals == "kinds":
            return KINDS[key]
        if totals == "nodes":
            return self._nodes_by_number.get(key, str(key))
        return str(key)

    def storage(self) -> dict[str, int]:
        """Bytes of the database and of its write-ahead log."""
        return self.engine.storage()

    def short_counts(self) -> dict[str, int]:
        """How many files the repair pass last found below target, for each of CAUSES."""
        counts = dict.fromkeys(CAUSES, 0)
        for cause, files in self.db.execute("SELECT cause, files FROM short_totals"):
            counts[cause] = int(files)
        return counts

    def most_endangered(self, limit: int) -> list[Problem]:
        """The first `limit` files below target, fewest replicas first, then structure files,
        then the smallest."""
        return self._problems("ORDER BY s.have, s.kind DESC, s.size LIMIT ?", (limit,))

    def _problems(self, chosen: str, params: Sequence[Any]) -> list[Problem]:
        """The files below target a clause chooses (`s` is the short table)."""
        rows = self.db.execute(
            "SELECT s.id, s.kind, f.rest, s.have, s.want, s.size, s.cause FROM short s"
            f" JOIN files f ON f.id = s.id {chosen}",
            params,
        )
        return [
            Problem(
                KINDS[kind], name_of(int(key), bytes(rest)), int(have), int(want), int(size), cause
            )
            for key, kind, rest, have, want, size, cause in rows
        ]

    def short_after(self, after: tuple[str, str], limit: int) -> list[Problem]:
        """The files below target in key order (their names' order), the first `limit` after
        `after` (kind, name): a page of a walk over them all that can stop anywhere and resume
        from the last file it gave."""
        start = self._start(after)
        if start is None:
            return []
        return self._problems("WHERE s.id >= ? ORDER BY s.id LIMIT ?", (start, limit))

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

    def count_on(self, node: str) -> int:
        row = self.db.execute(
            "SELECT COUNT(*) FROM held WHERE node = ?", (self._known_number(node),)
        ).fetchone()
        return int(row[0])

    def targets_of(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        return {key: row.target for key, row in self._lookup(files).items()}

    # -- files to check -------------------------------------------------------------------------

    def _mark_ids(self, ids: Iterable[int]) -> None:
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
        for part in _parts(rows):
            chosen, values = self.engine.rows(part)
            self.db.execute(f"{head} {chosen} {tail}", values)

    def _delete_ids(self, table: str, ids: Sequence[int]) -> None:
        """Delete the rows of a table keyed by file (its `id`) of these files, many a statement."""
        for part in _parts([(key,) for key in ids]):
            chosen, values = self.engine.rows(part)
            self.db.execute(f"DELETE FROM {table} WHERE id IN ({chosen})", values)

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
        return found, _after(rows[-1].id) if len(rows) == limit else None

    def take_marked(self, limit: int) -> list[Replicas]:
        """Up to `limit` marked files, unmarked as they are returned: half for marked files,
        the rest for the files of marked nodes, and what those leave for marked files again."""
        with self._transaction():
            files = self._take("to_check", limit // 2)
            files += self._take_node_files(limit - len(files))
            files += self._take("to_check", limit - len(files))
        return list({(f.kind, f.name): f for f in files}.values())

    def any_marked(self) -> bool:
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
            following = _after(ids[-1]) if len(ids) == wanted else None
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

    def settle_diverged(self, pairs: Iterable[tuple[str, str]]) -> None:
        with self._transaction():
            self.db.executemany("DELETE FROM diverged WHERE name = ? AND node = ?", list(pairs))

    def count_diverged(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM diverged").fetchone()[0])

    def mark_dirty(self, names: Iterable[str]) -> None:
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

    # -- rebalance moves ------------------------------------------------------------------------

    def replace_moves(self, moves: Iterable[tuple[str, str, str, str, int]]) -> None:
        with self._transaction():
            self.db.execute("DELETE FROM moves")
            self.db.executemany(
                "INSERT INTO moves (kind, name, src, dst, size) VALUES (?,?,?,?,?)", list(moves)
            )

    def pending_moves(self, limit: int) -> list[Move]:
        rows = self.db.execute(
            "SELECT id, kind, name, src, dst, size FROM moves WHERE done = 0 ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()
        return [Move(*row) for row in rows]

    def finish_moves(self, ids: Iterable[int], outcome: int = 1) -> None:
        """Mark moves done (1) or skipped (2)."""
        with self._transaction():
            self.db.executemany(
                "UPDATE moves SET done = ? WHERE id = ?", [(outcome, i) for i in ids]
            )

    def move_progress(self) -> dict[str, int]:
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN done = 1 THEN 1 END), 0),"
            " COALESCE(SUM(CASE WHEN done = 2 THEN 1 END), 0),"
            " COALESCE(SUM(size), 0), COALESCE(SUM(CASE WHEN done = 1 THEN size END), 0)"
            " FROM moves"
        ).fetchone()
        # int(): PostgreSQL's SUM of BIGINTs is a NUMERIC, which psycopg gives as a Decimal.
        keys = ("files", "moved", "skipped", "bytes", "bytes_moved")
        return {key: int(value) for key, value in zip(keys, row, strict=True)}

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
        for key, rest in self.db.execute(
            "SELECT id, rest FROM files WHERE kind = ?", (KIND_CODES["structure"],)
        ):
            yield name_of(int(key), bytes(rest))

    @property
    def feed(self) -> str:
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

    def iter_files(self) -> Iterator[tuple[str, str]]:
        for kind, key, rest in self.db.execute("SELECT kind, id, rest FROM files"):
            yield KINDS[kind], name_of(int(key), bytes(rest))
