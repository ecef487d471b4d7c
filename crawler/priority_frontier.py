"""The queue of a focused site crawl: the best-scored URL comes next, memory stays flat.

Scores (0 to 1) fall in SCORE_STEPS + 1 buckets of width 1/SCORE_STEPS; each bucket is a FIFO
spill queue (frontier.py), so URLs of one bucket come in the order they were met (breadth-first
within a score), and a push or a pop costs O(1) plus O(log buckets) to find the best bucket.
Each bucket keeps `memory_items / buckets` entries in memory, but never fewer than
MIN_BUCKET_ITEMS so that its segment files are not tiny, and the rest on disk: at most
max(memory_items, MIN_BUCKET_ITEMS * buckets in use) entries are in memory. Pinned URLs
(injected by the campaign) have buckets of their own, above every other.

A URL's current score lives in a table of about 26 bytes per queued URL (its fingerprint, score,
level and how many pieces of evidence made it; 18 bytes a slot, 70% full at most), like the seen
set. New evidence for a queued URL goes through the update function (UPDATE_FUNCTIONS); when the
score moves to another bucket, the URL is filed again there and its stale copy is dropped when
popped: re-prioritisation is lazy, each piece of evidence costs O(1), with no heap to rebuild
and nothing to search on disk.
"""

from __future__ import annotations

import heapq
from array import array
from pathlib import Path

from archive.crawl_calls import UPDATE_FUNCTIONS

from .frontier import SpillQueue, fingerprint

__all__ = ["MIN_BUCKET_ITEMS", "SCORE_STEPS", "PriorityFrontier", "ScoreTable", "bucket_of"]

SCORE_STEPS = 100  # buckets per unit of score: scores closer than 0.01 tie
_PINNED_BASE = SCORE_STEPS + 1  # a pinned URL's bucket is this plus its score's bucket
_BUCKETS = 2 * (SCORE_STEPS + 1)
MIN_BUCKET_ITEMS = 64
_DONE = -1.0  # the score of a URL served already: later evidence for it is ignored
_PINNED = 0  # the evidence count of a pinned URL: its score never changes
_FIXED = 0xFFFFFFFF  # that of a URL queued with a referrer mark (site.py): its score never changes
_MAX_LEVEL = 0xFFFF
_MAX_LOAD = 0.7
_MIN_SLOTS = 1024


def bucket_of(score: float, pinned: bool = False) -> int:
    """The bucket of a score (clamped to 0..1)."""
    bucket = round(min(max(score, 0.0), 1.0) * SCORE_STEPS)
    return bucket + _PINNED_BASE if pinned else bucket


def updated(function: str, old: float, count: int, new: float) -> float:
    """The score after one more piece of evidence `new`, `count` pieces having made `old`."""
    if function == "max":
        return max(old, new)
    if function == "avg":
        return (old * count + new) / (count + 1)
    if function == "last":
        return new
    return old


class ScoreTable:
    """Scores, evidence counts and levels by URL fingerprint, in a linear-probing table of
    parallel arrays (8 + 4 + 4 + 2 bytes a slot), doubled when more than 70% full."""

    __slots__ = ("_keys", "_scores", "_counts", "_levels", "_mask", "_count", "_limit")

    def __init__(self) -> None:
        self._allocate(_MIN_SLOTS)
        self._count = 0

    def _allocate(self, slots: int) -> None:
        self._keys = array("Q", bytes(8 * slots))
        self._scores = array("f", bytes(4 * slots))
        self._counts = array("I", bytes(4 * slots))
        self._levels = array("H", bytes(2 * slots))
        self._mask = slots - 1
        self._limit = int(slots * _MAX_LOAD)

    def _slot(self, key: int) -> int:
        keys, mask = self._keys, self._mask
        slot = key & mask
        while keys[slot] and keys[slot] != key:
            slot = (slot + 1) & mask
        return slot

    def get(self, key: int) -> tuple[float, int, int] | None:
        """(score, evidence count, level) of a fingerprint, or None when it is not held."""
        slot = self._slot(key)
        if not self._keys[slot]:
            return None
        return self._scores[slot], self._counts[slot], self._levels[slot]

    def put(self, key: int, score: float, count: int, level: int | None = None) -> float:
        """Hold `score` and `count` (and `level`, when given) for the fingerprint; the score as
        stored (32 bits)."""
        slot = self._slot(key)
        if not self._keys[slot]:
            self._keys[slot] = key
            self._count += 1
        self._scores[slot] = score
        self._counts[slot] = count
        if level is not None:
            self._levels[slot] = min(level, _MAX_LEVEL)
        stored = self._scores[slot]
        if self._count > self._limit:
            self._grow()
        return stored

    def __len__(self) -> int:
        return self._count

    def nbytes(self) -> int:
        return len(self._keys) * 18

    def _grow(self) -> None:
        keys, scores, counts, levels = self._keys, self._scores, self._counts, self._levels
        self._allocate(2 * len(keys))
        for key, score, count, level in zip(keys, scores, counts, levels, strict=True):
            if key:
                slot = self._slot(key)
                self._keys[slot] = key
                self._scores[slot] = score
                self._counts[slot] = count
                self._levels[slot] = level


