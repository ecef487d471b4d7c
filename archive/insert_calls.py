"""The messages of an insert, typed once and checked at both ends.

A client sends the index node `insert` with NewCaptures; the index node answers an InsertAnswer
whose UploadOrders say where each new content goes (the first `copies` nodes of an order form
the forwarding chain, the others are spares); the client uploads, each storage node answering
an UploadReceipt that says which nodes of the chain hold the bytes; then `stored` (Stored)
confirms the insert and is answered with the records added (StoredAnswer).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ClientFault, DlwebError
from .hashing import check_name, is_valid_name
from .hip import Fields
from .structure import INT64_MAX, Capture
from .timestamps import check_capture_time
from .url_parts import MAX_URL_LENGTH

__all__ = [
    "FORWARD_HEADER",
    "MAX_CAPTURES",
    "MAX_CHAIN",
    "BadMessage",
    "InsertAnswer",
    "NewCapture",
    "Stored",
    "StoredAnswer",
    "UploadOrder",
    "UploadReceipt",
    "chain_header",
    "forward_chain",
]

MAX_CAPTURES = 5_000
DEFAULT_HEADER_SIZE = 512
# Nodes an upload order names at most: the chain of copies and the spares that stand in for a
# node of it that fails.
MAX_CHAIN = 8
# The storage nodes an upload is passed on to, in order, by the node that receives it.
FORWARD_HEADER = "X-Dlweb-Forward"


class BadMessage(ClientFault):
    """A message of the insert protocol that does not follow it; says which field."""


def _count(data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if type(value) is not int or value < 0:
        raise BadMessage(f"{key!r} must be a non-negative integer")
    return value


def _address(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise BadMessage(f"{where} must be an http:// or https:// address")
    return value.rstrip("/")


@dataclass(frozen=True, slots=True)
class NewCapture(Fields):
    """A capture to insert: where and when, and the SHA-256 of its content and header block."""

    url: str
    time: int
    content: str
    header: str
    status: int
    size: int
    header_size: int = DEFAULT_HEADER_SIZE
    kind: str = "response"
    flags: int = 0
    offset: int = 0

    @classmethod
    def from_json(cls, item: object, index: int) -> tuple["NewCapture", Capture]:
        """Capture `index` of an insert and its structure record; BadMessage names the index
        and the field of a bad one."""
        if not isinstance(item, dict):
            raise BadMessage(f"insert: captures[{index}] must be an object")
        try:
            url = item.get("url")
            if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
                raise BadMessage(f"'url' must be a string of 1 to {MAX_URL_LENGTH} characters")
            for key, low in (("time", -INT64_MAX), ("offset", 0)):
                value = item.get(key, 0)
                if type(value) is int and not low <= value <= INT64_MAX:
                    raise BadMessage(f"{key!r} must be an integer from {low} to 2^63-1")
            record = Capture.from_json(item)
            check_capture_time(record.time)
            new = cls(
                url,
                record.time,
                record.content,
                record.header,
                record.status,
                _count(item, "size"),
                _count(item, "header_size", DEFAULT_HEADER_SIZE),
                record.kind.name.lower(),
                record.flags,
                record.offset,
            )
        except DlwebError as exc:
            raise BadMessage(f"insert: captures[{index}]: {exc}") from None
        return new, record


@dataclass(frozen=True, slots=True)
class UploadOrder(Fields):
    """A content to upload: its size, and the nodes to hold it, best first."""

    name: str
    size: int
    nodes: tuple[str, ...]

    @classmethod
    def from_json(cls, data: object) -> "UploadOrder":
        if not isinstance(data, dict):
            raise BadMessage("an upload order must be an object")
        nodes = data.get("nodes")
        if not isinstance(nodes, list) or not 0 < len(nodes) <= MAX_CHAIN:
            raise BadMessage(f"an upload order's 'nodes' must list 1 to {MAX_CHAIN} nodes")
        where = tuple(_address(node, "each node of an upload order") for node in nodes)
        if len(set(where)) != len(where):
            raise BadMessage("an upload order names a node twice")
        name = data.get("name")
        return cls(check_name(name if isinstance(name, str) else ""), _count(data, "size"), where)


@dataclass(frozen=True, slots=True)
class InsertAnswer:
    """The index node's answer to `insert`: what to upload, the number `stored` confirms, and
    how many nodes must hold each upload before the insert may be confirmed."""

    orders: list[UploadOrder]
    number: int
    copies: int

    def to_json(self) -> dict[str, Any]:
        return {
            "upload": [order.to_json() for order in self.orders],
            "insert": self.number,
            "copies": self.copies,
        }

    @classmethod
    def from_json(cls, data: object) -> "InsertAnswer":
        """Checked whole before any order is used (an index node of another version may answer
        otherwise)."""
        if not isinstance(data, dict) or not isinstance(data.get("upload"), list):
            raise BadMessage("the index node answered insert without upload orders")
        number = data.get("insert")
        if type(number) is not int:
            raise BadMessage("the index node answered insert without its number")
        copies = data.get("copies", 1)
        if type(copies) is not int or not 1 <= copies <= MAX_CHAIN:
            raise BadMessage(f"'copies' must be an integer from 1 to {MAX_CHAIN}")
        orders = [UploadOrder.from_json(order) for order in data["upload"]]
        return cls(orders, number, copies)


@dataclass(frozen=True, slots=True)
class Stored(Fields):
    """The client's confirmation that the contents of an insert are uploaded."""

    names: list[str]
    insert: int

    @classmethod
    def from_json(cls, data: object) -> "Stored":
        if not isinstance(data, dict):
            raise BadMessage("stored: params must be {names: [...], insert: n}")
        names = data.get("names")
        if not isinstance(names, list) or len(names) > 2 * MAX_CAPTURES:
            raise BadMessage(f"stored: names must be a list of at most {2 * MAX_CAPTURES}")
        for index, name in enumerate(names):
            if not isinstance(name, str) or not is_valid_name(name):
                raise BadMessage(f"stored: names[{index}] is not 64 lowercase hex digits")
        number = data.get("insert")
        if type(number) is not int:
            raise BadMessage("stored: insert must be the number an insert answered")
        return cls(names, number)


