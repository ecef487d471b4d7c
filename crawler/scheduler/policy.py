"""The scheduler's policies: which crawled sites belong to the campaign and how relevant they are,
which unknown site to crawl first (expansion), and when to crawl a site again (temporal)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from archive.errors import CorruptFile, DlwebError

from ..report import words_of

__all__ = [
    "Filters",
    "Verdict",
    "change_rate",
    "guess_language",
    "judge",
    "new_chunk_share",
    "new_content_share",
    "next_interval",
    "priority",
]

_SIGNATURE = np.dtype("<u8")  # a text-chunk signature in the crawler's chunk files

# Frequent function words of each language the guesser knows. A word several languages share
# counts for each of them, divided among them, so the words only one has decide.
_FUNCTION_WORDS = {
    "en": "the and of to is in that it was for with as on are this be by have from not but at"
    " which they you his her were has an or will would what there their been we",
    "fr": "le la les et des est un une du que qui dans pour pas sur au avec ce il elle sont nous"
    " vous mais ou par plus cette ont aux été être je ne se son sa ses leur",
    "de": "der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es an"
    " als nach wie wir ich sie bei oder aus wird werden hat sind noch kann über",
    "es": "el la los las y que de en un una es por con para del se no al lo como más pero sus"
    " su le ha este esta está son muy también fue hay entre cuando todo yo",
    "it": "il la le di e che è un una per non con del della dei gli si sono da nel nella alla"
    " al ma come anche più questo questa ha ci lo essere loro io tutto",
    "nl": "de het een en van is dat die niet in op te zijn met voor er maar om ook als bij aan"
    " dan nog wat wordt naar heeft hij ze zij ik we worden deze uit kan geen door",
    "pt": "o a os as e de do da dos das que em no na um uma é para com não por mais se ao como"
    " mas foi ele ela são seu sua também muito há isso está nos",
}
_LANGUAGES_OF: dict[str, list[str]] = {}
for _language, _words in _FUNCTION_WORDS.items():
    for _word in _words.split():
        _LANGUAGES_OF.setdefault(_word, []).append(_language)
_WORD_WEIGHTS = {
    word: {language: 1.0 / len(languages) for language in languages}
    for word, languages in _LANGUAGES_OF.items()
}
MIN_LANGUAGE_SCORE = 2.0  # below it, too few function words to tell
MIN_LANGUAGE_LEAD = 1.25  # the best language's score over the next one's


@dataclass(frozen=True)
class Filters:
    """What a crawled site must show to belong to the campaign."""

    keywords: tuple[str, ...] = ()  # none: every site is as relevant
    min_keyword_hits: int = 1
    languages: tuple[str, ...] = ()  # ISO 639-1 codes; none: any language
    content_types: tuple[str, ...] = ("text/html",)  # at least one page of one of them
    min_pages: int = 1


@dataclass(frozen=True)
class Verdict:
    passed: bool
    relevance: float  # keyword hits per 1,000 words; 1.0 for every site when there are no keywords
    reasons: list[str] = field(default_factory=list)  # the filters it failed


def judge(report: Mapping[str, Any], filters: Filters, language: str | None = None) -> Verdict:
    """Whether a site crawl's report passes the campaign's filters, and how relevant it is.

    `language` is the site's (guess_language on some of its text), when known; a site whose
    language is not known is not refused for it.
    """
    reasons: list[str] = []
    pages = _count(report, "pages")
    if pages < filters.min_pages:
        reasons.append(f"{pages} pages, fewer than {filters.min_pages}")
    if filters.content_types:
        served = _mapping(report.get("content_types"))
        types = {
            str(kind).split(";")[0].strip().lower() for kind, n in served.items() if _number(n)
        }
        if not types.intersection(filters.content_types):
            reasons.append(
                f"no page of type {', '.join(filters.content_types)}"
                f" (served: {', '.join(sorted(types)) or 'none'})"
            )
    if filters.languages and language and language not in filters.languages:
        reasons.append(f"language {language}, not {', '.join(filters.languages)}")
    relevance = 1.0
    if filters.keywords:
        text = _mapping(report.get("text"))
        found = _mapping(text.get("keywords"))
        hits = sum(_count(found, keyword.lower()) for keyword in filters.keywords)
        relevance = 1000.0 * hits / max(_count(text, "words"), 1)
        if hits < filters.min_keyword_hits:
            reasons.append(f"{hits} keyword hits, fewer than {filters.min_keyword_hits}")
    return Verdict(passed=not reasons, relevance=relevance, reasons=reasons)


def guess_language(text: str) -> str:
    """The ISO 639-1 code of the language a text is in, among en, fr, de, es, it, nl and pt, from
    its frequent function words; "" when the text holds too few of them to tell."""
    scores = dict.fromkeys(_FUNCTION_WORDS, 0.0)
    for word in words_of(text):
        for language, weight in _WORD_WEIGHTS.get(word, {}).items():
            scores[language] += weight
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    (best, score), (_, runner_up) = ranked[0], ranked[1]
    if score < MIN_LANGUAGE_SCORE or score < MIN_LANGUAGE_LEAD * runner_up:
        return ""
    return best


def priority(
    relevances_of_referrers: Sequence[float], hubs_of_referrers: Sequence[float], authority: float
) -> float:
    """The priority of a site waiting for its first crawl:

        mean(referrers' relevance) x (1 + sum(referrers' hub ranks)) + own authority

    Relevant referrers say the site is likely on topic, good hubs among them say it is likely a
    good page of the topic; its authority (ranks are at most 1) breaks ties between sites with
    similar referrers. It grows with each term, all being >= 0; no referrer gives the authority.
    """
    relevance = (
        sum(relevances_of_referrers) / len(relevances_of_referrers)
        if (relevances_of_referrers)
        else 0.0
    )
    return relevance * (1.0 + sum(hubs_of_referrers)) + authority


def next_interval(
    previous: float,
    change: float,
    low: float = 0.05,
    high: float = 0.3,
    shortest: float = 3600,
    longest: float = 30 * 86400,
) -> float:
    """The seconds until a site's next crawl: half the previous interval when its last crawl
    changed more than `high`, twice when less than `low`, else the same, within [shortest,
    longest]; crawls so drift towards the site's own rhythm of updates."""
    if change > high:
        interval = previous / 2
    elif change < low:
        interval = previous * 2
    else:
        interval = previous
    return min(max(interval, shortest), longest)


