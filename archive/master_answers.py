"""The JSON answers of the master's HTTP interface and of an index node's /status, typed once:
the master and the index node serve `to_json()`, their readers (`dlweb status` and `dlweb admin`,
the cluster client, the status page, `dlweb up`) take them apart with `from_json`.

Each is an `Answer` (archive/answers.py): its JSON is its fields, `from_json` checks them.
"""

from typing import Any

from .answers import Answer
from .hip import left_out

__all__ = [
    "BelowTarget",
    "ClusterStatus",
    "FileBelowTarget",
    "FileCounts",
    "FsckReport",
    "Holder",
    "IndexStatus",
    "Located",
    "MasterLink",
    "MetadataSize",
    "MoveProgress",
    "MoveSummary",
    "NodeRecord",
    "NodeScrub",
    "NodeStatus",
    "Placing",
    "Rebalance",
    "RebalancePlan",
    "Repairs",
    "ScrubDone",
    "Scrubbing",
    "StructureHolders",
    "StructurePage",
    "ToCheck",
]

# -- where files are --------------------------------------------------------------------------


class Holder(Answer):
    """A readable holder of a file."""

    id: str
    address: str


class Located(Answer):
    """/locate/{kind}/{name}: the readable holders of a file, a structure file's active first."""

    kind: str
    name: str
    nodes: tuple[Holder, ...]


class StructureHolders(Answer):
    """A structure file and its readable holders."""

    name: str
    nodes: tuple[Holder, ...]


class StructurePage(Answer):
    """/structures: a page of the structure files, in name order."""

    structures: tuple[StructureHolders, ...]


# -- the cluster's status ---------------------------------------------------------------------


class NodeRecord(Answer):
    """A storage node as the master keeps it; /admin/nodes/{node}/state answers it."""

    id: str
    address: str
    domain: str
    reliability: str
    state: str
    admin_state: str
    reason: str | None  # why it is in a state no admin chose ("full")
    free: int
    total: int
    reserve: int
    full: bool
    groups: tuple[int, ...]


class ScrubDone(Answer):
    """A node's last finished scrub: when, the files it checked, the bad ones it found."""

    finished: float
    checked: int | None
    bad: int


class NodeStatus(NodeRecord):
    """A storage node in /status: its record (`state` as the cluster sees it: "unreachable"
    for a node not connected), the files it holds, its last scrub; whether a draining node
    is empty."""

    connected: bool
    files: int
    bytes: int
    scrub: ScrubDone | None
    drained: bool | None = left_out(None)


class FileCounts(Answer):
    """How many files of each kind the master knows of."""

    content: int
    structure: int


class BelowTarget(Answer):
    """How many files are below their replica target, by why."""

    repairing: int
    cannot_place: int
    no_readable_copy: int

    @property
    def total(self) -> int:
        return self.repairing + self.cannot_place + self.no_readable_copy


class Placing(Answer):
    """How many nodes take new files, in how many failure domains."""

    nodes: int
    domains: int


class ToCheck(Answer):
    """What the repair pass has yet to look at: files, nodes, where its full scan is."""

    to_check: int
    nodes_to_check: int
    full_scan_at: int | None


class Repairs(Answer):
    """The repair pass's figures since the master started, and what it has yet to look at."""

    copied: int
    failed: int
    deleted: int
    refreshed: int
    merged: int
    running: int
    examined: int
    examined_last_pass: int
    full_scans: int
    to_check: int
    nodes_to_check: int
    full_scan_at: int | None
    retry_waiting: int


class MoveProgress(Answer):
    """The planned moves of a rebalance: files and bytes, and how many were moved or skipped."""

    files: int
    moved: int
    skipped: int
    bytes: int
    bytes_moved: int


class MoveSummary(Answer):
    """The moves from one node to another."""

    src: str
    dst: str
    files: int
    bytes: int


class RebalancePlan(Answer):
    """A rebalance not applied: what it would move."""

    files: int
    bytes: int
    moves: tuple[MoveSummary, ...]


class Rebalance(Answer):
    """/admin/rebalance (and /status's `rebalance`): its state ("idle", "running", "stopped",
    "done") and rates as applied, with its progress and moves, or the plan it would carry out."""

    state: str
    files_per_s: float | None = left_out(None)
    bytes_per_s: float | None = left_out(None)
    progress: MoveProgress | None = left_out(None)
    moves: tuple[MoveSummary, ...] | None = left_out(None)
    plan: RebalancePlan | None = left_out(None)


class MetadataSize(Answer):
    """Bytes of the master's database, of its pages free for reuse and of its write-ahead log."""

    database_bytes: int
    free_bytes: int
    wal_bytes: int


class ClusterStatus(Answer):
    """/status: the cluster's health. `replication` is the configuration's, as it writes it."""

    cluster: str
    uptime: float
    nodes: tuple[NodeStatus, ...]
    index_nodes: tuple[str, ...]
    files: FileCounts
    below_target: int
    lost: int
    below_target_causes: BelowTarget
    placing: Placing
    structures_dirty: int
    structures_diverged: int
    repairs: Repairs
    rebalance: Rebalance
    replication: dict[str, int]
    metadata: MetadataSize


# -- fsck and scrubs --------------------------------------------------------------------------


class FileBelowTarget(Answer):
    """A file below its replica target: its replicas that count, its target, and why."""

    kind: str
    name: str
    replicas: int
    target: int
    cause: str


class FsckReport(Answer):
    """/admin/fsck: the files below target and other problems; a deep fsck adds the contents
    no structure file names (orphans). `totals_drift` is the recount's free-form list of the
    kept totals that differed from a full count (None when not recounted)."""

    files: FileCounts
    below_target: int
    lost: int
    below_target_causes: BelowTarget
    placing: Placing
    orphans: int | None
    structures_without_active: int
    structures_dirty: int
    repairs: ToCheck
    ok: bool
    problems: tuple[FileBelowTarget, ...]
    totals_drift: dict[str, Any] | None
    structures_read: int | None = left_out(None)
    structures_unreadable: int | None = left_out(None)
    orphan_names: tuple[str, ...] | None = left_out(None)


class NodeScrub(Answer):
    """Whether a node started a scrub: one was running already, or why it could not."""

    started: bool
    running: bool = left_out(False)
    error: str | None = left_out(None)


class Scrubbing(Answer):
    """/admin/scrub: what each node asked to scrub answered, by node."""

    scrub: dict[str, NodeScrub]


# -- an index node ----------------------------------------------------------------------------


class MasterLink(Answer):
    """An index node's master and whether it is connected to it."""

    url: str
    connected: bool


class IndexStatus(Answer):
    """An index node's /status: its link to the master, the nodes and contents it knows of,
    the inserts in progress, its counters since it started."""

    id: str
    address: str
    master: MasterLink
    nodes: int
    alive: int
    contents: int
    claims: int
    pending_uploads: int
    unconfirmed_inserts: int
    unsent_changes: int
    appending: int
    clients: int
    counters: dict[str, int]
    uptime: float
