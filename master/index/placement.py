"""Where the index node sends new contents: for each, a chain of nodes that take new files and
have room, one per failure domain first, then the roomiest, spread among nodes of about as much
room; and spares to stand in for a node of the chain that fails."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import xxhash

from archive.hip import RemoteError
from archive.insert_calls import UploadOrder

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


def _seed(node: str) -> int:
    """A node's number for `_draw`, the same in every process (Python's own string hash is
    not)."""
    return xxhash.xxh3_64_intdigest(node.encode())


def _draw(name: bytes, seed: int) -> int:
    """A number that tells apart nodes of about as much room for one content, so each node comes
    first for its share: a hash of the name seeded with the node's number (xxh3, a C call of a
    fraction of a microsecond, where a BLAKE2b of the name and the node cost the index node
    several microseconds a node and content)."""
    return xxhash.xxh3_64_intdigest(name, seed)


def place(
    nodes: Sequence[NodeInfo], sizes: Mapping[str, int], copies: int = 1
) -> list[UploadOrder]:
    """An upload order for each name: `copies` nodes that can take it, then spares, the bytes
    planned on a node counted against its free space; RemoteError no_node when fewer than
    `copies` nodes can take one (an insert is never acknowledged with fewer copies).

    The nodes of an order are those of another failure domain than the nodes before them first,
    then those within SAME_ROOM of the roomiest, then by `_draw`: the nodes ranked once by room
    and draw, then taken one per domain in that order, then the others in that order."""
    takers = [node for node in nodes if node.state == "alive"]
    # Free space less the bytes planned in this call, and each node's seed, computed once: this
    # runs for every new content of every insert.
    left = {node.id: node.free for node in takers}
    seeded = [(node, node.headroom, _seed(node.id)) for node in takers]
    wanted = copies + SPARES
    orders = []
    for name, size in sizes.items():
        able = [(node, seed) for node, headroom, seed in seeded if left[node.id] - size >= headroom]
        if len(able) < copies:
            domains = len({node.domain for node in takers})
            raise RemoteError(
                "no_node",
                f"insert: {name} needs {copies} copies on distinct nodes, and only {len(able)}"
                f" of the {len(takers)} nodes taking writes (in {domains} failure domains) have"
                f" room for {size} more bytes{_full(nodes)}",
            )
        floor = max(left[node.id] for node, _ in able) - SAME_ROOM
        raw = name.encode()
        ranked = sorted(able, key=lambda pair: (left[pair[0].id] < floor, _draw(raw, pair[1])))
        chain: list[NodeInfo] = []
        later: list[NodeInfo] = []
        domains_held: set[str] = set()
        for node, _ in ranked:
            if node.domain in domains_held:
                later.append(node)
            else:
                chain.append(node)
                domains_held.add(node.domain)
        chain = (chain + later)[:wanted]
        for node in chain[:copies]:
            left[node.id] -= size
        orders.append(UploadOrder(name, size, tuple(node.address for node in chain)))
    return orders