def change_rate(report: Mapping[str, Any], previous_chunks: Path | None, chunks: Path) -> float:
    """How much a site changed since its previous crawl, from 0 to 1: the larger of the share of
    its text chunks that are new (text added to pages, or new pages) and the share of its contents
    that are new (any changed byte: also images, documents). The chunk share alone, if contents
    were all that changed, would miss new files; the content share alone would count every page
    whose date or advertisement changed, which the chunks see as the same text. Without a
    previous chunk file, the share of new contents alone."""
    contents = new_content_share(report)
    if previous_chunks is None:
        return contents
    return max(new_chunk_share(previous_chunks, chunks), contents)


def new_content_share(report: Mapping[str, Any]) -> float:
    """new / (new + known) contents of a crawl (known: in the previous crawl, 304s included)."""
    new, known = _count(report, "new_contents"), _count(report, "known_contents")
    return new / (new + known) if new + known else 0.0


def new_chunk_share(previous_chunks: Path, chunks: Path) -> float:
    """The share of a crawl's distinct text-chunk signatures absent from the previous crawl's.

    Distinct, so that a chunk every page repeats (a menu, a footer) counts once. The files are
    read whole, 8 bytes per signature: memory in proportion to the two crawls' text.
    """
    current = np.unique(_signatures(chunks))
    if not len(current):
        return 0.0
    before = np.unique(_signatures(previous_chunks))
    return float(1.0 - np.isin(current, before, assume_unique=True).mean())


def _signatures(path: Path) -> npt.NDArray[np.uint64]:
    try:
        size = path.stat().st_size
        if size % _SIGNATURE.itemsize:
            raise CorruptFile(
                f"{path}: {size} bytes, not a whole number of 8-byte chunk signatures"
            )
        return np.fromfile(path, dtype=_SIGNATURE)
    except OSError as error:
        raise DlwebError(f"{path}: cannot read the chunk signatures: {error}") from None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: object) -> float:
    """A count from a report, 0 when absent, negative or not a number (reports come from the
    network)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return max(float(value), 0.0)


def _count(values: Mapping[str, Any], key: str) -> int:
    return int(_number(values.get(key)))
