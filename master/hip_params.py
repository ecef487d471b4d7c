"""What the master's HIP handlers share beyond the messages' own checks (archive/node_calls.py,
archive/index_calls.py): a call from an agent of another role is `forbidden`, and a joining
storage node becomes the row the master keeps of it."""

from archive.hip import Peer, RemoteError, bad_params
from archive.node_calls import NODE_JOIN, NodeJoin

from .db import NodeRow


def require_role(peer: Peer, role: str, method: str) -> None:
    if peer.role != role:
        raise RemoteError("forbidden", f"{method} is for agents of role {role}")


def joining_node(peer: Peer, joining: NodeJoin) -> NodeRow:
    """The storage node a `node.join` describes, which must be the one on the connection."""
    if joining.id != peer.name:
        raise bad_params(
            NODE_JOIN.name,
            f"id {joining.id!r} differs from the connection's name {peer.name!r}",
        )
    return NodeRow(
        id=joining.id,
        address=joining.address,
        domain=joining.domain,
        reliability=joining.reliability,
        free=joining.free,
        total=joining.total,
        groups=list(joining.groups),
        reserve=joining.reserve,
        full=joining.full,
    )
