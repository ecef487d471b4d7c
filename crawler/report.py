"""What a site crawl tells the scheduler when it ends, and the text analysis behind it."""

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import xxhash

__all__ = ["SiteReport", "TextStats", "chunk_signatures"]

MAX_LISTED = 10_000  # external links, feeds, streams kept per site
MAX_TEXTS = 5  # anchor texts kept per external link
_WORD = re.compile(r"\w+", re.UNICODE)
# A chunk ends after a word whose hash has these low bits clear: about 16 words per chunk, with
# boundaries that depend on the text only, so an edit moves the signatures of its chunk alone.
_BOUNDARY_MASK = 0xF
_MIN_CHUNK_WORDS = 4


def chunk_signatures(text: str) -> list[int]:
    """64-bit signatures of content-defined chunks of a text's words (for change detection)."""
    signatures: list[int] = []
    chunk: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        chunk.append(word)
        if len(chunk) >= _MIN_CHUNK_WORDS and xxhash.xxh64_intdigest(word.encode()) & _BOUNDARY_MASK == 0:
            signatures.append(xxhash.xxh64_intdigest(" ".join(chunk).encode()))
            chunk = []
    if chunk:
        signatures.append(xxhash.xxh64_intdigest(" ".join(chunk).encode()))
    return signatures


@dataclass
class TextStats:
    documents: int = 0
    characters: int = 0
    words: int = 0
    keywords: Counter[str] = field(default_factory=Counter)
    signatures: set[int] = field(default_factory=set)

    def add(self, text: str, keywords: tuple[str, ...]) -> None:
        if not text:
            return
        self.documents += 1
        self.characters += len(text)
        self.words += sum(1 for _ in _WORD.finditer(text))
        if keywords:
            lowered = text.lower()
            for keyword in keywords:
                if found := lowered.count(keyword):
                    self.keywords[keyword] += found
        self.signatures.update(chunk_signatures(text))


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
    levels: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    external: dict[str, list[str]] = field(default_factory=dict)
    feeds: set[str] = field(default_factory=set)
    streams: set[str] = field(default_factory=set)
    content_types: Counter[str] = field(default_factory=Counter)
    text: TextStats = field(default_factory=TextStats)
    signature_file: str = ""

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
            "levels": {str(level): n for level, n in sorted(self.levels.items())},
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
                "chunk_signatures": [f"{s:016x}" for s in sorted(self.text.signatures)],
            },
            "signature_file": self.signature_file,
        }
