"""The HIP calls between the master and a storage node, typed once for both ends.

A storage node calls `node.join` (NodeJoin, answered with a JoinAnswer: the inventory position
the master wants entries after), then streams `node.inventory` (NodeInventory, InventoryAnswer),
and notifies `node.stats` (NodeStats) now and then and `node.scrubbed` (ScrubReport) after a
scrub. The master orders it to `fetch` files from other nodes (FetchOrder, FetchAnswer),
`delete` files (DeleteOrder, DeleteAnswer), `scrub` (ScrubOrder, ScrubAnswer), and notifies it
of its `stale` structure copies (StaleCopies, StaleAnswer).

Each params' `from_json` checks every field and raises a `bad_params` RemoteError naming the call
and the field at fault; the notifications, never answered, take what they can of a sloppy one.
"""

from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar, Self

from yarl import URL

from .cluster import KINDS
from .config import RELIABILITIES
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
    left_out,
)
from .pack import NOT_HELD

__all__ = [
    "DELETE",
    "FETCH",
    "MAX_FILES",
    "NODE_INVENTORY",
    "NODE_JOIN",
    "NODE_SCRUBBED",
    "NODE_STATS",
    "SCRUB",
    "STALE",
    "DeleteAnswer",
    "DeleteOrder",
    "FetchAnswer",
    "FetchOrder",
    "InventoryAnswer",
    "JoinAnswer",
    "NodeFile",
    "NodeInventory",
    "NodeJoin",
    "NodeStats",
    "ScrubAnswer",
    "ScrubOrder",
    "ScrubReport",
    "StaleAnswer",
    "StaleCopies",
]

# Files an order, entries an inventory batch and names a stale notice hold at most.
MAX_FILES = 5_000
MAX_URL = 2000
MAX_DOMAIN = 100


def _count(value: object) -> int | None:
    """`value` if it is a non-negative integer (a bool is none), else None."""
    return value if type(value) is int and value >= 0 else None


def _groups(value: object) -> tuple[int, ...]:
    """The multicast groups of a list, those that are no group left out."""
    if not isinstance(value, list):
        return ()
    return tuple(g for g in value if type(g) is int and 0 <= g < 256)


def _names(params: dict[str, Any], key: str, method: str) -> list[str]:
    """The strings of an answer's list field `key`, whatever else it holds left out."""
    return [name for name in field(params, key, list, method) if isinstance(name, str)]


def _is_base_url(source: object) -> bool:
    """Whether `source` is an http(s) URL with a host and nothing after its path."""
    if not isinstance(source, str) or len(source) > MAX_URL:
        return False
    try:
        url = URL(source)
    except (ValueError, TypeError):
        return False
    return url.scheme in ("http", "https") and bool(url.host) and not url.query_string


# -- the node's calls to the master ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeJoin(Fields):
    """A storage node joining: who and where it is, its room, and its inventory position."""

    id: str
    address: str
    domain: str = "default"
    reliability: str = "normal"
    free: int = 0
    total: int = 0
    reserve: int = 0
    full: bool = False
    groups: tuple[int, ...] = ()
    _: KW_ONLY
    seq: int

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        node_id = field(p, "id", str, method)
        address = field(p, "address", str, method)
        if not address.startswith(("http://", "https://")):
            raise bad_params(method, "address must be an http:// or https:// URL")
        reliability = p.get("reliability", "normal")
        if reliability not in RELIABILITIES:
            raise bad_params(method, f"reliability must be one of {', '.join(RELIABILITIES)}")
        seq = field(p, "seq", int, method)
        return cls(
            id=node_id,
            address=address.rstrip("/"),
            seq=seq,
            domain=str(p.get("domain", "default"))[:MAX_DOMAIN],
            reliability=reliability,
            free=_count(p.get("free")) or 0,
            total=_count(p.get("total")) or 0,
            reserve=_count(p.get("reserve")) or 0,
            full=p.get("full") is True,
            groups=_groups(p.get("groups")),
        )


@dataclass(frozen=True, slots=True)
class JoinAnswer(Fields):
    """The master's answer to a join: entries after `since` are wanted; the node's state."""

    since: int
    state: str

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        since = _count(data.get("since")) if isinstance(data, dict) else None
        if since is None:
            raise RemoteError("bad_answer", f"{method} answered {str(data)[:200]}")
        return cls(since, str(data.get("state")))


@dataclass(frozen=True, slots=True)
class NodeInventory(Fields):
    """A batch of a node's inventory log: entries adding or removing a named file (JSON objects
    with op, kind, name, size, and seq, the master's database reads them as such), and the
    number of the last."""

    id: str
    entries: list[dict[str, Any]]
    seq: int

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        entries: list[dict[str, Any]] = field(p, "entries", list, method)
        if len(entries) > MAX_FILES:
            raise bad_params(method, f"at most {MAX_FILES} entries a call")
        for index, entry in enumerate(entries):
            where = f"entries[{index}]"
            if not isinstance(entry, dict):
                raise bad_params(method, f"{where} must be an object")
            if entry.get("op") not in ("add", "remove") or entry.get("kind") not in KINDS:
                raise bad_params(
                    method, f"{where}: op must be add or remove, kind content or structure"
                )
            name, size = entry.get("name"), entry.get("size")
            if not isinstance(name, str) or not is_valid_name(name):
                raise bad_params(method, f"{where}: name is not 64 lowercase hex digits")
            if _count(size) is None:
                raise bad_params(method, f"{where}: size must be a non-negative integer")
        node_id = p.get("id")
        return cls(
            node_id if isinstance(node_id, str) else "", entries, field(p, "seq", int, method)
        )


class InventoryAnswer(Message):
    """The number of the last entry the master stored."""

    seq: int


