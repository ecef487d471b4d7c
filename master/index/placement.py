"""Where the index node sends new contents: for each, a chain of nodes that take new files and
have room, one per failure domain first, then the roomiest, spread among nodes of about as much
room; and spares to stand in for a node of the chain that fails."""

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archive.hip import RemoteError
from archive.inserts import UploadOrder

# Space a node keeps free at least: 64 MiB, or 1% of a smaller disk.
HEADROOM = 64 * 1024 * 1024
# Nodes with at most this much less room than the roomiest are told apart by a hash of the name
# and the node, not by their free space: nodes sharing a disk, or filling evenly, would otherwise
# give the same one the last place every time (their free space, sent every few seconds, is noise
# at this scale), and preferring nodes already subscribed to a name's multicast group made the
# nodes that joined first take ever more (every node holds every group after a few thousand
# files anyway).
SAME_ROOM = 1024**3
# Nodes an order names beyond its chain, tried in turn when a node of the chain fails.
SPARES = 2


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A storage node as the master's cluster.nodes lists it."""

    id: str
    address: str
    state: str = "alive"
    free: int = 0
    total: int = 0
    groups: frozenset[int] = field(default_factory=frozenset)
    domain: str = ""
    reserve: int = 0
    # Read-only because its disk is at its reserve (the master's reason "full").
    full: bool = False

    @property
    def headroom(self) -> int:
        """Free space an upload must leave: at least the reserve under which the node itself
        refuses new files."""
        return max(min(HEADROOM, self.total // 100), self.reserve)


def node_info(data: Mapping[str, Any]) -> NodeInfo:
    groups = data.get("groups") or []
    return NodeInfo(
        id=str(data["id"]),
        address=str(data["address"]).rstrip("/"),
        state=str(data.get("state", "alive")),
        free=int(data.get("free") or 0),
        total=int(data.get("total") or 0),
        groups=frozenset(g for g in groups if isinstance(g, int)),
        domain=str(data.get("domain") or data["id"]),
        reserve=int(data.get("reserve") or 0),
        full=data.get("reason") == "full",
    )


def _full(nodes: Sequence[NodeInfo]) -> str:
    """What a refusal adds when nodes take no writes because their disks are full."""
    full = sorted(node.id for node in nodes if node.full)
    return f"; full disks keep {', '.join(full)} from taking any" if full else ""


def _draw(name: str, node: str) -> int:
    """A number that tells apart nodes of about as much room for one content, the same in every
    process (Python's own string hash is not), so each node comes first for its share."""
    return int.from_bytes(hashlib.blake2b(f"{name} {node}".encode(), digest_size=8).digest())


def place(
    nodes: Sequence[NodeInfo], sizes: Mapping[str, int], copies: int = 1
) -> list[UploadOrder]:
    """An upload order for each name: `copies` nodes that can take it, then spares, the bytes
    planned on a node counted against its free space; RemoteError no_node when fewer than
    `copies` nodes can take one (an insert is never acknowledged with fewer copies)."""
    takers = [node for node in nodes if node.state == "alive"]
    planned: Counter[str] = Counter()
    orders = []
    for name, size in sizes.items():
        able = [node for node in takers if node.free - planned[node.id] - size >= node.headroom]
        if len(able) < copies:
            domains = len({node.domain for node in takers})
            raise RemoteError(
                "no_node",
                f"insert: {name} needs {copies} copies on distinct nodes, and only {len(able)}"
                f" of the {len(takers)} nodes taking writes (in {domains} failure domains) have"
                f" room for {size} more bytes{_full(nodes)}",
            )
        chain: list[NodeInfo] = []
        domains_held: set[str] = set()
        roomiest = max(node.free - planned[node.id] for node in able)
        draws = {node.id: _draw(name, node.id) for node in able}
        while able and len(chain) < copies + SPARES:
            best = min(
                able,
                key=lambda node: (
                    node.domain in domains_held,
                    node.free - planned[node.id] < roomiest - SAME_ROOM,
                    draws[node.id],
                ),
            )
            able.remove(best)
            chain.append(best)
            domains_held.add(best.domain)
        for node in chain[:copies]:
            planned[node.id] += size
        orders.append(UploadOrder(name, size, tuple(node.address for node in chain)))
    return orders
