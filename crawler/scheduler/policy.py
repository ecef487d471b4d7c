"""The scheduler's policies: which crawled sites belong to the campaign and how relevant they are,
which unknown site to crawl first (expansion), when to crawl a site again and how deep (temporal)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from archive.errors import CorruptFile, DlwebError

from ..language_guess import guess_language

__all__ = [
    "DepthHint",
    "Filters",
    "Verdict",
    "change_rate",
    "depth_hint",
    "guess_language",
    "judge",
    "new_chunk_share",
    "new_content_share",
    "next_interval",
    "priority",
]

_SIGNATURE = np.dtype("<u8")  # a text-chunk signature in the crawler's chunk files


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


@dataclass(frozen=True)
class DepthHint:
    """The depth of a site's next crawl, and why."""

    depth: int
    full: int  # the site's own maximum depth
    reason: str

    @property
    def cut(self) -> bool:
        return self.depth < self.full


def depth_hint(
    full: int, reports: Sequence[Mapping[str, Any]], crawls: int, quiet: int = 3, every: int = 10
) -> DepthHint:
    """How deep a site's next crawl goes, from its last crawls' reports (newest first) and how
    many crawls it had: the deepest level where any of its last `quiet` crawls found new contents,
    the levels below it being cut; the site's full depth while it had fewer crawls, when one of
    them tells no levels (a failed crawl, or a crawler from before levels), and every `every`-th
    crawl, which so looks for change where the others no longer go. A level a crawl did not
    reach counts as unchanged in it: a cut level stays cut until a deeper crawl finds change
    there. `quiet` 0 never cuts; `every` 0 never comes back to the full depth by itself."""
    if quiet <= 0:
        return DepthHint(full, full, "depth hints off")
    if every > 0 and (crawls + 1) % every == 0:
        return DepthHint(full, full, f"every {every}th crawl goes to the full depth")
    recent = reports[:quiet]
    if len(recent) < quiet:
        return DepthHint(full, full, f"fewer than {quiet} crawls")
    deepest = 0
    for report in recent:
        changed = _changed_levels(report)
        if changed is None:
            return DepthHint(full, full, "a recent crawl tells no levels")
        deepest = max(deepest, *changed)
    if deepest >= full:
        return DepthHint(full, full, f"changes down to level {deepest}")
    return DepthHint(deepest, full, f"no change below level {deepest} in {quiet} crawls")


def _changed_levels(report: Mapping[str, Any]) -> list[int] | None:
    """The levels where a crawl found new contents (0 for none), None when its report tells no
    levels (reports come from the network: keys that are not levels are left out)."""
    levels = _mapping(report.get("levels"))
    if not levels:
        return None
    changed = [0]
    for level, counts in levels.items():
        if isinstance(level, str) and level.isdigit() and _count(_mapping(counts), "new_contents"):
            changed.append(int(level))
    return changed


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
