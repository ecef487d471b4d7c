"""The master's persistent view of the cluster, in SQLite or PostgreSQL (master/engine.py):
nodes, files and their copies, moves.

Everything a restarted master needs is here, so it rebuilds its view without rescanning a disk:
nodes send only the inventory entries after the position stored with their copies, in the same
transaction, so the two can never disagree. A file is keyed by an integer from its name
(master/file_ids.py) and holds the numbers of the nodes with a copy; `held` has the same copies
by node. The totals `status` shows (files and bytes by kind and by node) are kept by triggers,
in the transaction of each change they count, so they are read at once and a crash cannot make
them drift; `recount` checks them against a full count.

MasterDB is made of parts sharing one connection, each over its own tables: db_keys.py (node
numbers, file keys, settings), db_copies.py (nodes, their copies and inventory batches),
db_repair.py (the repair pass's marks, full scan and findings), db_totals.py (the totals of
`status` and fsck), db_structures.py (active, diverged and dirty structure copies, the change
feed) and db_moves.py (rebalance moves); db_rows.py has the rows they give and take.
"""

from pathlib import Path

from .db_copies import Copies
from .db_moves import Moves
from .db_repair import RepairQueues
from .db_rows import (
    CANNOT_PLACE,
    CAUSES,
    NO_READABLE_COPY,
    REPAIRING,
    FileRef,
    Move,
    Needy,
    NodeRow,
    Problem,
    Replicas,
    TargetFn,
)
from .db_structures import Structures
from .db_totals import Totals
from .engine import open_engine
from .file_ids import SPREAD_KEY
from .schema import MASTER

__all__ = [
    "CANNOT_PLACE",
    "CAUSES",
    "NO_READABLE_COPY",
    "REPAIRING",
    "FileRef",
    "MasterDB",
    "Move",
    "Needy",
    "NodeRow",
    "Problem",
    "Replicas",
    "TargetFn",
]


class MasterDB(Copies, RepairQueues, Totals, Structures, Moves):
    """The master's metadata, its parts over one connection."""

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
        self._dirtied = {}
        self._spread = int(self.get_meta(SPREAD_KEY) or 0)
        self._numbers = {}
        self._nodes_by_number = {}
        self._read_numbers()
