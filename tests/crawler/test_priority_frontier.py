"""The focused crawl's frontier: best score first (pinned URLs above all, ties in the order met),
scores updated by the focus's function, memory bounded with the rest spilled to disk; and the
breadth-first frontier kept for orders without a focus or injected URLs."""

import random
from pathlib import Path

import pytest

from archive.crawl_calls import CrawlOrder, Focus, ScoredUrl
from crawler.frontier import Frontier
from crawler.order import Order
from crawler.priority_frontier import MIN_BUCKET_ITEMS, PriorityFrontier
from crawler.site import queues_for


def drain(frontier: PriorityFrontier) -> list[tuple[str, int, str]]:
    served = []
    while (entry := frontier.next()) is not None:
        served.append(entry)
    return served


def test_best_score_comes_first_pinned_urls_above_all_ties_in_the_order_met(
    tmp_path: Path,
) -> None:
    frontier = PriorityFrontier(tmp_path)
    frontier.push("http://a.fr/low", 1, score=0.1)
    frontier.push("http://a.fr/high", 2, score=0.9)
    frontier.push("http://a.fr/tie-1", 1, score=0.5)
    frontier.push("http://a.fr/tie-2", 3, score=0.5)
    frontier.pin("http://a.fr/injected-low", 1, 0.2)
    frontier.pin("http://a.fr/injected-high", 1, 0.8)
    frontier.push("http://a.fr/top", 1, score=1.0)
    assert len(frontier) == 7
    assert drain(frontier) == [
        ("http://a.fr/injected-high", 1, ""),
        ("http://a.fr/injected-low", 1, ""),
        ("http://a.fr/top", 1, ""),
        ("http://a.fr/high", 2, ""),
        ("http://a.fr/tie-1", 1, ""),
        ("http://a.fr/tie-2", 3, ""),
        ("http://a.fr/low", 1, ""),
    ]
    assert len(frontier) == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("function", "expected"),
    [("max", 0.9), ("avg", (0.3 + 0.9 + 0.6) / 3), ("last", 0.6), ("first", 0.3)],
)
def test_a_url_met_again_takes_the_new_evidence_by_the_update_function(
    tmp_path: Path, function: str, expected: float
) -> None:
    frontier = PriorityFrontier(tmp_path, function)
    frontier.push("http://a.fr/met-again", 2, score=0.3)
    frontier.push("http://a.fr/middle", 1, score=0.45)
    assert frontier.update("http://a.fr/met-again", 0.9)
    assert frontier.update("http://a.fr/met-again", 0.6)
    assert frontier.score("http://a.fr/met-again") == pytest.approx(expected, abs=1e-6)
    served = [url for url, _, _ in drain(frontier)]
    first = "http://a.fr/met-again" if expected > 0.45 else "http://a.fr/middle"
    assert served[0] == first and len(served) == 2  # the stale copy is not served
    assert not frontier.update("http://a.fr/met-again", 1.0)  # served: no longer waiting
    assert not frontier.update("http://a.fr/never-queued", 1.0)


def test_pinned_urls_and_urls_with_a_referrer_mark_keep_their_score(tmp_path: Path) -> None:
    frontier = PriorityFrontier(tmp_path, "max")
    frontier.pin("http://a.fr/injected", 1, 0.4)
    frontier.push("http://a.fr/former-component", 1, "\x00component", 0.5)
    assert not frontier.update("http://a.fr/injected", 1.0)
    assert not frontier.update("http://a.fr/former-component", 1.0)
    assert frontier.score("http://a.fr/injected") == pytest.approx(0.4)
    assert drain(frontier)[1] == ("http://a.fr/former-component", 1, "\x00component")


def test_memory_stays_bounded_the_rest_spilled_and_order_kept_through_updates(
    tmp_path: Path,
) -> None:
    rng = random.Random(5)
    frontier = PriorityFrontier(tmp_path / "queues", "max", memory_items=1_000)
    scores: dict[str, float] = {}
    buckets_used: set[int] = set()
    most_in_memory = 0
    for n in range(4_000):
        url = f"http://a.fr/p{n}"
        scores[url] = rng.choice((0.1, 0.3, 0.5, 0.7, 0.9)) + rng.uniform(-0.02, 0.02)
        frontier.push(url, n % 7, "", scores[url])
        buckets_used.add(round(scores[url] * 100))
        if n % 3 == 0:
            again = f"http://a.fr/p{rng.randrange(n + 1)}"
            evidence = rng.choice((0.2, 0.4, 0.6, 0.8))
            frontier.update(again, evidence)
            scores[again] = max(scores[again], evidence)
            buckets_used.add(round(scores[again] * 100))
        most_in_memory = max(most_in_memory, frontier.in_memory())
    assert most_in_memory <= MIN_BUCKET_ITEMS * len(buckets_used) < 4_000
    assert len(frontier) == 4_000
    assert list((tmp_path / "queues").iterdir())  # the rest is on disk
    served = drain(frontier)
    assert sorted(url for url, _, _ in served) == sorted(scores)
    assert all(level == int(url[13:]) % 7 for url, level, _ in served)
    buckets = [round(scores[url] * 100) for url, _, _ in served]
    assert buckets == sorted(buckets, reverse=True)
    assert list((tmp_path / "queues").iterdir()) == []


def order(**fields: object) -> Order:
    return Order.from_message(CrawlOrder("http://a.fr/", **fields))  # type: ignore[arg-type]


def test_breadth_first_frontier_unless_the_order_has_a_focus_or_injected_urls(
    tmp_path: Path,
) -> None:
    assert type(queues_for(order(), tmp_path)) is Frontier
    assert type(queues_for(order(blocked=("re:print",)), tmp_path)) is Frontier
    focused = order(focus=Focus(keywords=("flood",), update="max"))
    assert isinstance(queues_for(focused, tmp_path), PriorityFrontier)
    injected = order(injected=(ScoredUrl("http://a.fr/x", 0.5),))
    assert isinstance(queues_for(injected, tmp_path), PriorityFrontier)
