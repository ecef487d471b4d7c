"""What a site crawl tells the scheduler when it ends, and the text analysis behind it."""

import time
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import xxhash

from .keywords import (
    MAX_DOCUMENT_CHARACTERS,
    MAX_DOCUMENT_WORDS,
    MAX_SAMPLE_CHARACTERS,
    MAX_SITE_WORDS,
)
from .page_changes import PageChanges
from .relevance import RELEVANT
from .retries import RetryReport
from .site_graph import SiteGraph
from .words import words_of

__all__ = ["RelevanceStats", "SiteReport", "TextStats", "chunk_signatures", "words_of"]

MAX_LISTED = 10_000  # external links, feeds, streams kept per site
MAX_TEXTS = 5  # anchor texts kept per external link
LANGUAGE_SAMPLE = 2_000  # words of a site's text its language is told from
# Characters of that sample sent in the report (language_guess.py reads no more).
SAMPLE_CHARACTERS = 6_000
# A chunk ends after a word whose last letter and length fall on one value in 16: about 16 words
# per chunk, with boundaries set by the text alone, so an edit changes its own chunk's signature
# and leaves the others be. (Cheap on purpose: it runs on every word of every page.)
_BOUNDARY = 0
_MIN_CHUNK_WORDS = 4


def chunk_signatures(words: list[str]) -> list[int]:
    """64-bit signatures of content-defined chunks of a text's words (for change detection)."""
    signatures: list[int] = []
    start = 0
    for end, word in enumerate(words, 1):
        if end - start >= _MIN_CHUNK_WORDS and (ord(word[-1]) + len(word)) & 0xF == _BOUNDARY:
            signatures.append(xxhash.xxh64_intdigest(" ".join(words[start:end]).encode()))
            start = end
    if start < len(words):
        signatures.append(xxhash.xxh64_intdigest(" ".join(words[start:]).encode()))
    return signatures


@dataclass
class TextStats:
    documents: int = 0
    characters: int = 0
    words: int = 0
    chunks: int = 0
    keywords: Counter[str] = field(default_factory=Counter)  # the campaign's, counted
    # The first documents' starts, for the site's phrases, counted where the report arrives
    # (keywords.py phrases_of), and how many words and characters they hold.
    phrase_sample: list[str] = field(default_factory=list)
    phrase_words: int = 0
    phrase_characters: int = 0
    sample: list[str] = field(default_factory=list)  # the first words of the site, for its language
    # Where the chunk signatures go, 8 bytes each (little-endian), as they are found.
    out: Callable[[bytes], None] | None = None

    def add(self, text: str, keywords: tuple[str, ...]) -> list[int]:
        """Count a document's text; its chunk signatures."""
        if not text:
            return []
        self.documents += 1
        self.characters += len(text)
        words = words_of(text)
        self.words += len(words)
        if len(self.sample) < LANGUAGE_SAMPLE:
            self.sample.extend(words[: LANGUAGE_SAMPLE - len(self.sample)])
        if keywords:
            lowered = text.lower()
            for keyword in keywords:
                if found := lowered.count(keyword):
                    self.keywords[keyword] += found
        if self.phrase_words < MAX_SITE_WORDS and self.phrase_characters < MAX_SAMPLE_CHARACTERS:
            start = text[:MAX_DOCUMENT_CHARACTERS]
            self.phrase_sample.append(start)
            self.phrase_words += min(len(words), MAX_DOCUMENT_WORDS)
            self.phrase_characters += len(start)
        signatures = chunk_signatures(words)
        self.chunks += len(signatures)
        if self.out is not None:
            self.out(array("Q", signatures).tobytes())
        return signatures


@dataclass
class RelevanceStats:
    """The relevance of a focused crawl's pages (relevance.py): how many scored, how many
    relevant (RELEVANT or more), their mean, and how many fall in each tenth of 0 to 1."""

    pages: int = 0
    relevant: int = 0
    total: float = 0.0
    tenths: list[int] = field(default_factory=lambda: [0] * 10)

    def add(self, score: float) -> None:
        self.pages += 1
        self.relevant += score >= RELEVANT
        self.total += score
        self.tenths[min(9, max(0, int(score * 10)))] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "relevant_pages": self.relevant,
            "threshold": RELEVANT,
            "mean": round(self.total / self.pages, 4) if self.pages else 0.0,
            "tenths": self.tenths,
        }


