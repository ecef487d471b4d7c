"""A page's text history: its indexed versions in time order, and what changed in each.

Every version the index holds is a capture where the page changed (rebuild.py indexes a URL's
captures once per payload), so the versions of a URL's SURT key (any spelling: http or https,
with or without `www.`) are the captures where it changed. Each is compared with the one before:
how many words came and went, and the sentences added and removed (difflib over sentences).
"""

import re
from collections import Counter
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any

import tantivy

from .errors import PageNotIndexed
from .keys import asked_key

MAX_VERSIONS = 1_000  # the newest read of a page's versions
SENTENCES_SHOWN = 3  # added and removed sentences shown, each, of a change
SENTENCE_CHARS = 240  # a longer sentence is cut
_WORDS = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


@dataclass(frozen=True, slots=True)
class Change:
    """What changed in a version's text since the version before it."""

    words_added: int  # words, counted with their repeats, that the text gained
    words_removed: int
    added: list[str]  # sentences new in this version, the first few
    removed: list[str]  # sentences gone since the last, the first few
    same_text: bool  # the text is the same (the page changed elsewhere: its markup, its title)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line: how many words came and went."""
        if self.same_text:
            return "the same text (the page changed elsewhere)"
        return f"{self.words_added:,} words added, {self.words_removed:,} removed"


@dataclass(frozen=True, slots=True)
class Version:
    """A version of the page: the capture where it took this text."""

    url: str  # as captured, in this spelling
    time: str  # ISO 8601, UTC
    title: str
    digest: str
    change: Change | None  # None for the first version

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class History:
    """A URL's versions, oldest first."""

    url: str  # as asked
    versions: list[Version]
    complete: bool  # False when the page had more than MAX_VERSIONS versions: the newest kept

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "complete": self.complete,
            "versions": [version.as_json() for version in self.versions],
        }


def history(index: tantivy.Index, url: str, most: int = MAX_VERSIONS) -> History:
    """The indexed versions of `url` (any spelling of it), oldest first, each with what changed
    since the one before; BadLinkQuery for a URL that is not http(s), PageNotIndexed when the
    index holds none."""
    key = asked_key(url)
    searcher = index.searcher()
    query = tantivy.Query.term_query(index.schema, "urlkey", key, index_option="basic")
    found = searcher.search(query, most + 1, order_by_field="time")  # the newest first
    if not found.hits:
        raise PageNotIndexed(
            f"{url} has no version in the search index (not archived as HTML, text or PDF, or"
            " archived since the last `dlweb search rebuild`)"
        )
    docs = [searcher.doc(address) for _, address in found.hits[:most]]
    rows = sorted(((_iso(doc), str(doc.get_first("url")), doc) for doc in docs), key=_by_time)
    versions: list[Version] = []
    before: str | None = None
    for when, spelling, doc in rows:
        text = str(doc.get_first("text") or "")
        versions.append(
            Version(
                spelling,
                when,
                str(doc.get_first("title") or ""),
                str(doc.get_first("digest") or ""),
                None if before is None else compare(before, text),
            )
        )
        before = text
    return History(url, versions, len(found.hits) <= most)


def compare(old: str, new: str) -> Change:
    """What changed from one text to the next: words gained and lost, sentences added and
    removed."""
    if old == new:
        return Change(0, 0, [], [], True)
    old_words, new_words = Counter(_words(old)), Counter(_words(new))
    was, now = _sentences(old), _sentences(new)
    added: list[str] = []
    removed: list[str] = []
    for kind, first, last, start, end in SequenceMatcher(
        None, was, now, autojunk=False
    ).get_opcodes():
        if kind in ("replace", "delete"):
            removed += was[first:last]
        if kind in ("replace", "insert"):
            added += now[start:end]
    return Change(
        sum((new_words - old_words).values()),
        sum((old_words - new_words).values()),
        [_cut(s) for s in added[:SENTENCES_SHOWN]],
        [_cut(s) for s in removed[:SENTENCES_SHOWN]],
        False,
    )


def _sentences(text: str) -> list[str]:
    """A text's sentences, split after `.`, `!`, `?` or `…` and a space; blanks collapsed."""
    return [part for part in (" ".join(p.split()) for p in _SENTENCE_END.split(text)) if part]


def _by_time(row: tuple[str, str, tantivy.Document]) -> tuple[str, str]:
    return row[0], row[1]


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _cut(sentence: str) -> str:
    if len(sentence) <= SENTENCE_CHARS:
        return sentence
    return sentence[:SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"


def _iso(doc: tantivy.Document) -> str:
    when = doc.get_first("time")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else ""
