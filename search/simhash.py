"""A 64-bit simhash over word shingles: pages that differ by a few words get signatures a few
bits apart, so near-duplicates (a changed date, a new counter) can be found later."""

import re

import numpy as np
import xxhash

SHINGLE = 3  # words a shingle holds
MAX_WORDS = 50_000  # a signature of a longer text reads its first ones
_WORD = re.compile(r"\w+", re.UNICODE)


def simhash(text: str) -> int:
    """The simhash of `text`: bit i is set when most of its shingles' xxh64 hashes have it; 0
    for a text without words."""
    words = _WORD.findall(text.lower())[:MAX_WORDS]
    if not words:
        return 0
    span = min(SHINGLE, len(words))
    count = len(words) - span + 1
    shingles = map(str.encode, map(" ".join, zip(*(words[i:] for i in range(span)), strict=False)))
    hashes = np.fromiter(map(xxhash.xxh64_intdigest, shingles), dtype="<u8", count=count)
    # Each hash's 64 bits, bit 0 first, counted down the column of every shingle.
    ones = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    signature = 0
    for bit, set_in in enumerate(ones.sum(axis=0).tolist()):
        if 2 * set_in > count:
            signature |= 1 << bit
    return signature


def distance(a: int, b: int) -> int:
    """How many bits two signatures differ by: near-duplicates differ by a few (3 of 64 or less)."""
    return (a ^ b).bit_count()