@dataclass
class SiteReport:
    start_url: str
    started: float = field(default_factory=time.time)
    finished: float = 0.0
    pages: int = 0
    components: int = 0
    bytes: int = 0
    not_modified: int = 0
    new_contents: int = 0
    known_contents: int = 0
    uploaded: int = 0
    uploaded_bytes: int = 0
    robots_excluded: int = 0
    traps: int = 0
    blocked: int = 0  # URLs met that the order's blocked patterns kept from being asked for
    browser_pages: int = 0  # pages loaded in the agent's browser
    levels: Counter[int] = field(default_factory=Counter)
    # New and known contents by the level of the page they came with: where a site changes.
    new_by_level: Counter[int] = field(default_factory=Counter)
    known_by_level: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    external: dict[str, list[str]] = field(default_factory=dict)
    feeds: set[str] = field(default_factory=set)
    streams: set[str] = field(default_factory=set)
    content_types: Counter[str] = field(default_factory=Counter)
    text: TextStats = field(default_factory=TextStats)
    signature_file: str = ""
    chunk_file: str = ""
    retries: RetryReport = field(default_factory=RetryReport)
    # Content traps (crawler/traps.py NearDuplicates): why each stopped, a page it stopped at,
    # and how many pages it stopped.
    content_traps: dict[str, list[Any]] = field(default_factory=dict)
    # Links between the site's pages (site_graph.py), the file it is written to, and how it
    # changed since the previous crawl's (None: no previous graph).
    graph: SiteGraph = field(default_factory=SiteGraph)
    graph_file: str = ""
    graph_change: dict[str, Any] | None = None
    # New pages, changed pages and new text in each against the previous crawl (None: none).
    changes: PageChanges | None = None
    # The site's software and what its rules saved (crawler/apps/; None: none known).
    application: dict[str, Any] | None = None
    relevance: RelevanceStats | None = None  # a focused crawl's

    def error(self, kind: str) -> None:
        self.errors[kind] += 1

    def external_link(self, url: str, text: str) -> None:
        texts = self.external.get(url)
        if texts is None:
            if len(self.external) >= MAX_LISTED:
                return
            texts = self.external[url] = []
        if text and text not in texts and len(texts) < MAX_TEXTS:
            texts.append(text)

    def content_trap(self, why: str, url: str) -> None:
        """Count a page whose links a content trap stopped; the first is its example."""
        found = self.content_traps.get(why)
        if found is not None:
            found[1] += 1
        elif len(self.content_traps) < MAX_LISTED:
            self.content_traps[why] = [url, 1]

    def listed(self, into: set[str], url: str) -> None:
        if len(into) < MAX_LISTED:
            into.add(url)

    def to_json(self) -> dict[str, Any]:
        return {
            "start_url": self.start_url,
            "started": self.started,
            "finished": self.finished,
            "seconds": round(self.finished - self.started, 3),
            "pages": self.pages,
            "components": self.components,
            "bytes": self.bytes,
            "not_modified": self.not_modified,
            "new_contents": self.new_contents,
            "known_contents": self.known_contents,
            "uploaded": self.uploaded,
            "uploaded_bytes": self.uploaded_bytes,
            "robots_excluded": self.robots_excluded,
            "traps": self.traps,
            "blocked": self.blocked,
            "browser_pages": self.browser_pages,
            "levels": {
                str(level): {
                    "pages": n,
                    "new_contents": self.new_by_level[level],
                    "known_contents": self.known_by_level[level],
                }
                for level, n in sorted(self.levels.items())
            },
            "errors": dict(self.errors),
            "external_links": [
                {"url": url, "texts": texts} for url, texts in sorted(self.external.items())
            ],
            "feeds": sorted(self.feeds),
            "streams": sorted(self.streams),
            "content_types": dict(self.content_types),
            "text": {
                "documents": self.text.documents,
                "characters": self.text.characters,
                "words": self.text.words,
                "keywords": dict(self.text.keywords),
                "phrase_sample": self.text.phrase_sample,
                "chunks": self.text.chunks,
                "sample": " ".join(self.text.sample)[:SAMPLE_CHARACTERS],
            },
            "signature_file": self.signature_file,
            "chunk_file": self.chunk_file,
            "graph": {
                "file": self.graph_file,
                "pages": len(self.graph.pages),
                "edges": len(self.graph.edges),
                "truncated": self.graph.truncated,
                "change": self.graph_change,
            },
            "change": None if self.changes is None else self.changes.to_json(),
            "application": self.application,
            "relevance": None if self.relevance is None else self.relevance.to_json(),
            "retries": self.retries.to_json(),
            "content_traps": [
                {"why": why, "example": url, "pages": pages}
                for why, (url, pages) in self.content_traps.items()
            ],
        }
