"""Replica targets and the choice of a node for a new copy."""

from collections.abc import Callable, Collection, Sequence

from archive.config import RELIABILITIES, Replication

from .db import NodeRow

RELIABILITY_RANK = {name: rank for rank, name in enumerate(RELIABILITIES)}


def target_function(policy: Replication) -> Callable[[str, int, int], int]:
    """The replica target of a file: the default, more for structure files, small contents and
    contents many captures refer to."""

    def target(kind: str, size: int, refs: int) -> int:
        wanted = policy.default
        if kind == "structure":
            return wanted + policy.structure_extra
        if size <= policy.small_bytes:
            wanted += policy.small_extra
        if refs >= policy.popular_refs:
            wanted += policy.popular_extra
        return wanted

    return target


def choose_node(
    candidates: Sequence[NodeRow],
    name: str,
    holders: Collection[str],
    domains_held: Collection[str],
    planned: dict[str, int] | None = None,
) -> NodeRow | None:
    """The best node for a new copy of `name`, or None when no candidate may take it.

    Nodes already holding it are skipped. Then, in order: a failure domain that holds no copy
    yet, a more reliable class, a node already subscribed to the name's multicast group (so
    subscriptions stay compact), and the most free space, less what is already planned for it.
    """
    group = int(name[:2], 16)
    planned = planned or {}
    best: tuple[tuple[int, int, int, int], NodeRow] | None = None
    for node in candidates:
        if node.id in holders:
            continue
        free = node.free - planned.get(node.id, 0)
        key = (
            0 if node.domain not in domains_held else 1,
            RELIABILITY_RANK.get(node.reliability, 1),
            0 if group in node.groups else 1,
            -free,
        )
        if best is None or key < best[0]:
            best = (key, node)
    return None if best is None else best[1]
