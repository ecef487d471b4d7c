"""A 64-bit simhash over word shingles: pages that differ by a few words get signatures a few
bits apart, so near-duplicates (a changed date, a new counter) can be found later."""

import re

import numpy as np
import xxhash

SHINGLE = 3  # words a shingle holds
MAX_WORDS = 50_000  # a signature of a longer text reads its first ones
_WORD = re.compile(r"\w+", re.UNICODE)
_BITS = np.arange(64, dtype=np.uint64)


def simhash(text: str) -> int:
    """The simhash of `text`: bit i is set when most of its shingles' xxh64 hashes have it; 0
    for a text without words."""
    words = _WORD.findall(text.lower())[:MAX_WORDS]
    if not words:
        return 0
    span = min(SHINGLE, len(words))
    shingles = (" ".join(words[i : i + span]) for i in range(len(words) - span + 1))
    hashes = np.fromiter((xxhash.xxh64_intdigest(s.encode()) for s in shingles), dtype=np.uint64)
    ones = ((hashes[:, None] >> _BITS) & np.uint64(1)).sum(axis=0)
    signature = 0
    for bit, count in enumerate(ones.tolist()):
        if 2 * count > len(hashes):
            signature |= 1 << bit
    return signature


def distance(a: int, b: int) -> int:
    """How many bits two signatures differ by: near-duplicates differ by a few (3 of 64 or less)."""
    return (a ^ b).bit_count()
