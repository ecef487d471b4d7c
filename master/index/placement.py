"""Where the index node sends new contents: a node that takes new files and has room, one already
subscribed to the name's multicast group first, then the one with the most free space."""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archive.hip import RemoteError

# Space a node keeps free at least: 64 MiB, or 1% of a smaller disk.
HEADROOM = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A storage node as the master's cluster.nodes lists it."""

    id: str
    address: str
    state: str = "alive"
    free: int = 0
    total: int = 0
    groups: frozenset[int] = field(default_factory=frozenset)

    @property
    def headroom(self) -> int:
        return min(HEADROOM, self.total // 100)


def node_info(data: Mapping[str, Any]) -> NodeInfo:
    groups = data.get("groups") or []
    return NodeInfo(
        id=str(data["id"]),
        address=str(data["address"]),
        state=str(data.get("state", "alive")),
        free=int(data.get("free") or 0),
        total=int(data.get("total") or 0),
        groups=frozenset(g for g in groups if isinstance(g, int)),
    )


def place(nodes: Sequence[NodeInfo], sizes: Mapping[str, int]) -> list[dict[str, Any]]:
    """An upload order {name, node, size} for each name, the bytes planned on a node counted
    against its free space; RemoteError no_node when no node can take one."""
    takers = [node for node in nodes if node.state == "alive"]
    planned: Counter[str] = Counter()
    joined: set[tuple[str, int]] = set()  # groups a node joins with the uploads planned here
    orders = []
    for name, size in sizes.items():
        group = int(name[:2], 16)
        best: tuple[tuple[int, int], NodeInfo] | None = None
        for node in takers:
            room = node.free - planned[node.id] - size
            if room < node.headroom:
                continue
            held = group in node.groups or (node.id, group) in joined
            key = (0 if held else 1, -room)
            if best is None or key < best[0]:
                best = (key, node)
        if best is None:
            why = "is alive" if not takers else f"has room for {size} more bytes"
            raise RemoteError("no_node", f"insert: no storage node {why}; {name} cannot be stored")
        chosen = best[1]
        planned[chosen.id] += size
        joined.add((chosen.id, group))
        orders.append({"name": name, "node": chosen.address, "size": size})
    return orders
