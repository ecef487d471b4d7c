"""MasterDB's totals, as `status` and fsck show them: files and bytes by kind and by node, files
below target by cause and the worst of them, a walk over them all, and `recount`, which checks the
totals the schema's triggers keep against a count anew."""

from collections.abc import Sequence
from typing import Any

from archive.cluster import KINDS

from .db_keys import FileKeys
from .db_rows import CAUSES, Problem
from .engine import Connection
from .file_ids import name_of

# The totals counted anew from every file and copy, as the schema's triggers keep them.
COUNT_KINDS = "SELECT kind, COUNT(*), COALESCE(SUM(size), 0) FROM files GROUP BY kind"
COUNT_NODES = (
    "SELECT h.node, COUNT(*), COALESCE(SUM(f.size), 0) FROM held h"
    " LEFT JOIN files f ON f.id = h.id GROUP BY h.node"
)
COUNT_CAUSES = "SELECT cause, COUNT(*), COALESCE(SUM(size), 0) FROM short GROUP BY cause"


# The kept totals `recount` checks: what its report calls them, their table and key, and how
# to count them anew.
RECOUNTED = (
    ("kinds", "kind_totals", "kind", COUNT_KINDS),
    ("nodes", "node_totals", "node", COUNT_NODES),
    ("causes", "short_totals", "cause", COUNT_CAUSES),
)


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


class Totals(FileKeys):
    """The totals and files below target that `status` and fsck report."""

    def file_counts(self) -> dict[str, int]:
        """How many files of each kind the master knows of."""
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
