"""SeenSet on a million URLs in under 20 MB; level queues that spill to disk and keep FIFO order,
spread dynamic URLs among static ones and leave no file behind; a frontier that serves the lowest
level first."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

import pytest

from crawler.frontier import Frontier, LevelQueue, SeenSet


def random_urls(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"http://h{r & 63}.example/{r:x}" for r in (rng.getrandbits(64) for _ in range(count))]


def drain(queue: LevelQueue) -> list[tuple[str, str]]:
    popped = []
    while (entry := queue.pop()) is not None:
        popped.append(entry)
    return popped


def test_seen_set_holds_a_million_urls_in_under_20_mb() -> None:
    urls = random_urls(1_000_000, seed=1)
    seen = SeenSet()
    assert all([seen.add(url) for url in urls])
    assert len(seen) == 1_000_000
    assert seen.nbytes() < 20_000_000
    sample = urls[::20]
    assert not any(seen.add(url) for url in sample)
    assert all(url in seen for url in sample)
    assert not any(url + "/" in seen for url in sample)
    assert len(seen) == 1_000_000


def test_seen_set_small() -> None:
    seen = SeenSet()
    assert "http://a.fr/" not in seen
    assert seen.add("http://a.fr/")
    assert not seen.add("http://a.fr/")
    assert "http://a.fr/" in seen
    assert "http://a.fr" not in seen
    assert seen.add("http://a.fr/é\udcff")
    assert len(seen) == 2
    assert 0 < seen.nbytes() < 20_000


def test_level_queue_keeps_fifo_order_across_spills(tmp_path: Path) -> None:
    queue = LevelQueue(tmp_path, level=3, memory_items=10)
    urls = [f"http://a.fr/p{n}.html" for n in range(95)]
    for n, url in enumerate(urls):
        queue.push(url, via=f"http://a.fr/from{n}" if n % 2 else "")
    assert len(queue) == 95
    assert len(list(tmp_path.iterdir())) == 9
    popped = drain(queue)
    assert [url for url, _ in popped] == urls
    assert [via for _, via in popped][:4] == ["", "http://a.fr/from1", "", "http://a.fr/from3"]
    assert len(queue) == 0
    assert list(tmp_path.iterdir()) == []


def test_push_while_popping_matches_a_plain_fifo(tmp_path: Path) -> None:
    rng = random.Random(7)
    queue = LevelQueue(tmp_path / "queues", level=1, memory_items=8)
    model: dict[bool, deque[tuple[str, str]]] = {False: deque(), True: deque()}
    popped: dict[bool, list[tuple[str, str]]] = {False: [], True: []}
    expected: dict[bool, list[tuple[str, str]]] = {False: [], True: []}
    for step in range(20_000):
        if rng.random() < 0.55:
            dynamic = rng.random() < 0.2
            url = f"http://a.fr/{'s.php?n=' if dynamic else 'p'}{step}"
            entry = (url, f"via {step} ü")
            queue.push(*entry)
            model[dynamic].append(entry)
        else:
            got = queue.pop()
            if got is None:
                assert not model[False] and not model[True]
                continue
            dynamic = "?" in got[0]
            popped[dynamic].append(got)
            expected[dynamic].append(model[dynamic].popleft())
        assert len(queue) == len(model[False]) + len(model[True])
    assert popped == expected
    assert len(popped[True]) > 100
    queue.close()
    assert list((tmp_path / "queues").iterdir()) == []


@pytest.mark.parametrize("memory_items", [1, 4, 1000])
def test_dynamic_urls_are_spread_among_static_ones(tmp_path: Path, memory_items: int) -> None:
    queue = LevelQueue(tmp_path, level=2, memory_items=memory_items)
    for n in range(10):
        queue.push(f"http://a.fr/search?q={n}")
    for n in range(100):
        queue.push(f"http://a.fr/page{n}.html")
    order = "".join("D" if "?" in url else "s" for url, _ in drain(queue))
    assert order.count("D") == 10
    runs = [len(run) for run in order.split("D")]
    assert all(9 <= run <= 11 for run in runs[1:-1])
    assert runs[0] <= 11 and runs[-1] <= 11
    queue.close()


def test_more_dynamic_than_static_spreads_the_static_ones(tmp_path: Path) -> None:
    queue = LevelQueue(tmp_path, level=0)
    for n in range(50):
        queue.push(f"http://a.fr/page{n}.html")
        queue.push(f"http://a.fr/x.php?n={n}")
        queue.push(f"http://a.fr/y.php?n={n}")
    order = "".join("D" if "?" in url else "s" for url, _ in drain(queue))
    assert "ss" not in order
    assert "DDDD" not in order


def test_close_removes_files(tmp_path: Path) -> None:
    queue = LevelQueue(tmp_path, level=5, memory_items=3)
    for n in range(20):
        queue.push(f"http://a.fr/{n}")
        queue.push(f"http://a.fr/{n}?x")
    assert queue.pop() is not None
    assert list(tmp_path.iterdir())
    queue.close()
    assert list(tmp_path.iterdir()) == []
    assert len(queue) == 0
    assert queue.pop() is None


def test_memory_items_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="memory_items 0 is below 1"):
        LevelQueue(tmp_path, level=0, memory_items=0)


def test_frontier_serves_the_lowest_level_first(tmp_path: Path) -> None:
    frontier = Frontier(tmp_path, memory_items=5)
    frontier.push("http://a.fr/", 0)
    for n in range(30):
        frontier.push(f"http://a.fr/2/{n}", 2, via="http://a.fr/1/0")
    for n in range(12):
        frontier.push(f"http://a.fr/1/{n}", 1, via="http://a.fr/")
    assert frontier.sizes() == {0: 1, 1: 12, 2: 30}
    assert len(frontier) == 43
    assert frontier.next() == ("http://a.fr/", 0, "")
    assert frontier.next() == ("http://a.fr/1/0", 1, "http://a.fr/")
    frontier.push("http://a.fr/0/late", 0)
    assert frontier.next() == ("http://a.fr/0/late", 0, "")
    served = []
    while (entry := frontier.next()) is not None:
        served.append(entry)
    assert [url for url, _, _ in served] == [f"http://a.fr/1/{n}" for n in range(1, 12)] + [
        f"http://a.fr/2/{n}" for n in range(30)
    ]
    assert [level for _, level, _ in served] == [1] * 11 + [2] * 30
    assert frontier.sizes() == {}
    assert frontier.next() is None
    assert list(tmp_path.iterdir()) == []


def test_frontier_memory_stays_bounded_and_close_removes_files(tmp_path: Path) -> None:
    frontier = Frontier(tmp_path, memory_items=100)
    for n in range(20_000):
        frontier.push(f"http://a.fr/page/{n}/with/a/longish/path.html", n % 3, via="http://a.fr/")
    assert frontier.sizes() == {0: 6667, 1: 6667, 2: 6666}
    # Each level holds 100 entries and a write buffer; the 20,000 entries would take ~4 MB.
    assert frontier.nbytes() < 400_000
    frontier.close()
    assert list(tmp_path.iterdir()) == []
    assert frontier.next() is None
