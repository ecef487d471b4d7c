"""The readers' caches: bounded by weight, least recently used out first, entries that expire."""

import time

from archive.cache import Lru, ReadCache


def test_the_least_recently_used_goes_first_within_the_bound():
    cache: Lru[str, bytes] = Lru(10)
    cache.put("a", b"aaaa", 4)
    cache.put("b", b"bbbb", 4)
    assert cache.get("a") == b"aaaa"  # now b is the least recently used
    cache.put("c", b"cccc", 4)
    assert cache.get("b") is None and cache.get("a") == b"aaaa" and cache.get("c") == b"cccc"
    assert cache.weight == 8
    cache.put("huge", b"x" * 11, 11)  # larger than the whole cache: not kept
    assert cache.get("huge") is None and cache.weight == 8
    cache.put("a", b"a", 1)  # replacing an entry replaces its weight
    assert cache.weight == 5
    assert (cache.hits, cache.misses) == (3, 2)


def test_entries_expire_after_their_time_to_live():
    cache: Lru[str, int] = Lru(100, ttl=0.05)
    cache.put("x", 1)
    assert cache.get("x") == 1
    deadline = time.monotonic() + 0.06
    while time.monotonic() < deadline:
        pass
    assert cache.get("x") is None and cache.weight == 0


def test_structure_locations_are_kept_no_longer_than_structure_answers():
    cache = ReadCache(location_ttl=60, answer_ttl=0.05)
    cache.put_location("content", "c" * 64, ["http://a"])
    cache.put_location("structure", "s" * 64, ["http://b"])
    deadline = time.monotonic() + 0.06
    while time.monotonic() < deadline:
        pass
    assert cache.locations.get(("structure", "s" * 64)) is None
    assert cache.locations.get(("content", "c" * 64)) == ["http://a"]
