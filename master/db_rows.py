"""The rows MasterDB gives and takes: nodes, files and their copies, files below target, moves."""

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from archive.cluster import KINDS
from archive.master_answers import FileBelowTarget, NodeRecord

from .file_ids import name_of

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

    def record(self) -> NodeRecord:
        """The node as the master's answers show it, its groups a tuple as an answer holds."""
        return replace(NodeRecord.of(self), groups=tuple(self.groups))

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()


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

    def answer(self) -> FileBelowTarget:
        """The file as fsck lists it."""
        return FileBelowTarget(self.kind, self.name, self.have, self.want, self.cause)


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
