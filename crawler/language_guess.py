"""Which language a text is in, recognised by comparing it with judge texts: one running text per
language, shipped in judge_texts/ (<ISO 639-1 code>.txt, some 5 kB of the Universal Declaration
of Human Rights each), each kept as a Bloom filter of its character n-grams.

- A text is read as its runs of letters, lowercased, joined by one space and padded with one at
  each end (" the museum is open "): digits and punctuation say nothing of a language. Only its
  first MAX_CHARS characters and, of those, its first MAX_WORDS words are read.
- Its items are its character n-grams of 1 to 5 characters (a lone space left out): those that
  span a space tell how words start and end, whole short words and pairs of words.
- Each language's Bloom filter holds every n-gram of its judge text (4,600 to 8,100 distinct
  ones): FILTER_BITS bits, an n-gram setting HASHES of them (double hashing of a 64-bit hash of
  its code points). The filters are 7 to 12% full, a false positive rate of 0.002 to 0.02%.
  They are stored bit-sliced, word p of one table holding bit p of every language's filter
  (language i in bit i), so that one look-up tests an n-gram against all of them. They are
  built once, lazily, from the shipped texts, in about 0.1 s.
- A text's score in a language is the fraction of its n-grams (each occurrence) that the
  language's filter holds, an n-gram that h filters hold counting 1/h in each: n-grams common
  to many languages (" a", "on") barely count, those of one language fully.
- The best language is named when the text has at least MIN_LETTERS letters, its score is at
  least MIN_SCORE and MIN_LEAD times the next one's; otherwise the guess is "" (too short, a
  script no judge text is in, languages mixed, or two close languages not told apart).
"""

import functools
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .words import words_of

__all__ = ["LANGUAGES", "guess_language", "judge_filters", "words_of"]

_LETTERS = re.compile(r"[^\W\d_]+")


JUDGE_TEXTS = Path(__file__).with_name("judge_texts")
LANGUAGES = tuple(sorted(path.stem for path in JUDGE_TEXTS.glob("??.txt")))
MAX_WORDS = 500  # words of a text read
MAX_CHARS = 6_000  # characters of a text read, however few words they hold (scripts without spaces)
ORDERS = (1, 2, 3, 4, 5)  # lengths of the character n-grams
FILTER_BITS = 1 << 18
HASHES = 4  # positions an n-gram sets in a filter
MIN_LETTERS = 10  # a shorter text is too short to tell
MIN_SCORE = 0.05  # text of a script no judge text is in scores about 0
MIN_LEAD = 1.2  # the best language's score over the next one's

_U64 = npt.NDArray[np.uint64]
_ROUNDS = np.arange(HASHES, dtype=np.intp)
_SPACE = ord(" ")
_POLY = np.uint64(0x100000001B3)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))
assert len(LANGUAGES) <= 64, "one bit of a table word per language"


def _letter_runs(text: str, max_words: int) -> list[str]:
    return _LETTERS.findall(text.lower())[:max_words]


def _padded(words: list[str]) -> str:
    return f" {' '.join(words)} "


def _hashes(letters: str) -> _U64:
    """A 64-bit hash of each character n-gram of `letters`, computed on all of them at once."""
    points = np.frombuffer(letters.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    found = []
    with np.errstate(over="ignore"):
        for order in ORDERS:
            count = len(points) - order + 1
            if count <= 0:
                break
            hashes = np.zeros(count, dtype=np.uint64)
            for offset in range(order):
                hashes = hashes * _POLY + points[offset : offset + count]
            if order == 1:
                hashes = hashes[points != _SPACE]
            hashes ^= np.uint64(order << 56)
            hashes ^= hashes >> np.uint64(30)  # the finaliser of splitmix64: every bit mixed
            hashes *= _MIX[0]
            hashes ^= hashes >> np.uint64(27)
            hashes *= _MIX[1]
            hashes ^= hashes >> np.uint64(31)
            found.append(hashes)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.uint64)


def _positions(hashes: _U64) -> npt.NDArray[np.intp]:
    """Each n-gram's HASHES positions in a filter (a row each), by double hashing."""
    mask = FILTER_BITS - 1
    first = (hashes & np.uint64(mask)).astype(np.intp)
    step = ((hashes >> np.uint64(32)) & np.uint64(mask)).astype(np.intp) | 1
    return (first[:, None] + _ROUNDS * step[:, None]) & mask


@functools.cache
def judge_filters() -> _U64:
    """The languages' Bloom filters, bit-sliced: bit i of word p is bit p of language i's."""
    table = np.zeros(FILTER_BITS, dtype=np.uint64)
    for bit, language in enumerate(LANGUAGES):
        judge = (JUDGE_TEXTS / f"{language}.txt").read_text("utf-8")
        hashes = np.sort(_hashes(_padded(_letter_runs(judge, len(judge)))))
        hashes = hashes[np.concatenate(([True], hashes[1:] != hashes[:-1]))]  # each n-gram once
        table[_positions(hashes).ravel()] |= np.uint64(1 << bit)
    return table


def _scores(words: list[str]) -> list[tuple[float, str]]:
    """Each language's score: the share of the text's n-grams its filter holds, an n-gram that
    several filters hold shared among them."""
    held = np.bitwise_and.reduce(judge_filters()[_positions(_hashes(_padded(words)))], axis=1)
    bits = np.unpackbits(
        held.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little"
    )
    bits = bits[:, : len(LANGUAGES)]
    holders = np.maximum(bits.sum(axis=1, dtype=np.float64), 1.0)
    shares = (bits / holders[:, None]).sum(axis=0) / max(1, len(bits))
    return list(zip(shares.tolist(), LANGUAGES, strict=True))


def guess_language(text: str) -> str:
    """The ISO 639-1 code of the language a text is in, among LANGUAGES, or "" when it cannot be
    told."""
    words = _letter_runs(text[:MAX_CHARS], MAX_WORDS)
    if sum(map(len, words)) < MIN_LETTERS:
        return ""
    (score, best), (runner_up, _) = sorted(_scores(words), reverse=True)[:2]
    if score < MIN_SCORE or score < MIN_LEAD * runner_up:
        return ""
    return best
