"""The URL-seen test and the queues of one site crawl, small enough for sites of millions of URLs.

The seen set keeps 8 bytes per URL: its 64-bit xxhash in an open-addressing table. Two URLs with
the same fingerprint would make the second one look seen; among ten million URLs that happens with
a probability of about 3 in a million, an acceptable price for not holding the URLs.

Each depth level is a FIFO queue keeping a bounded number of entries in memory and the rest on disk,
in segment files written and read sequentially: pushes append to the current write segment, pops
read whole finished segments back in order and delete them.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections import deque
from pathlib import Path
from typing import BinaryIO

import xxhash

from .delimitation import is_dynamic

_MAX_LOAD = 0.7
_MIN_SLOTS = 1024
_RECORD_HEAD = struct.Struct("<II")  # byte lengths of the URL and of the referrer that follow
_WRITE_BUFFER = 1 << 16
_ENCODING_ERRORS = "surrogatepass"
_ENTRY_OVERHEAD = sys.getsizeof(("", "")) + 8  # the pair's tuple and its deque slot


def fingerprint(url: str) -> int:
    """The 64-bit xxhash of `url`, never 0, which marks an empty slot."""
    return xxhash.xxh64_intdigest(url.encode("utf-8", _ENCODING_ERRORS)) or 1


class SeenSet:
    """The fingerprints of the URLs a crawl has met, in a linear-probing table of 64-bit slots,
    doubled when more than 70% full; pass URLs in one spelling, such as their canonical form."""

    __slots__ = ("_table", "_mask", "_count", "_limit")

    def __init__(self) -> None:
        self._table = array("Q", bytes(8 * _MIN_SLOTS))
        self._mask = _MIN_SLOTS - 1
        self._count = 0
        self._limit = int(_MIN_SLOTS * _MAX_LOAD)

    def add(self, url: str) -> bool:
        """True when `url` was not seen before; it is seen from now on."""
        key = fingerprint(url)
        slot, found = self._probe(key)
        if found:
            return False
        self._table[slot] = key
        self._count += 1
        if self._count > self._limit:
            self._grow()
        return True

    def __contains__(self, url: str) -> bool:
        return self._probe(fingerprint(url))[1]

    def _probe(self, key: int) -> tuple[int, bool]:
        """The slot holding `key`, or the empty slot where it would go; and whether it is held."""
        table = self._table
        mask = self._mask
        slot = key & mask
        while True:
            held = table[slot]
            if held == key:
                return slot, True
            if not held:
                return slot, False
            slot = (slot + 1) & mask

    def __len__(self) -> int:
        return self._count

    def nbytes(self) -> int:
        return sys.getsizeof(self._table)

    def _grow(self) -> None:
        slots = len(self._table) * 2
        table = array("Q", bytes(8 * slots))
        mask = slots - 1
        for key in self._table:
            if key:
                slot = key & mask
                while table[slot]:
                    slot = (slot + 1) & mask
                table[slot] = key
        self._table = table
        self._mask = mask
        self._limit = int(slots * _MAX_LOAD)


class SpillQueue:
    """A FIFO of (url, via) pairs holding at most `memory_items` in memory, the rest in segments.

    While any entry is on disk, new ones go to disk too, behind it, so order is kept.
    """

    def __init__(self, directory: Path, name: str, memory_items: int) -> None:
        self._directory = directory
        self._name = name
        self._memory_items = memory_items
        self._memory: deque[tuple[str, str]] = deque()
        self._segments: deque[Path] = deque()
        self._writer: BinaryIO | None = None
        self._writer_path = directory
        self._written = 0  # entries in the write segment
        self._on_disk = 0
        self._segment_number = 0

    def __len__(self) -> int:
        return len(self._memory) + self._on_disk

    def push(self, url: str, via: str) -> None:
        if not self._on_disk and len(self._memory) < self._memory_items:
            self._memory.append((url, via))
            return
        if self._writer is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            self._writer_path = self._directory / f"{self._name}-{self._segment_number:08d}.queue"
            self._segment_number += 1
            self._writer = self._writer_path.open("wb", buffering=_WRITE_BUFFER)
        url_bytes = url.encode("utf-8", _ENCODING_ERRORS)
        via_bytes = via.encode("utf-8", _ENCODING_ERRORS)
        self._writer.write(
            _RECORD_HEAD.pack(len(url_bytes), len(via_bytes)) + url_bytes + via_bytes
        )
        self._written += 1
        self._on_disk += 1
        if self._written >= self._memory_items:
            self._finish_segment()

    def in_memory(self) -> int:
        """Entries held in memory; the rest are on disk."""
        return len(self._memory)

    def pop(self) -> tuple[str, str] | None:
        if not self._memory and self._on_disk:
            self._load_segment()
        return self._memory.popleft() if self._memory else None

    def nbytes(self) -> int:
        """An estimate of the memory its entries and its write buffer take."""
        entries = sum(sys.getsizeof(url) + sys.getsizeof(via) for url, via in self._memory)
        buffer = _WRITE_BUFFER if self._writer is not None else 0
        return entries + len(self._memory) * _ENTRY_OVERHEAD + buffer

    def close(self) -> None:
        """Forget every entry and remove its files."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._writer_path.unlink(missing_ok=True)
        while self._segments:
            self._segments.popleft().unlink(missing_ok=True)
        self._memory.clear()
        self._on_disk = self._written = 0

    def _finish_segment(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._segments.append(self._writer_path)
            self._written = 0

    def _load_segment(self) -> None:
        """Read the oldest segment into memory, in one sequential read, and delete it."""
        if not self._segments:
            self._finish_segment()
        path = self._segments.popleft()
        data = path.read_bytes()
        path.unlink()
        offset = 0
        unpack = _RECORD_HEAD.unpack_from
        head = _RECORD_HEAD.size
        append = self._memory.append
        while offset < len(data):
            url_length, via_length = unpack(data, offset)
            url_start = offset + head
            via_start = url_start + url_length
            offset = via_start + via_length
            append(
                (
                    data[url_start:via_start].decode("utf-8", _ENCODING_ERRORS),
                    data[via_start:offset].decode("utf-8", _ENCODING_ERRORS),
                )
            )
        self._on_disk -= len(self._memory)


class LevelQueue:
    """The URLs of one depth level, first in first out, with dynamic URLs spread among static ones.

    Static and dynamic URLs (crawler.delimitation.is_dynamic) wait in two queues, each keeping at
    most `memory_items` entries in memory and spilling the rest to files in `directory`, which it
    must not share with another crawl. pop() takes a dynamic URL with a probability equal to the
    dynamic share of what is waiting, made deterministic by a credit: each pop adds that share to
    it, and a credit of 1 buys a dynamic URL. So a script's pages are fetched spread over the
    level rather than in a burst.
    """

    def __init__(self, directory: Path, level: int, memory_items: int = 10_000) -> None:
        if memory_items < 1:
            raise ValueError(f"memory_items {memory_items} is below 1")
        self.level = level
        self._static = SpillQueue(directory, f"level{level:04d}-static", memory_items)
        self._dynamic = SpillQueue(directory, f"level{level:04d}-dynamic", memory_items)
        self._credit = 0.5  # half a pop's worth: the first dynamic URL comes mid-way, not last

    def push(self, url: str, via: str = "") -> None:
        """Queue `url`; `via` is the page it was found in, kept for reports, or ""."""
        (self._dynamic if is_dynamic(url) else self._static).push(url, via)

    def pop(self) -> tuple[str, str] | None:
        """The next (url, via), or None when the level is empty."""
        dynamic = len(self._dynamic)
        if not dynamic:
            return self._static.pop()
        self._credit += dynamic / (dynamic + len(self._static))
        if self._credit >= 1:
            self._credit -= 1
            return self._dynamic.pop()
        return self._static.pop()

    def __len__(self) -> int:
        return len(self._static) + len(self._dynamic)

    def nbytes(self) -> int:
        return self._static.nbytes() + self._dynamic.nbytes()

    def close(self) -> None:
        """Forget every entry and remove its files."""
        self._static.close()
        self._dynamic.close()


class Frontier:
    """The levels of one breadth-first crawl: next() serves the lowest level holding a URL."""

    def __init__(self, directory: Path, memory_items: int = 10_000) -> None:
        self._directory = directory
        self._memory_items = memory_items
        self._levels: dict[int, LevelQueue] = {}

    def push(self, url: str, level: int, via: str = "") -> None:
        queue = self._levels.get(level)
        if queue is None:
            queue = self._levels[level] = LevelQueue(self._directory, level, self._memory_items)
        queue.push(url, via)

    def next(self) -> tuple[str, int, str] | None:
        """The next (url, level, via), or None when every level is empty."""
        while self._levels:
            level = min(self._levels)
            entry = self._levels[level].pop()
            if entry is not None:
                return entry[0], level, entry[1]
            self._levels.pop(level).close()
        return None

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._levels.values())

    def sizes(self) -> dict[int, int]:
        """URLs waiting at each level that holds some, for monitoring."""
        return {level: len(queue) for level, queue in sorted(self._levels.items()) if len(queue)}

    def nbytes(self) -> int:
        """An estimate of the memory the waiting URLs take; the rest are on disk."""
        return sum(queue.nbytes() for queue in self._levels.values())

    def close(self) -> None:
        """Forget every URL and remove the queue files."""
        while self._levels:
            self._levels.popitem()[1].close()