class PriorityFrontier:
    """The URLs of one focused crawl: next() serves the best-scored one (pinned ones first)."""

    def __init__(self, directory: Path, update: str = "avg", memory_items: int = 10_000) -> None:
        if update not in UPDATE_FUNCTIONS:
            raise ValueError(f"update function {update!r} is not one of {UPDATE_FUNCTIONS}")
        if memory_items < 1:
            raise ValueError(f"memory_items {memory_items} is below 1")
        self._directory = directory
        self._update = update
        self._bucket_items = max(MIN_BUCKET_ITEMS, memory_items // _BUCKETS)
        self._buckets: dict[int, SpillQueue] = {}
        self._order: list[int] = []  # the negated numbers of the buckets that hold entries
        self._scores = ScoreTable()
        self._waiting = 0  # URLs queued and not served (stale copies left out)

    def push(self, url: str, level: int, via: str = "", score: float = 0.0) -> None:
        """Queue a URL first met now, with its score; one with a `via` keeps that score."""
        count = _FIXED if via else 1
        self._file(url, via, self._scores.put(fingerprint(url), score, count, level), False)
        self._waiting += 1

    def pin(self, url: str, level: int, score: float) -> None:
        """Queue a URL ahead of every unpinned one, its score fixed."""
        self._file(url, "", self._scores.put(fingerprint(url), score, _PINNED, level), True)
        self._waiting += 1

    def update(self, url: str, score: float) -> bool:
        """Weigh new evidence for a URL met again; False when it is not waiting (served, or
        never queued) or pinned."""
        key = fingerprint(url)
        held = self._scores.get(key)
        if held is None or held[0] == _DONE or held[1] in (_PINNED, _FIXED):
            return False
        old, count, _ = held
        new = self._scores.put(key, updated(self._update, old, count, score), count + 1)
        if bucket_of(new) != bucket_of(old):
            self._file(url, "", new, False)
        return True

    def score(self, url: str) -> float | None:
        """The current score of a waiting URL."""
        held = self._scores.get(fingerprint(url))
        return None if held is None or held[0] == _DONE else held[0]

    def next(self) -> tuple[str, int, str] | None:
        """The next (url, level, via), or None when no URL waits."""
        while self._order:
            number = -self._order[0]
            queue = self._buckets[number]
            entry = queue.pop()
            if entry is None:
                heapq.heappop(self._order)
                self._buckets.pop(number).close()
                continue
            url, via = entry
            key = fingerprint(url)
            held = self._scores.get(key)
            if held is None or held[0] == _DONE:
                continue
            score, count, level = held
            if bucket_of(score, count == _PINNED) != number:
                continue  # a stale copy: the URL is filed in its new bucket too
            self._scores.put(key, _DONE, count)
            self._waiting -= 1
            return url, level, via
        return None

    def _file(self, url: str, via: str, score: float, pinned: bool) -> None:
        number = bucket_of(score, pinned)
        queue = self._buckets.get(number)
        if queue is None:
            name = f"score{number:04d}"
            queue = self._buckets[number] = SpillQueue(self._directory, name, self._bucket_items)
            heapq.heappush(self._order, -number)
        queue.push(url, via)

    def __len__(self) -> int:
        return self._waiting

    def sizes(self) -> dict[int, int]:
        """Entries filed in each score bucket (in hundredths; pinned ones above 100), stale
        copies included, for monitoring."""
        return {number: len(queue) for number, queue in sorted(self._buckets.items())}

    def in_memory(self) -> int:
        """Entries held in memory; the rest are on disk."""
        return sum(queue.in_memory() for queue in self._buckets.values())

    def nbytes(self) -> int:
        """An estimate of the memory the queued URLs and their scores take."""
        return self._scores.nbytes() + sum(q.nbytes() for q in self._buckets.values())

    def close(self) -> None:
        """Forget every URL and remove the queue files."""
        while self._buckets:
            self._buckets.popitem()[1].close()
        self._order.clear()
