"""HITS on the site graph: the expected order on small graphs, link counts, self-links, and the
principal eigenvectors it converges to."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from crawler.scheduler.ranks import hits

# Two hubs pointing to three authorities: hub 1 to all three, hub 2 to the first two.
HUBS_AND_AUTHORITIES = [(1, 10, 1), (1, 11, 1), (1, 12, 1), (2, 10, 1), (2, 11, 1)]


def test_hubs_and_authorities_of_a_small_graph() -> None:
    hubs, authorities = hits(HUBS_AND_AUTHORITIES)
    assert set(hubs) == set(authorities) == {1, 2, 10, 11, 12}
    assert hubs[1] > hubs[2] > 0
    assert hubs[10] == hubs[11] == hubs[12] == 0
    assert authorities[10] == pytest.approx(authorities[11])
    assert authorities[11] > authorities[12] > 0
    assert authorities[1] == authorities[2] == 0
    assert math.fsum(h * h for h in hubs.values()) == pytest.approx(1.0)
    assert math.fsum(a * a for a in authorities.values()) == pytest.approx(1.0)


def test_self_links_are_left_out() -> None:
    assert hits([*HUBS_AND_AUTHORITIES, (12, 12, 50)]) == hits(HUBS_AND_AUTHORITIES)
    assert hits([(5, 5, 3)]) == ({}, {})
    assert hits([]) == ({}, {})


def test_an_edge_weighs_the_logarithm_of_its_link_count() -> None:
    hubs, authorities = hits([(1, 10, 100), (1, 11, 1)])
    assert authorities[10] / authorities[11] == pytest.approx(math.log1p(100) / math.log1p(1))
    assert hubs[1] == pytest.approx(1.0)


def test_it_converges_to_the_principal_eigenvectors() -> None:
    rng = random.Random(7)
    edges = {(rng.randrange(40), rng.randrange(40)): rng.randrange(1, 20) for _ in range(300)}
    listed = [(src, dst, count) for (src, dst), count in edges.items()]
    hubs, authorities = hits(listed, iterations=1000, tolerance=1e-12)
    nodes = sorted(hubs)
    index = {node: n for n, node in enumerate(nodes)}
    matrix = np.zeros((len(nodes), len(nodes)))
    for src, dst, count in listed:
        if src != dst:
            matrix[index[src], index[dst]] = math.log1p(count)
    for product, ranks in ((matrix.T @ matrix, authorities), (matrix @ matrix.T, hubs)):
        values, vectors = np.linalg.eigh(product)
        principal = np.abs(vectors[:, np.argmax(values)])
        assert np.allclose([ranks[node] for node in nodes], principal, atol=1e-6)
    # The default iterations already come close.
    quick_hubs, _ = hits(listed)
    assert max(abs(quick_hubs[node] - hubs[node]) for node in nodes) < 1e-3


def test_it_stops_at_the_tolerance() -> None:
    # A graph whose ranks are exact after one step: more iterations change nothing.
    assert hits(HUBS_AND_AUTHORITIES, iterations=1, tolerance=1.0) == hits(
        HUBS_AND_AUTHORITIES, iterations=1, tolerance=0.0
    )
    exact = hits([(1, 2, 1), (3, 2, 1)], iterations=100, tolerance=0.0)
    assert exact == (
        {1: pytest.approx(math.sqrt(0.5)), 2: 0.0, 3: pytest.approx(math.sqrt(0.5))},
        {1: 0.0, 2: 1.0, 3: 0.0},
    )