@dataclass(frozen=True, slots=True)
class StoredAnswer(Fields):
    """The records an insert added to structure files."""

    added: int

    @classmethod
    def from_json(cls, data: object) -> "StoredAnswer":
        added = data.get("added") if isinstance(data, dict) else None
        if type(added) is not int:
            raise BadMessage("the index node confirmed an insert without the records it added")
        return cls(added)


@dataclass(frozen=True, slots=True)
class UploadReceipt(Fields):
    """A storage node's answer to an upload: how many of its contents were new there, and the
    nodes down the forwarding chain that hold them too (those that failed, with why)."""

    created: int
    forwarded: tuple[str, ...] = ()
    failed: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: object) -> "UploadReceipt":
        if not isinstance(data, dict):
            raise BadMessage("an upload was answered without a receipt")
        created = data.get("created", 0)
        if type(created) is bool:
            created = int(created)
        if type(created) is not int:
            raise BadMessage("an upload receipt's 'created' must be an integer")
        forwarded = data.get("forwarded", [])
        failed = data.get("failed", {})
        if not isinstance(forwarded, list) or not isinstance(failed, dict):
            raise BadMessage(
                "an upload receipt's 'forwarded' and 'failed' must be a list and a map"
            )
        return cls(
            created,
            tuple(_address(node, "a forwarded node") for node in forwarded),
            {_address(node, "a failed node"): str(why)[:500] for node, why in failed.items()},
        )


def forward_chain(value: str | None) -> list[str]:
    """The nodes an upload is to be passed on to, from the FORWARD_HEADER of its request."""
    if not value:
        return []
    chain = [_address(part.strip(), f"{FORWARD_HEADER}") for part in value.split(",")]
    if len(chain) >= MAX_CHAIN or len(set(chain)) != len(chain):
        raise BadMessage(f"{FORWARD_HEADER} must name at most {MAX_CHAIN - 1} distinct nodes")
    return chain


def chain_header(nodes: Sequence[str]) -> dict[str, str]:
    """The headers that have an upload passed on to `nodes`."""
    return {FORWARD_HEADER: ",".join(nodes)} if nodes else {}
