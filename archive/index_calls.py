"""The HIP calls between the master and the index nodes, and those of its change feed, typed once
for both ends.

An index node calls `index.join` (IndexJoin) with the address it serves clients at, asks
`cluster.nodes` for the storage nodes (ClusterNodes), `structure.claim` for the node of each
structure file's active copy (Claim, Claimed), has the master record the structure files an
insert changed with `structure.changed` (StructureChanges: the copies each was appended to,
Appended) and notifies it of popular contents (`content.refs`, ContentRefs). The master notifies
it when the node list changed (`nodes.changed`).

A search indexer (role `search`) reads the change feed (archive/changes.py) with `search.changes`
(FeedAsked, FeedChanges), woken by the master's note `structure.changed` (FeedNote), which is a
call of the same name as the index node's, in the other direction and with other params.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from .changes import CHANGED_NOTE, CHANGES_METHOD, Changes, ChangesAsked
from .hashing import is_valid_name
from .hip import (
    Fields,
    Message,
    Method,
    Names,
    Nothing,
    RemoteError,
    as_object,
    bad_params,
    field,
    name_list,
)
from .insert_calls import BadMessage

__all__ = [
    "CLUSTER_NODES",
    "CONTENT_REFS",
    "FEED_CHANGED",
    "INDEX_JOIN",
    "MAX_COPIES",
    "MAX_NAMES",
    "NODES_CHANGED",
    "SEARCH_CHANGES",
    "STRUCTURE_CHANGED",
    "STRUCTURE_CLAIM",
    "Appended",
    "Claim",
    "Claimed",
    "ClusterNodes",
    "ContentRefs",
    "Done",
    "FeedAsked",
    "FeedChanges",
    "FeedNote",
    "IndexJoin",
    "StructureChanges",
]

# Names a claim or a change names, and contents a content.refs counts, at most.
MAX_NAMES = 5_000
# Nodes a structure.changed names for one file's copies, at most.
MAX_COPIES = 100


@dataclass(frozen=True, slots=True)
class Done(Fields):
    """The answer of a call that only acknowledges: {}."""

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        return cls()


class IndexJoin(Message):
    """An index node joining: the HIP address it serves inserting clients at."""

    address: str

    def check(self, method: str) -> None:
        if not self.address.startswith(("ws://", "wss://")):
            raise bad_params(method, "address must be a ws:// or wss:// URL")


@dataclass(frozen=True, slots=True)
class ClusterNodes(Fields):
    """The storage nodes, each a JSON object (id, address, state, room, groups, domain, ...),
    and the replication settings."""

    nodes: list[dict[str, Any]]
    replication: dict[str, Any]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        nodes = field(p, "nodes", list, method)
        for index, node in enumerate(nodes):
            if not isinstance(node, dict) or not all(
                isinstance(node.get(key), str) for key in ("id", "address")
            ):
                raise bad_params(method, f"nodes[{index}] must be an object with an id and address")
        replication = p.get("replication")
        return cls(nodes, replication if isinstance(replication, dict) else {})


class Claim(Names):
    """Structure files whose active copy an index node asks for (a new one is placed)."""

    __slots__ = ()
    most = MAX_NAMES


@dataclass(frozen=True, slots=True)
class Claimed:
    """The address of the node of each structure file's active copy, and those of the other
    copies its appends must reach too."""

    nodes: dict[str, str]
    replicas: dict[str, tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "replicas": {name: list(others) for name, others in self.replicas.items()},
        }

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        nodes = data.get("nodes") if isinstance(data, dict) else None
        if not isinstance(nodes, dict):
            raise RemoteError("error", f"the master answered {method} without nodes")
        replicas = data.get("replicas")
        return cls(
            {str(name): str(address) for name, address in nodes.items()},
            {
                str(name): tuple(str(a) for a in addresses)
                for name, addresses in (replicas.items() if isinstance(replicas, dict) else ())
                if isinstance(addresses, list)
            },
        )


@dataclass(frozen=True, slots=True)
class Appended:
    """The copies of a structure file that took an insert's records: those appended to as its
    active copy (one, unless changes of several inserts were gathered, or an insert that failed
    names each copy it sent them to: one whose node died before answering may hold them) and
    the other copies. Both empty when they are not known (an insert whose appends failed, told
    again once none can land)."""

    active: frozenset[str] = frozenset()
    others: frozenset[str] = frozenset()

    def __or__(self, other: "Appended") -> "Appended":
        return Appended(self.active | other.active, self.others | other.others)

    def to_json(self) -> dict[str, list[str]]:
        return {"active": sorted(self.active), "others": sorted(self.others)}

    @classmethod
    def from_json(cls, data: Any) -> "Appended":
        """The copies an item of `copies` names, at most MAX_COPIES a side; what is no
        address is left out."""
        if not isinstance(data, dict):
            return cls()
        active, others = (
            frozenset(a for a in side[:MAX_COPIES] if isinstance(a, str))
            if isinstance(side, list)
            else frozenset()
            for side in (data.get("active"), data.get("others"))
        )
        return cls(active, others)


@dataclass(frozen=True, slots=True)
class StructureChanges:
    """Structure files an index node changed, and for those it knows, the copies it appended
    their records to (`copies` names only files of `names`)."""

    names: list[str]
    copies: dict[str, Appended]

    def to_json(self) -> dict[str, Any]:
        return {
            "names": self.names,
            "copies": {name: appended.to_json() for name, appended in self.copies.items()},
        }

    @classmethod
    def of(cls, names: list[str], changes: Mapping[str, Appended]) -> "StructureChanges":
        """The changes of `names`, with the copies of those whose active copy is known."""
        return cls(names, {name: changes[name] for name in names if changes[name].active})

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        names = name_list(data, method, MAX_NAMES)
        copies = data.get("copies")
        changed = set(names)
        return cls(
            names,
            {
                name: Appended.from_json(item)
                for name, item in (copies.items() if isinstance(copies, dict) else ())
                if name in changed and isinstance(item, dict)
            },
        )


@dataclass(frozen=True, slots=True)
class ContentRefs(Fields):
    """The reference counts of popular contents; a count of no content or no count is left
    out, and a sloppy notice counts nothing."""

    refs: dict[str, int]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        refs = data.get("refs") if isinstance(data, dict) else None
        if not isinstance(refs, dict):
            return cls({})
        return cls(
            {
                name: count
                for name, count in list(refs.items())[:MAX_NAMES]
                if is_valid_name(name) and type(count) is int and count >= 0
            }
        )


# -- the change feed -------------------------------------------------------------------------------

_Feed = TypeVar("_Feed")


def _feed_message(decode: Callable[[object], _Feed], data: object) -> _Feed:
    """A message of the change feed decoded; a BadMessage, which names the call already, as a
    bad_params RemoteError."""
    try:
        return decode(data)
    except BadMessage as exc:
        raise RemoteError("bad_params", str(exc)) from None


class FeedAsked(ChangesAsked):
    """A follower's request of the change feed (archive/changes.py), as a HIP message."""

    __slots__ = ()

    @classmethod
    def from_json(cls, data: object, method: str = CHANGES_METHOD) -> Self:
        asked = _feed_message(ChangesAsked.from_json, data)
        return cls(asked.after, asked.limit)


