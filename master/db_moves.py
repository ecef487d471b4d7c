"""MasterDB's rebalance moves (master/rebalance.py): the copies planned to move from one node to
another, and how far their moving got."""

from collections.abc import Iterable

from .db_keys import FileKeys
from .db_rows import Move


class Moves(FileKeys):
    """The rebalance's planned moves."""

    def replace_moves(self, moves: Iterable[tuple[str, str, str, str, int]]) -> None:
        """Plan these moves (kind, name, src, dst, size) in place of those planned before."""
        with self._transaction():
            self.db.execute("DELETE FROM moves")
            self.db.executemany(
                "INSERT INTO moves (kind, name, src, dst, size) VALUES (?,?,?,?,?)", list(moves)
            )

    def pending_moves(self, limit: int) -> list[Move]:
        """The first `limit` planned moves neither done nor skipped."""
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
        """How many files and bytes the planned moves have, and how many were moved or skipped."""
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN done = 1 THEN 1 END), 0),"
            " COALESCE(SUM(CASE WHEN done = 2 THEN 1 END), 0),"
            " COALESCE(SUM(size), 0), COALESCE(SUM(CASE WHEN done = 1 THEN size END), 0)"
            " FROM moves"
        ).fetchone()
        # int(): PostgreSQL's SUM of BIGINTs is a NUMERIC, which psycopg gives as a Decimal.
        keys = ("files", "moved", "skipped", "bytes", "bytes_moved")
        return {key: int(value) for key, value in zip(keys, row, strict=True)}