@dataclass(frozen=True, slots=True)
class NodeStats(Fields):
    """A node's room and counts, sent now and then: a field that is missing or malformed is
    None (the master keeps what it knew)."""

    id: str
    free: int | None = left_out(None)
    total: int | None = left_out(None)
    reserve: int | None = left_out(None)
    full: bool | None = left_out(None)
    groups: tuple[int, ...] | None = left_out(None)
    files: dict[str, int] | None = left_out(None)
    bytes: dict[str, int] | None = left_out(None)

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        full, groups = p.get("full"), p.get("groups")
        files, sizes = p.get("files"), p.get("bytes")
        return cls(
            id=str(p.get("id", "")),
            free=_count(p.get("free")),
            total=_count(p.get("total")),
            reserve=_count(p.get("reserve")),
            full=full if isinstance(full, bool) else None,
            groups=_groups(groups) if isinstance(groups, list) else None,
            files=files if isinstance(files, dict) else None,
            bytes=sizes if isinstance(sizes, dict) else None,
        )


@dataclass(frozen=True, slots=True)
class ScrubReport(Fields):
    """What a finished scrub found: the files checked, and the bad ones (each a JSON object of
    kind, name and reason); a bad file of no kind or name is left out."""

    id: str
    checked: int | None
    bad: list[dict[str, str]]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        listed = p.get("bad")
        bad = [
            b
            for b in (listed if isinstance(listed, list) else [])
            if isinstance(b, dict) and b.get("kind") in KINDS and is_valid_name(str(b.get("name")))
        ]
        return cls(str(p.get("id", "")), _count(p.get("checked")), bad)


# -- the master's orders to a node -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeFile(Fields):
    """A file of an order: its kind and name, and for a fetch the node to copy it from."""

    kind: str
    name: str
    source: str = left_out("")


def _files(data: Any, method: str, with_source: bool) -> tuple[NodeFile, ...]:
    """The `files` list of a fetch or delete order, every field checked."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise bad_params(method, "params must be {files: [...]}")
    files = data["files"]
    if len(files) > MAX_FILES:
        raise bad_params(method, f"at most {MAX_FILES} files an order")
    found = []
    for index, item in enumerate(files):
        where = f"files[{index}]"
        if not isinstance(item, dict) or item.get("kind") not in KINDS:
            raise bad_params(method, f"{where}: kind must be content or structure")
        name = item.get("name")
        if not isinstance(name, str) or not is_valid_name(name):
            raise bad_params(method, f"{where}: name is not 64 lowercase hex digits")
        source = item.get("source") if with_source else ""
        if with_source and not _is_base_url(source):
            raise bad_params(method, f"{where}: source must be an http:// or https:// base URL")
        found.append(NodeFile(item["kind"], name, str(source)))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class _FileOrder(Fields):
    """An order naming files, each of them checked (with a source if `with_source`)."""

    files: tuple[NodeFile, ...]
    with_source: ClassVar[bool]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        return cls(_files(data, method, cls.with_source))


class FetchOrder(_FileOrder):
    """Files to copy from other nodes, through the node's verified write paths."""

    __slots__ = ()
    with_source = True


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """The names of the files copied, why each other one was not (name, error), and of those
    the ones their source said it does not hold (NOT_HELD): the master's record of that copy
    is wrong, and a copy from there can never be made."""

    fetched: list[str]
    failed: list[tuple[str, str]]

    @property
    def missing(self) -> set[str]:
        return {name for name, error in self.failed if error == NOT_HELD}

    def to_json(self) -> dict[str, Any]:
        return {
            "fetched": self.fetched,
            "failed": [{"name": name, "error": error} for name, error in self.failed],
        }

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        fetched, failed = _names(p, "fetched", method), field(p, "failed", list, method)
        return cls(
            fetched,
            [
                (str(item.get("name")), str(item.get("error")))
                for item in failed
                if isinstance(item, dict)
            ],
        )


class DeleteOrder(_FileOrder):
    """Files to delete."""

    __slots__ = ()
    with_source = False


@dataclass(frozen=True, slots=True)
class DeleteAnswer(Fields):
    """The names of the files that were there and are deleted, and of those that were not there:
    the master's record of those copies is wrong, and no delete will ever take them away."""

    deleted: list[str]
    missing: list[str]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        return cls(_names(p, "deleted", method), _names(p, "missing", method))


class StaleCopies(Names):
    """Structure files whose copy on the node lacks records of the active copy."""

    __slots__ = ()
    most = MAX_FILES


class StaleAnswer(Message):
    """How many of the names the node holds a copy of, now marked stale."""

    marked: int


@dataclass(frozen=True, slots=True)
class ScrubOrder(Fields):
    """Start a scrub: no params."""

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        if data not in (None, {}):
            raise bad_params(method, "params must be {}")
        return cls()


@dataclass(frozen=True, slots=True)
class ScrubAnswer(Fields):
    """Whether a scrub started, or one was running already."""

    started: bool
    running: bool = left_out(False)

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        p = as_object(data, method)
        return cls(field(p, "started", bool, method), p.get("running") is True)


NODE_JOIN = Method("node.join", NodeJoin, JoinAnswer)
NODE_INVENTORY = Method("node.inventory", NodeInventory, InventoryAnswer)
NODE_STATS = Method("node.stats", NodeStats, Nothing)
NODE_SCRUBBED = Method("node.scrubbed", ScrubReport, Nothing)
FETCH = Method("fetch", FetchOrder, FetchAnswer)
DELETE = Method("delete", DeleteOrder, DeleteAnswer)
STALE = Method("stale", StaleCopies, StaleAnswer)
SCRUB = Method("scrub", ScrubOrder, ScrubAnswer)