class FeedChanges(Changes):
    """The master's answer of the change feed (archive/changes.py), as a HIP message."""

    __slots__ = ()

    @classmethod
    def from_json(cls, data: object, method: str = CHANGES_METHOD) -> Self:
        changes = _feed_message(Changes.from_json, data)
        return cls(changes.changes, changes.last, changes.feed)


@dataclass(frozen=True, slots=True)
class FeedNote(Fields):
    """The master's note to the followers that there are changes up to number `last` (None
    when a sloppy note does not say)."""

    last: int | None

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        last = data.get("last") if isinstance(data, dict) else None
        return cls(last if type(last) is int else None)


INDEX_JOIN = Method("index.join", IndexJoin, Done)
CLUSTER_NODES = Method("cluster.nodes", Nothing, ClusterNodes)
STRUCTURE_CLAIM = Method("structure.claim", Claim, Claimed)
STRUCTURE_CHANGED = Method("structure.changed", StructureChanges, Done)
CONTENT_REFS = Method("content.refs", ContentRefs, Nothing)
NODES_CHANGED = Method("nodes.changed", Nothing, Nothing)
SEARCH_CHANGES = Method(CHANGES_METHOD, FeedAsked, FeedChanges)
FEED_CHANGED = Method(CHANGED_NOTE, FeedNote, Nothing)
