"""The master's persistent view of the cluster, in SQLite or PostgreSQL (master/engine.py):
nodes, files, locations, moves.

Everything a restarted master needs is here, so it rebuilds its view without rescanning a disk:
nodes send only the inventory entries after the position stored with their locations, in the
same transaction, so the two can never disagree. The totals `status` shows (files and bytes by
kind and by node) are kept by triggers, in the transaction of each change they count, so they
are read at once and a crash cannot make them drift; `recount` checks them against a full count.
"""

import contextlib
import itertools
import json
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from archive.sql import in_chunks

from .engine import Connection, open_engine
from .schema import MASTER

# The totals counted anew from every file and location, as the schema's triggers keep them.
COUNT_KINDS = "SELECT kind, COUNT(*), COALESCE(SUM(size), 0) FROM files GROUP BY kind"
COUNT_NODES = (
    "SELECT l.node, COUNT(*), COALESCE(SUM(f.size), 0) FROM locations l"
    " LEFT JOIN files f ON f.kind = l.kind AND f.name = l.name GROUP BY l.node"
)
COUNT_CAUSES = "SELECT cause, COUNT(*), COALESCE(SUM(size), 0) FROM short GROUP BY cause"

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

# Replicas on counting nodes fewer than the target (more when none is on a reliable node), which
# never exceeds the number of counting nodes.
SHORT = "have < {least}(target + CASE WHEN reliable = 0 THEN ? ELSE 0 END, ?)"


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


PROBLEM_COLUMNS = "kind, name, have, want, size, cause"


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


