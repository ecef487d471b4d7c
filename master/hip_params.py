"""Checks of the params of the HIP calls the master answers: a fault is a `bad_params` error
naming the call, and a call from an agent of another role is `forbidden`."""

from typing import Any

from archive.cluster import KINDS
from archive.config import RELIABILITIES
from archive.hashing import is_valid_name
from archive.hip import Peer, RemoteError

from .db import NodeRow

MAX_LIST = 5_000


def bad_params(message: str) -> RemoteError:
    """The error for params a call cannot take."""
    return RemoteError("bad_params", message)


def require_role(peer: Peer, role: str, method: str) -> None:
    if peer.role != role:
        raise RemoteError("forbidden", f"{method} is for agents of role {role}")


def as_object(params: Any, method: str) -> dict[str, Any]:
    """The params, which must be a JSON object."""
    if not isinstance(params, dict):
        raise bad_params(f"{method}: params must be an object")
    return params


def field(params: dict[str, Any], key: str, kind: type, method: str) -> Any:
    """The value of a param that must be of type `kind` (a bool is no int)."""
    value = params.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise bad_params(f"{method}: {key!r} must be {kind.__name__}")
    return value


def inventory_entries(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of a `node.inventory`, each an add or a removal of a named file."""
    entries: list[dict[str, Any]] = field(params, "entries", list, "node.inventory")
    if len(entries) > MAX_LIST:
        raise bad_params(f"node.inventory: at most {MAX_LIST} entries a call")
    for index, entry in enumerate(entries):
        where = f"node.inventory: entries[{index}]"
        if not isinstance(entry, dict):
            raise bad_params(f"{where} must be an object")
        if entry.get("op") not in ("add", "remove") or entry.get("kind") not in KINDS:
            raise bad_params(f"{where}: op must be add or remove, kind content or structure")
        name, size = entry.get("name"), entry.get("size")
        if not isinstance(name, str) or not is_valid_name(name):
            raise bad_params(f"{where}: name is not 64 lowercase hex digits")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise bad_params(f"{where}: size must be a non-negative integer")
    return entries


def joining_node(peer: Peer, params: Any) -> tuple[NodeRow, int]:
    """The storage node a `node.join` describes, and the inventory position it is at."""
    p = as_object(params, "node.join")
    node_id = field(p, "id", str, "node.join")
    if node_id != peer.name:
        raise bad_params(
            f"node.join: id {node_id!r} differs from the connection's name {peer.name!r}"
        )
    address = field(p, "address", str, "node.join")
    if not address.startswith(("http://", "https://")):
        raise bad_params("node.join: address must be an http:// or https:// URL")
    reliability = p.get("reliability", "normal")
    if reliability not in RELIABILITIES:
        raise bad_params(f"node.join: reliability must be one of {', '.join(RELIABILITIES)}")
    seq = field(p, "seq", int, "node.join")
    row = NodeRow(
        id=node_id,
        address=address.rstrip("/"),
        domain=str(p.get("domain", "default"))[:100],
        reliability=reliability,
        free=int(p.get("free", 0)),
        total=int(p.get("total", 0)),
        groups=[g for g in p.get("groups", []) if isinstance(g, int) and 0 <= g < 256],
        reserve=int(p.get("reserve", 0)),
        full=p.get("full") is True,
    )
    return row, seq
