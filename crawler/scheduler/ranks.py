"""Hub and authority ranks (HITS, Kleinberg 1999) of the sites on the graph of links between them.

A good hub links to many good authorities, a good authority is linked from many good hubs: the
scheduler gives a discovered site a priority from its referrers' hub ranks and its own authority.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import numpy as np
import numpy.typing as npt

__all__ = ["hits"]


def hits(
    edges: Iterable[tuple[int, int, int]], iterations: int = 30, tolerance: float = 1e-8
) -> tuple[dict[int, float], dict[int, float]]:
    """Hub and authority ranks of every site with a link, from (source, target, link count)
    edges; self-links are left out.

    An edge weighs log(1 + count): a site linked from every page of another counts more than
    one linked once, but not in proportion (a menu link repeats on every page). Both vectors are
    scaled to unit length (L2) after each step, and the iteration stops once no rank moves by
    more than `tolerance`, or after `iterations`. Site ids are mapped to dense indexes and each
    step is two weighted sums over the edge arrays, so the time is linear in the number of edges.
    """
    table = np.fromiter(chain.from_iterable(edges), dtype=np.int64).reshape(-1, 3)
    table = table[table[:, 0] != table[:, 1]]
    if not len(table):
        return {}, {}
    ids, dense = np.unique(table[:, :2], return_inverse=True)
    dense = dense.reshape(-1, 2)
    sources, targets = dense[:, 0], dense[:, 1]
    weights = np.log1p(np.maximum(table[:, 2], 1).astype(np.float64))
    nodes = len(ids)
    hubs = np.full(nodes, 1.0 / np.sqrt(nodes))
    authorities = _unit_sums(targets, weights * hubs[sources], nodes)
    for _ in range(iterations):
        new_hubs = _unit_sums(sources, weights * authorities[targets], nodes)
        new_authorities = _unit_sums(targets, weights * new_hubs[sources], nodes)
        moved = max(
            float(np.abs(new_hubs - hubs).max()),
            float(np.abs(new_authorities - authorities).max()),
        )
        hubs, authorities = new_hubs, new_authorities
        if moved <= tolerance:
            break
    keys = ids.tolist()
    return dict(zip(keys, hubs.tolist(), strict=True)), dict(
        zip(keys, authorities.tolist(), strict=True)
    )


def _unit_sums(
    nodes_of: npt.NDArray[np.intp], values: npt.NDArray[np.float64], nodes: int
) -> npt.NDArray[np.float64]:
    """The sum of `values` by node (`nodes_of` names each value's), scaled to unit length."""
    sums = np.asarray(np.bincount(nodes_of, weights=values, minlength=nodes), dtype=np.float64)
    norm = float(np.linalg.norm(sums))
    return sums / norm if norm > 0 else sums