def _replicas_of(kind: str, name: str, size: int, target: int, holders: str | None) -> Replicas:
    """A file as the replica queries give it, its holders joined by commas."""
    return Replicas(kind, name, size, target, tuple(holders.split(",")) if holders else ())


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

    def close(self) -> None:
        self.engine.close()

    @property
    def _short(self) -> str:
        return SHORT.format(least=self.engine.least)

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
        """Drop every location of a node (dead, or its disk was replaced) and reset its position."""
        with self._transaction():
            self.db.execute(
                "INSERT INTO to_check (kind, name)"
                " SELECT kind, name FROM locations WHERE node = ? ON CONFLICT DO NOTHING",
                (node,),
            )
            count = int(self.db.execute("DELETE FROM locations WHERE node = ?", (node,)).rowcount)
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
                    self._apply_adds(node, list(run), targets)
                else:
                    self._apply_removes(node, list(run))
            self._mark((entry["kind"], entry["name"]) for entry in entries)
            self._settle_pending_refs(targets)
            self.db.execute("UPDATE nodes SET seq = ? WHERE id = ?", (seq, node))

    def _apply_adds(self, node: str, entries: list[dict[str, Any]], targets: TargetFn) -> None:
        self._insert_rows(
            "INSERT INTO files (kind, name, size, target)",
            [(e["kind"], e["name"], e["size"], targets(e["kind"], e["size"], 0)) for e in entries],
            "ON CONFLICT (kind, name) DO UPDATE SET size = excluded.size",
            key=2,
        )
        self._insert_rows(
            "INSERT INTO locations (kind, name, node)",
            [(e["kind"], e["name"], node) for e in entries],
            "ON CONFLICT DO NOTHING",
        )
        # A structure file the master learns of with no active copy (its database was lost) is
        # appended to on the first holder it hears of, and is new to the change feed.
        structures = [(e["name"],) for e in entries if e["kind"] == "structure"]
        if structures:
            self.db.executemany(
                "INSERT INTO active (name, node) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(name, node) for (name,) in structures],
            )
            self.db.executemany(
                f"INSERT INTO changes (name, seq) VALUES (?, {NEXT_CHANGE}) ON CONFLICT DO NOTHING",
                structures,
            )

    def _apply_removes(self, node: str, entries: list[dict[str, Any]]) -> None:
        self._delete_rows(
            "locations", "kind, name, node", [(e["kind"], e["name"], node) for e in entries]
        )
        self.db.executemany(
            "DELETE FROM diverged WHERE name = ? AND node = ?",
            [(e["name"], node) for e in entries if e["kind"] == "structure"],
        )

    def _settle_pending_refs(self, targets: TargetFn) -> None:
        """Give contents that just arrived the reference counts sent before they did."""
        if self.db.execute("SELECT 1 FROM pending_refs LIMIT 1").fetchone() is None:
            return
        rows = self.db.execute(
            "SELECT f.name, f.size, p.refs FROM pending_refs p"
            " JOIN files f ON f.kind = 'content' AND f.name = p.name"
        ).fetchall()
        for name, size, refs in rows:
            self.db.execute(
                "UPDATE files SET refs = ?, target = ? WHERE kind = 'content' AND name = ?",
                (refs, targets("content", size, refs), name),
            )
        self.db.executemany("DELETE FROM pending_refs WHERE name = ?", [(r[0],) for r in rows])
        self._mark(("content", row[0]) for row in rows)

    def add_locations(self, node: str, files: Iterable[FileRef], targets: TargetFn) -> None:
        """Record copies the master made itself, before the node's inventory confirms them."""
        added = list(files)
        with self._transaction():
            for ref in added:
                self.db.execute(
                    "INSERT INTO files (kind, name, size, target) VALUES (?,?,?,?)"
                    " ON CONFLICT DO NOTHING",
                    (ref.kind, ref.name, ref.size, targets(ref.kind, ref.size, 0)),
                )
                self.db.execute(
                    "INSERT INTO locations (kind, name, node) VALUES (?,?,?)"
                    " ON CONFLICT DO NOTHING",
                    (ref.kind, ref.name, node),
                )
            self._mark((ref.kind, ref.name) for ref in added)

    def remove_locations(self, node: str, files: Iterable[tuple[str, str]]) -> None:
        removed = list(files)
        with self._transaction():
            self.db.executemany(
                "DELETE FROM locations WHERE kind = ? AND name = ? AND node = ?",
                [(kind, name, node) for kind, name in removed],
            )
            self._mark(removed)

    def set_refs(self, refs: dict[str, int], targets: TargetFn) -> None:
        with self._transaction():
            for name, count in refs.items():
                row = self.db.execute(
                    "SELECT size FROM files WHERE kind = 'content' AND name = ?", (name,)
                ).fetchone()
                if row is not None:
                    self.db.execute(
                        "UPDATE files SET refs = ?, target = ? WHERE kind = 'content' AND name = ?",
                        (count, targets("content", row[0], count), name),
                    )
                    self._mark([("content", name)])
                else:
                    # Not heard of yet (its upload is still on the way): kept until it arrives.
                    self.db.execute(
                        "INSERT INTO pending_refs (name, refs) VALUES (?, ?)"
                        f" ON CONFLICT (name) DO UPDATE SET refs = {self.engine.greatest}(pending_refs.refs,"
                        " excluded.refs)",
                        (name, count),
                    )

    def retarget(self, targets: TargetFn) -> None:
        """Recompute every stored target (the policy in the configuration changed)."""
        rows = self.db.execute("SELECT kind, name, size, refs, target FROM files").fetchall()
        with self._transaction():
            for kind, name, size, refs, target in rows:
                wanted = targets(kind, size, refs)
                if wanted != target:
                    self.db.execute(
                        "UPDATE files SET target = ? WHERE kind = ? AND name = ?",
                        (wanted, kind, name),
                    )
                    self._mark([(kind, name)])

    # -- queries --------------------------------------------------------------------------------

    def holders(self, kind: str, name: str) -> list[str]:
        return self.holders_of(kind, [name])[name]

    def holders_of(self, kind: str, names: Sequence[str]) -> dict[str, list[str]]:
        """`holders` of many files, in a few queries."""
        found: dict[str, list[str]] = {name: [] for name in names}
        for part, marks in in_chunks(names):
            for name, node in self.db.execute(
                f"SELECT name, node FROM locations WHERE kind = ? AND name IN ({marks})",
                (kind, *part),
            ):
                found[name].append(node)
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
        counts = {"content": 0, "structure": 0}
        for kind, count in self.db.execute("SELECT kind, files FROM kind_totals"):
            counts[kind] = count
        return counts

    def node_totals(self) -> dict[str, tuple[int, int]]:
        """Files and bytes held by each node, as the master knows them."""
        rows = self.db.execute("SELECT node, files, bytes FROM node_totals WHERE files > 0")
        return {node: (files, size) for node, files, size in rows}

    def recount(self, mend: bool) -> dict[str, dict[str, dict[str, list[int]]]]:
        """The kept totals that differ from a count of every file, location and file below
        target, by kind, by node and by cause, each with what was kept and what was counted;
        with `mend`, the count replaces them. Empty when they agree, as they always should."""
        drift = {}
        with self._transaction():
            for label, table, key, query in RECOUNTED:
                found = _differences(self.db, table, key, query)
                if found:
                    drift[label] = found
                if found and mend:
                    self.db.execute(f"DELETE FROM {table}")
                    self.db.execute(f"INSERT INTO {table} {query}")
        return drift

    def storage(self) -> dict[str, int]:
        """Bytes of the database and of its write-ahead log."""
        return self.engine.storage()

    def _replica_query(self, counting: Sequence[str], having: str, where: str = "") -> str:
        """Every file with its replicas on counting nodes (kind, name, target, have, reliable),
        those for which `having` holds; `where` chooses files (its parameters come after the
        counting nodes)."""
        marks = ",".join("?" * len(counting)) or "''"
        return f"""
            SELECT * FROM (
                SELECT f.kind, f.name, f.target,
                       COUNT(c.node) AS have,
                       COALESCE(SUM(c.reliable), 0) AS reliable
                FROM files f
                LEFT JOIN locations l ON l.kind = f.kind AND l.name = f.name
                LEFT JOIN (SELECT id AS node, CASE WHEN reliability != 'low' THEN 1 ELSE 0 END
                           AS reliable FROM nodes
                           WHERE id IN ({marks})) c ON c.node = l.node
                {where}
                GROUP BY f.kind, f.name
            ) replicas WHERE {having}
        """

    def short_counts(self) -> dict[str, int]:
        """How many files the repair pass last found below target, for each of CAUSES."""
        counts = dict.fromkeys(CAUSES, 0)
        for cause, files in self.db.execute("SELECT cause, files FROM short_totals"):
            counts[cause] = int(files)
        return counts

    def most_endangered(self, limit: int) -> list[Problem]:
        """The first `limit` files below target, fewest replicas first, then structure files,
        then the smallest."""
        rows = self.db.execute(
            f"SELECT {PROBLEM_COLUMNS} FROM short ORDER BY have, kind DESC, size LIMIT ?", (limit,)
        )
        return [Problem(*row) for row in rows]

    def short_after(self, after: tuple[str, str], limit: int) -> list[Problem]:
        """The files below target in (kind, name) order, the first `limit` after `after`: a page
        of a walk over them all that can stop anywhere and resume from the last file it gave."""
        rows = self.db.execute(
            f"SELECT {PROBLEM_COLUMNS} FROM short WHERE (kind, name) > (?, ?)"
            " ORDER BY kind, name LIMIT ?",
            (*after, limit),
        )
        return [Problem(*row) for row in rows]

    def record_review(
        self,
        short: Iterable[Problem],
        not_short: Iterable[tuple[str, str]],
        over: Iterable[tuple[str, str]],
        not_over: Iterable[tuple[str, str]],
    ) -> None:
        """Record what the repair pass found of the files it just looked at: which are below
        target and why, and which have copies above target (for the trim step)."""
        with self._transaction():
            self._insert_rows(
                f"INSERT INTO short ({PROBLEM_COLUMNS})",
                [astuple(problem) for problem in short],
                "ON CONFLICT (kind, name) DO UPDATE SET have = excluded.have,"
                " want = excluded.want, size = excluded.size, cause = excluded.cause",
                key=2,
            )
            self._delete_rows("short", "kind, name", list(not_short))
            if self.db.execute("SELECT 1 FROM over_target LIMIT 1").fetchone() is not None:
                self._delete_rows("over_target", "kind, name", list(not_over))
            self._insert_rows(
                "INSERT INTO over_target (kind, name)", list(over), "ON CONFLICT DO NOTHING"
            )

    def mark_short(self) -> None:
        """Have the repair pass look again at every file below target: why each is (a copy
        readable or not, a node to place one or not) depends on nodes that just changed."""
        self.db.execute(
            "INSERT INTO to_check (kind, name) SELECT kind, name FROM short WHERE true"
            " ON CONFLICT DO NOTHING"
        )

    def files_on(self, node: str, limit: int, after: tuple[str, str] = ("", "")) -> list[FileRef]:
        rows = self.db.execute(
            "SELECT l.kind, l.name, f.size FROM locations l"
            " JOIN files f ON f.kind = l.kind AND f.name = l.name"
            " WHERE l.node = ? AND (l.kind, l.name) > (?, ?) ORDER BY l.kind, l.name LIMIT ?",
            (node, *after, limit),
        ).fetchall()
        return [FileRef(*row) for row in rows]

    def count_on(self, node: str) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM locations WHERE node = ?", (node,)).fetchone()
        return int(row[0])

    def targets_of(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        result = {}
        for kind, name in files:
            row = self.db.execute(
                "SELECT target FROM files WHERE kind = ? AND name = ?", (kind, name)
            ).fetchone()
            if row is not None:
                result[(kind, name)] = int(row[0])
        return result

    # -- files to check -------------------------------------------------------------------------

    def _mark(self, files: Iterable[tuple[str, str]]) -> None:
        self._insert_rows(
            "INSERT INTO to_check (kind, name)", list(files), "ON CONFLICT DO NOTHING"
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

    def _delete_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """Delete the rows of a table whose `columns` have these values, many a statement."""
        for part in _parts(rows):
            chosen, values = self.engine.rows(part)
            self.db.execute(f"DELETE FROM {table} WHERE ({columns}) IN ({chosen})", values)

    def mark(self, files: Iterable[tuple[str, str]]) -> None:
        """Have the repair pass look at these files again."""
        with self._transaction():
            self._mark(files)

    def mark_node(self, node: str) -> None:
        """Have the repair pass look at every file of a node again, from its first one."""
        self.db.execute(
            "INSERT INTO nodes_to_check (node) VALUES (?)"
            " ON CONFLICT (node) DO UPDATE SET kind = '', name = ''",
            (node,),
        )

    def scan(
        self,
        counting: Sequence[str],
        usable: int,
        unreliable_extra: int,
        after: tuple[str, str],
        limit: int,
    ) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
        """A step of the full scan: the files below or above target among the first `limit`
        after `after` in (kind, name) order, and the last file looked at (None once the last
        file was reached). It reads on a connection of its own, so that it can run in a thread
        while the master goes on serving."""
        reader = self.engine.reader()
        bound = reader.execute(
            "SELECT kind, name FROM files WHERE (kind, name) > (?, ?) ORDER BY kind, name"
            " LIMIT 1 OFFSET ?",
            (*after, limit - 1),
        ).fetchone()
        where, chosen = "WHERE (f.kind, f.name) > (?, ?)", after
        if bound is not None:
            where, chosen = f"{where} AND (f.kind, f.name) <= (?, ?)", (*after, *bound)
        query = self._replica_query(counting, f"{self._short} OR have > target", where)
        rows = reader.execute(
            f"SELECT kind, name FROM ({query}) scanned",
            (*counting, *chosen, unreliable_extra, usable),
        )
        found = [(str(kind), str(name)) for kind, name in rows]
        return found, None if bound is None else (str(bound[0]), str(bound[1]))

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
            "SELECT EXISTS (SELECT 1 FROM to_check) OR EXISTS (SELECT 1 FROM nodes_to_check)"
        ).fetchone()
        return bool(row[0])

    def count_marked(self) -> tuple[int, int]:
        """How many files (MARKED_COUNTED at most: counting more would cost what the marks
        do), and how many nodes, are marked for the repair pass to look at."""
        row = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM to_check LIMIT ?) marked),"
            " (SELECT COUNT(*) FROM nodes_to_check)",
            (MARKED_COUNTED,),
        ).fetchone()
        return int(row[0]), int(row[1])

    def take_over_target(self, limit: int) -> list[Replicas]:
        """Up to `limit` files recorded above target, as they are now, no longer recorded."""
        with self._transaction():
            return self._take("over_target", limit)

    def _take(self, table: str, limit: int) -> list[Replicas]:
        """The first `limit` files of a table of (kind, name), deleted from it."""
        if limit <= 0:
            return []
        bound = self.db.execute(
            f"SELECT kind, name FROM {table} ORDER BY kind, name LIMIT 1 OFFSET ?", (limit - 1,)
        ).fetchone()
        where, params = ("WHERE (kind, name) <= (?, ?)", tuple(bound)) if bound else ("", ())
        files = self._replicas(f"SELECT kind, name FROM {table} {where}", params)
        self.db.execute(f"DELETE FROM {table} {where}", params)
        return files

    def _take_node_files(self, limit: int) -> list[Replicas]:
        """Up to `limit` files of marked nodes, moving each node's position on (a node whose
        last file was reached is no longer marked)."""
        files: list[Replicas] = []
        marked = self.db.execute("SELECT node, kind, name FROM nodes_to_check").fetchall()
        for node, kind, name in marked:
            if len(files) >= limit:
                break
            after = "node = ? AND (kind, name) > (?, ?)"
            bound = self.db.execute(
                f"SELECT kind, name FROM locations WHERE {after} ORDER BY kind, name"
                " LIMIT 1 OFFSET ?",
                (node, kind, name, limit - len(files) - 1),
            ).fetchone()
            if bound is None:
                files += self._replicas(
                    f"SELECT kind, name FROM locations WHERE {after}", (node, kind, name)
                )
                self.db.execute("DELETE FROM nodes_to_check WHERE node = ?", (node,))
            else:
                files += self._replicas(
                    f"SELECT kind, name FROM locations WHERE {after} AND (kind, name) <= (?, ?)",
                    (node, kind, name, *bound),
                )
                self.db.execute(
                    "UPDATE nodes_to_check SET kind = ?, name = ? WHERE node = ?", (*bound, node)
                )
        return files

    def _replicas(self, chosen: str, params: Sequence[Any]) -> list[Replicas]:
        """The files a query chooses (kind, name), each with its target and holders."""
        if not self.engine.plans_from_statistics:
            # SQLite reads the chosen files first (CROSS JOIN keeps that order), each through
            # the files' and locations' keys.
            rows = self.db.execute(
                "SELECT f.kind, f.name, f.size, f.target, GROUP_CONCAT(l.node)"
                f" FROM ({chosen}) m CROSS JOIN files f ON f.kind = m.kind AND f.name = m.name"
                " LEFT JOIN locations l ON l.kind = f.kind AND l.name = f.name"
                " GROUP BY f.kind, f.name",
                params,
            ).fetchall()
            return [_replicas_of(*row) for row in rows]
        # PostgreSQL would choose that order only from statistics a fresh table lacks: the
        # files are looked up by their keys, each one's holders by a subquery.
        keys = self.db.execute(chosen, params).fetchall()
        found: list[Replicas] = []
        for part in _parts(keys):
            chosen_keys, values = self.engine.rows(part)
            rows = self.db.execute(
                f"SELECT f.kind, f.name, f.size, f.target, (SELECT"
                f" {self.engine.group_concat.format('l.node')} FROM locations l"
                " WHERE l.kind = f.kind AND l.name = f.name)"
                f" FROM files f WHERE (f.kind, f.name) IN ({chosen_keys})",
                values,
            )
            found += [_replicas_of(*row) for row in rows]
        return found

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
        marks = ",".join("?" * len(readable)) or "''"
        row = self.db.execute(
            f"""SELECT COUNT(*) FROM files f WHERE f.kind = 'structure' AND NOT EXISTS (
                    SELECT 1 FROM active a JOIN locations l
                    ON l.kind = 'structure' AND l.name = a.name AND l.node = a.node
                    WHERE a.name = f.name AND a.node IN ({marks}))""",
            tuple(readable),
        ).fetchone()
        return int(row[0])

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
            self.db.execute(
                "INSERT INTO changes (name, seq) SELECT name, ROW_NUMBER() OVER"
                " (ORDER BY name) FROM files WHERE kind = 'structure' ON CONFLICT DO NOTHING"
            )
            self.set_meta("feed", uuid.uuid4().hex)

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
        """Structure file names in order, the first `limit` after `after`."""
        rows = self.db.execute(
            "SELECT name FROM files WHERE kind = 'structure' AND name > ? ORDER BY name LIMIT ?",
            (after, limit),
        )
        return [str(row[0]) for row in rows]

    def iter_files(self) -> Iterator[tuple[str, str]]:
        yield from self.db.execute("SELECT kind, name FROM files")
