"""Bounded caches for readers of the archive, so that a hot page costs no lookups.

Contents are named by their hash, so a verified content never goes stale: it is kept until the
space is needed. Locations and structure answers can change (a node leaves, a capture arrives),
so they are kept for a few seconds only. Every cache is a least-recently-used map with a bound.
"""

import time
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

SMALL_CONTENT = 256 * 1024


class Lru(Generic[K, V]):
    """A least-recently-used map bounded by a total weight (bytes, or 1 per entry), with an
    optional time to live."""

    def __init__(self, max_weight: int, ttl: float | None = None) -> None:
        self.max_weight = max_weight
        self.ttl = ttl
        self.weight = 0
        self._items: OrderedDict[K, tuple[float, int, V]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None or (self.ttl is not None and item[0] < time.monotonic()):
            if item is not None:
                self.drop(key)
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return item[2]

    def put(self, key: K, value: V, weight: int = 1, ttl: float | None = None) -> None:
        """Keep `value`, for `ttl` seconds when given, else for the map's time to live."""
        if weight > self.max_weight:
            return
        self.drop(key)
        live = self.ttl if ttl is None else ttl
        expires = time.monotonic() + live if live is not None else 0.0
        self._items[key] = (expires, weight, value)
        self.weight += weight
        while self.weight > self.max_weight:
            _, (_, dropped, _) = self._items.popitem(last=False)
            self.weight -= dropped

    def drop(self, key: K) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.weight -= item[1]


class ReadCache:
    """What a reading client keeps: small contents, file locations, structure answers."""

    def __init__(
        self,
        content_bytes: int = 64 * 1024 * 1024,
        entries: int = 100_000,
        location_ttl: float = 30.0,
        answer_ttl: float = 5.0,
    ) -> None:
        self.contents: Lru[str, bytes] = Lru(content_bytes)
        self.locations: Lru[tuple[str, str], list[str]] = Lru(entries, location_ttl)
        self.answers: Lru[tuple[str, str, int], object] = Lru(entries, answer_ttl)

    def put_location(self, kind: str, name: str, holders: list[str]) -> None:
        """The holders of a file; those of a structure file are kept no longer than its answers,
        since the first to answer may be a replica that a capture appended since left behind."""
        ttl = self.answers.ttl if kind == "structure" else None
        self.locations.put((kind, name), holders, ttl=ttl)
