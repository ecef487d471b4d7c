"""A site's characteristic phrases, one to four words, found from its text by variable-length
n-grams (docs/crawler.md "Phrases").

Every run of one to four words inside a sentence is counted whose first and last words are not
stop-words. Once the site is read, an n-gram that occurs often enough is kept unless a longer one
holding it keeps most of its count: "museum of fine arts" stands for "fine arts" when the two
nearly always come together. What is left is ranked by count, weighed down for words any site
uses (a background of common words) and up for length.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COMMON_WORDS", "STOP_WORDS", "PhraseCounter", "phrase_words", "phrases_of"]

MAX_WORDS = 4  # the longest phrase
MAX_TABLE = 20_000  # n-grams counted at once (about 2 MB); the rarer half is dropped when full
MAX_DOCUMENT_WORDS = 300  # words of one document read for phrases: its start says what it is about
MAX_SITE_WORDS = 5_000  # words of one site read for phrases: its first pages, breadth-first
# Characters of a document looked at for its first MAX_DOCUMENT_WORDS words (about 6 a word).
MAX_DOCUMENT_CHARACTERS = 12 * MAX_DOCUMENT_WORDS
# Characters of a site's first documents its report carries for its phrases (report.py): a bound
# for texts of scripts without spaces, where MAX_SITE_WORDS would not be one.
MAX_SAMPLE_CHARACTERS = 64 * 1024
TOP_PHRASES = 30  # the site's characteristic phrases reported
MIN_COUNT = 3  # fewer occurrences: not a phrase of the site
# A longer n-gram stands for a shorter one inside it when it has at least this share of its count.
ABSORB = 0.6
BACKGROUND = 0.25  # the weight of a common word against 1 for any other
LENGTH_BONUS = 0.5  # a phrase's score grows by this share for each word past the first

# Sentences, list items, cells and links are not read across: n-grams stay inside them.
_BREAK = re.compile(r"[.!?;:,()\[\]{}|/\\\"<>«»“”—–•·\n\r\t]+")
_WORD = re.compile(r"\w+")

_STOP_TEXT = (
    # English
    "a about above after again against all am an and any are as at be because been before being"
    " below between both but by can could did do does doing down during each few for from"
    " further had has have having he her here hers herself him himself his how i if in into is"
    " it its itself just me more most my myself no nor not now of off on once only or other our"
    " ours ourselves out over own same she should so some such than that the their theirs them"
    " themselves then there these they this those through to too under until up very was we"
    " were what when where which while who whom why will with would you your yours yourself"
    " also may might must shall us s t don"
    # French
    " à au aux avec ce ces cet cette dans de des du elle elles en et eux il ils je la le les"
    " leur leurs lui ma mais me même mes moi mon ne nos notre nous on ou où par pas pour qu que"
    " qui sa se ses son sont sur ta te tes toi ton tu un une vos votre vous y été être est"
    " ont l d j n c ni car donc or si plus moins comme aussi très"
    # German, Spanish, Italian: their most frequent
    " der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es an als"
    " el los las y que en por con para del se no al lo una il di e che è per non della dei gli"
    " sono da nel nella alla every"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())
# Words any site uses: they make a poor phrase alone and weigh less in one.
_COMMON_TEXT = (
    "home page pages site website web contact contacts about search menu login log sign"
    " register account privacy policy terms conditions cookies cookie copyright rights reserved"
    " all news more read next previous back top click here link links share follow email mail"
    " new one two three first last time year years day days today information info help faq"
    " use used using make made get see also like just well many much way ways people world"
    " good best great free open find view show list main section sections content"
    " accueil plan mentions légales recherche connexion compte partager suivre lire suite"
    " nouveau nouvelle nouvelles premier première année ans jour jours aujourd hui voir tout"
    " tous toute toutes faire fait bien actualités"
)
COMMON_WORDS = frozenset(_COMMON_TEXT.split())


def phrase_words(text: str) -> list[list[str]]:
    """The lower-case words of a text, in runs that n-grams do not cross."""
    return [words for part in _BREAK.split(text.lower()) if (words := _WORD.findall(part))]


def _edge(word: str) -> bool:
    """Whether a phrase may begin or end with the word: not a stop-word, not a number."""
    return word not in STOP_WORDS and not word.isdigit() and len(word) > 1


@dataclass
class PhraseCounter:
    """The n-grams of a site's text as it is crawled, in a table of bounded size."""

    max_table: int = MAX_TABLE
    max_site_words: int = MAX_SITE_WORDS
    words: int = 0  # read for phrases so far
    pruned: int = 0  # times the table was full and its rarer half dropped
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, text: str) -> None:
        budget = min(MAX_DOCUMENT_WORDS, self.max_site_words - self.words)
        if budget <= 0:
            return
        for run in phrase_words(text[:MAX_DOCUMENT_CHARACTERS]):
            if budget <= 0:
                return
            run = run[:budget]
            budget -= len(run)
            self.words += len(run)
            self._count(run)

    def _count(self, run: list[str]) -> None:
        counts = self.counts
        edges = [_edge(word) for word in run]
        for i, first in enumerate(run):
            if not edges[i]:
                continue
            gram = first
            counts[gram] = counts.get(gram, 0) + 1
            for j in range(i + 1, min(i + MAX_WORDS, len(run))):
                gram += " " + run[j]
                if edges[j]:
                    counts[gram] = counts.get(gram, 0) + 1
        if len(counts) >= self.max_table:
            self._prune()

    def _prune(self) -> None:
        """Drop the n-grams counted at most as often as the median one: the rare ones."""
        values = sorted(self.counts.values())
        cut = values[len(values) // 2]
        self.counts = {gram: n for gram, n in self.counts.items() if n > cut}
        self.pruned += 1

    def phrases(self, top: int = 30, min_count: int = MIN_COUNT) -> list[tuple[str, int]]:
        """The site's `top` phrases with their counts, best first."""
        frequent = {gram: n for gram, n in self.counts.items() if n >= min_count}
        kept = set(frequent) - _absorbed(frequent)
        ranked = sorted(kept, key=lambda gram: (-_score(gram, frequent[gram]), gram))
        return [(gram, frequent[gram]) for gram in ranked[:top]]


def _absorbed(frequent: dict[str, int]) -> set[str]:
    """The n-grams a longer frequent one holds, with most of their count."""
    absorbed: set[str] = set()
    for gram, count in frequent.items():
        words = gram.split(" ")
        for inner in _inner_grams(words):
            found = frequent.get(inner)
            if found is not None and count >= ABSORB * found:
                absorbed.add(inner)
    return absorbed


def _inner_grams(words: list[str]) -> Iterable[str]:
    """The shorter n-grams inside one that may be phrases (no stop-word at an edge)."""
    for length in range(1, len(words)):
        for start in range(len(words) - length + 1):
            part = words[start : start + length]
            if _edge(part[0]) and _edge(part[-1]):
                yield " ".join(part)


def _score(gram: str, count: int) -> float:
    """Count, times how uncommon the phrase's words are on average, with a bonus for length."""
    words = gram.split(" ")
    content = [word for word in words if word not in STOP_WORDS]
    weight = sum(BACKGROUND if word in COMMON_WORDS else 1.0 for word in content) / len(content)
    return count * weight * (1 + LENGTH_BONUS * (len(words) - 1))


def phrases_of(sample: object, top: int = TOP_PHRASES) -> list[dict[str, Any]]:
    """The phrases of a site from the sample of its text its report carries (`phrase_sample`,
    the starts of its first documents), as the report gives them; a sample that is not a list
    of texts gives none."""
    counter = PhraseCounter()
    left = MAX_SAMPLE_CHARACTERS
    for text in sample if isinstance(sample, list) else ():
        if not isinstance(text, str) or left <= 0:
            break
        counter.add(text[:left])
        left -= len(text)
    return [{"phrase": phrase, "count": count} for phrase, count in counter.phrases(top)]
