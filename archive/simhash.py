"""A 64-bit simhash over word shingles: pages that differ by a few words get signatures a few
bits apart, so near-duplicates (a changed date, a new counter) can be found later.

Words are the text's runs of letters, digits and "_", lowercased. The whole signature is made
by array operations over the text's UTF-8 bytes, with no Python step per word: a word's hash is
a polynomial hash of its bytes (from prefix sums of byte times power, divided by the power at
its start: the base is odd, so it has an inverse modulo 2**64), a shingle's hash mixes its
words' hashes, and MurmurHash3's finalizer spreads every bit of it over all 64."""

from typing import Any

import numpy as np

SHINGLE = 3  # words a shingle holds
MAX_WORDS = 50_000  # a signature of a longer text reads its first ones
_BASE = 0x100000001B3  # FNV's 64-bit prime: odd
# Odd constants each word of a shingle is multiplied by, so that word order counts.
_PLACES = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
)
_MIX_1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX_2 = np.uint64(0xC4CEB9FE1A85EC53)
_SHIFT = np.uint64(33)
# Bytes that end a word: ASCII but for letters, digits and "_" (a byte of a longer UTF-8
# character is taken as a letter).
_SEPARATES = np.array(
    [byte < 128 and not (chr(byte).isalnum() or byte == 95) for byte in range(256)], dtype=bool
)
_powers: list["np.ndarray[Any, Any]"] = []  # [base**i, base**-i] for i up to the longest text yet


def _powers_to(length: int) -> tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]:
    """The base's powers and inverse powers 0..length, grown (doubled) as longer texts come."""
    if not _powers or len(_powers[0]) <= length:
        size = max(4096, 2 * (length + 1))
        grown = []
        for factor in (_BASE, pow(_BASE, -1, 1 << 64)):
            series = np.full(size, factor, dtype=np.uint64)
            series[0] = 1
            grown.append(np.cumprod(series, dtype=np.uint64))
        _powers[:] = grown
    return _powers[0], _powers[1]


def _mix(values: "np.ndarray[Any, Any]") -> "np.ndarray[Any, Any]":
    values ^= values >> _SHIFT
    values *= _MIX_1
    values ^= values >> _SHIFT
    values *= _MIX_2
    values ^= values >> _SHIFT
    return values


def _word_hashes(text: str) -> "np.ndarray[Any, Any]":
    """A hash of each word of the text (its first MAX_WORDS), in order."""
    data = np.frombuffer(text.lower().encode("utf-8", "surrogatepass"), dtype=np.uint8)
    blank = _SEPARATES[data]
    edges = np.diff(np.concatenate(([1], blank.view(np.int8), [1])))
    starts = np.flatnonzero(edges == -1)[:MAX_WORDS]  # blank then not
    ends = np.flatnonzero(edges == 1)[: len(starts)]
    powers, inverses = _powers_to(len(data))
    with np.errstate(over="ignore"):
        sums = np.zeros(len(data) + 1, dtype=np.uint64)
        np.cumsum(data * powers[: len(data)], dtype=np.uint64, out=sums[1:])
        hashes = (sums[ends] - sums[starts]) * inverses[starts]
        return _mix(hashes + (ends - starts).astype(np.uint64))


def _shingle_hashes(words: "np.ndarray[Any, Any]") -> "np.ndarray[Any, Any]":
    span = min(SHINGLE, len(words))
    count = len(words) - span + 1
    with np.errstate(over="ignore"):
        mixed = words[:count] * _PLACES[0]
        for place in range(1, span):
            mixed = (mixed ^ (mixed >> _SHIFT)) + words[place : place + count] * _PLACES[place]
        return _mix(mixed)


def simhash(text: str) -> int:
    """The simhash of `text`: bit i is set when most of its shingles' hashes have it; 0 for a
    text without words."""
    words = _word_hashes(text)
    if not len(words):
        return 0
    hashes = _shingle_hashes(words)
    # Each hash's 64 bits, bit 0 first, counted down the column of every shingle.
    ones = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    majority = 2 * ones.sum(axis=0, dtype=np.uint32) > len(hashes)
    return int.from_bytes(np.packbits(majority, bitorder="little").tobytes(), "little")


def distance(a: int, b: int) -> int:
    """How many bits two signatures differ by: near-duplicates differ by a few (3 of 64 or less)."""
    return (a ^ b).bit_count()
