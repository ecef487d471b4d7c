"""Backlinks and similar pages, from the search index (docs/search.md).

Backlinks: each document indexes the keys of its outlinks (`links_to`, keys.py: SURT keys without
fragments), so the versions that link to a URL are one term query; they are grouped by linking
URL, each with its latest linking version's date and title and the anchor texts it used.

Similar pages: the page's latest version's simhash is compared with the others' by Hamming
distance. A small index is read whole (the simhashes are a fast field); a larger one is asked for
the versions that share at least one of the four 16-bit bands of the simhash (`simhash_bands`),
which finds every version within 3 bits and most of those a little further, and only those are
compared.
"""

from dataclasses import asdict, dataclass
from typing import Any

import tantivy

from archive.simhash import distance

from .errors import PageNotIndexed
from .index import outlinks_of
from .keys import asked_key, bands, link_key

MAX_DISTANCE = 12  # of 64 bits: one paragraph of eight rewritten moves a page about 9 bits
SCAN_ALL = 100_000  # an index of at most so many versions is compared whole
MAX_CANDIDATES = 100_000  # versions read of those sharing a band, in a larger index
MAX_LINKING = 100_000  # linking versions read for backlinks, newest first


@dataclass(frozen=True, slots=True)
class Backlink:
    """An archived page that links to the URL asked about."""

    url: str
    time: str  # its latest version that links there, ISO 8601 UTC
    title: str
    anchors: list[str]  # the anchor texts of its links there, in page order, each once

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Similar:
    """A page near the one asked about: its version nearest to it."""

    url: str
    time: str
    title: str
    distance: int  # bits of 64 the simhashes differ by
    simhash: int

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {"simhash": f"{self.simhash:016x}"}


@dataclass(frozen=True, slots=True)
class Neighbours:
    """The pages similar to a page's latest version, nearest first."""

    url: str  # the URL of that version, as archived
    time: str
    simhash: int
    max_distance: int
    pages: list[Similar]

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "time": self.time,
            "simhash": f"{self.simhash:016x}",
            "max_distance": self.max_distance,
            "similar": [page.as_json() for page in self.pages],
        }


def _iso(doc: tantivy.Document) -> str:
    when = doc.get_first("time")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else ""


def _newest_first(
    searcher: tantivy.Searcher, query: tantivy.Query, limit: int
) -> list[tantivy.DocAddress]:
    """The documents matching `query`, at most `limit`, the most recent first."""
    found = searcher.search(query, limit, count=False, order_by_field="time")
    return [address for _, address in found.hits]


def _term(index: tantivy.Index, field: str, key: str) -> tantivy.Query:
    return tantivy.Query.term_query(index.schema, field, key, index_option="basic")


def backlinks(index: tantivy.Index, url: str) -> list[Backlink]:
    """The archived pages but its own that link to `url` (its SURT key: http or https, with or
    without `www.`, any fragment), newest first (a tie by URL); BadLinkQuery for a URL that is
    not http(s)."""
    key = asked_key(url)
    searcher = index.searcher()
    # A page's links to itself (its own in-page anchors) do not make it a backlink.
    query = tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, _term(index, "links_to", key)),
            (tantivy.Occur.MustNot, _term(index, "urlkey", key)),
        ]
    )
    found: dict[str, Backlink] = {}
    for address in _newest_first(searcher, query, MAX_LINKING):
        doc = searcher.doc(address)
        source = str(doc.get_first("url"))
        if source in found:  # a version older than one already listed
            continue
        anchors: dict[str, None] = {}
        for target, text in outlinks_of(doc):
            if text and link_key(target) == key:
                anchors.setdefault(text, None)
        found[source] = Backlink(
            source, _iso(doc), str(doc.get_first("title") or ""), list(anchors)
        )
    ordered = sorted(found.values(), key=lambda b: b.url)
    ordered.sort(key=lambda b: b.time, reverse=True)  # stable: a tie stays in URL order
    return ordered


def latest_version(
    index: tantivy.Index, url: str
) -> tuple[tantivy.Searcher, tantivy.Document, str]:
    """The searcher, the latest indexed version of `url` and its key; PageNotIndexed when the
    index has none."""
    key = asked_key(url)
    searcher = index.searcher()
    newest = _newest_first(searcher, _term(index, "urlkey", key), 1)
    if not newest:
        raise PageNotIndexed(
            f"{url} has no version in the search index (not archived as HTML, text or PDF, or"
            " archived since the last `dlweb search rebuild`)"
        )
    return searcher, searcher.doc(newest[0]), key


def similar(
    index: tantivy.Index,
    url: str,
    limit: int = 10,
    max_distance: int = MAX_DISTANCE,
    scan_all: int = SCAN_ALL,
) -> Neighbours:
    """The pages nearest `url`'s latest version by simhash, at most `max_distance` bits apart,
    nearest first (a tie by URL), each URL once (its nearest version, the latest of equals),
    `url` itself left out. An index of more than `scan_all` versions is searched by band."""
    searcher, page, key = latest_version(index, url)
    signature = int(page.get_first("simhash") or 0)
    found = Neighbours(str(page.get_first("url")), _iso(page), signature, max_distance, [])
    if not signature:  # no words: like no other page
        return found
    if searcher.num_docs <= scan_all:
        query = tantivy.Query.all_query()
        limit_read = max(searcher.num_docs, 1)
    else:
        query = tantivy.Query.term_set_query(index.schema, "simhash_bands", bands(signature))
        limit_read = MAX_CANDIDATES
    addresses = _newest_first(searcher, query, limit_read)
    values = searcher.fast_field_values("simhash", addresses)
    best: dict[str, Similar] = {}
    for address, value in zip(addresses, values, strict=True):
        if not isinstance(value, int) or not value:
            continue
        apart = distance(signature, value)
        if apart > max_distance:
            continue
        doc = searcher.doc(address)
        other = str(doc.get_first("url"))
        if link_key(other) == key:
            continue
        known = best.get(other)
        if known is None or apart < known.distance:  # newest first: an equal one is older
            best[other] = Similar(other, _iso(doc), str(doc.get_first("title") or ""), apart, value)
    found.pages.extend(sorted(best.values(), key=lambda s: (s.distance, s.url))[:limit])
    return found
