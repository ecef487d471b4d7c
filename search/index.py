"""The search index: one tantivy index in one folder, one document per version of a page.

Its fields are listed in FIELDS (docs/search.md tells what each holds); title and text are read
by the query parser, with tantivy's syntax (phrases, AND/OR/NOT, `field:value`, ranges), the
other fields by name. A query that does not parse is a BadQuery, a one-line message.
"""

import datetime
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tantivy

from archive.atomic import atomic_write
from archive.timestamps import MAX_TIME, BadTime, format_iso, from_micros, parse_time, to_micros
from archive.urlkey import structure_name

from .budget import Budgeted
from .errors import BadQuery, NoIndex
from .keys import bands, link_key
from .query_limits import check_query

# 2: urlkey, links_to, simhash_bands, simhash fast; 3: version; 4: the simhash of words hashed
# once each (simhash.py); 5: outlinks stored only, as pairs
SCHEMA_VERSION = 5
BUILT_FILE = "dlweb-search.json"  # beside tantivy's files: what built the index, and when
WRITER_HEAP = 128_000_000
# One indexing thread: the documents come from one extracting thread anyway, and one segment
# written in a fixed order makes a rebuild's answers the same every time.
WRITER_THREADS = 1
DEFAULT_FIELDS = ["title", "text"]
FIELD_BOOSTS = {"title": 2.0}
SNIPPET_CHARS = 200

# Name, type, and what a field holds. "raw" text is one token, matched whole (url:"http://...").
FIELDS = (
    ("url", "raw", "the URL of the capture, stored"),
    ("host", "raw", "its host, lowercased"),
    ("domain", "raw", "its registered domain (bbc.co.uk)"),
    ("time", "date", "when it was captured first in this version (UTC), indexed and fast"),
    ("year", "int", "the year of `time`"),
    ("content_type", "raw", "text/html, text/plain, application/pdf or a stream title's"),
    ("status", "int", "its HTTP status"),
    ("digest", "raw", "the SHA-256 of its payload (the content's name in the archive), stored"),
    ("title", "text", "the HTML title, stored"),
    ("text", "text", "the visible text, stored for snippets"),
    ("lang", "raw", "ISO 639-1 language code, or empty"),
    ("outlinks", "stored", "[[url, text]] links out with their anchor texts, stored only"),
    ("simhash", "u64", "64-bit simhash of the text's word shingles, stored and fast"),
    ("urlkey", "key", "the SURT key of the URL (backlinks.py), for backlinks and similar pages"),
    ("links_to", "key", "the SURT keys of the outlinks, fragments dropped: backlinks"),
    ("simhash_bands", "key", "the simhash's four 16-bit bands, as `0:1a2b`: similar pages"),
    ("version", "key", "the structure file and time of the version: what an update replaces"),
)


def outlinks_of(doc: tantivy.Document) -> list[tuple[str, str]]:
    """The links out of a stored document, each (url, anchor text)."""
    stored = doc.get_first("outlinks")
    return [(url, text) for url, text in json.loads(stored)] if stored else []


def version_key(structure: str, time: int) -> str:
    """The term naming one version of a page: its structure file and its first capture's time."""
    return f"{structure}:{time}"


def schema() -> tantivy.Schema:
    """The index's schema, built from FIELDS."""
    builder = tantivy.SchemaBuilder()
    for name, kind, _ in FIELDS:
        if kind == "raw":
            builder.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
        elif kind == "text":
            builder.add_text_field(name, stored=True)
        elif kind == "date":
            builder.add_date_field(name, stored=True, indexed=True, fast=True)
        elif kind == "int":
            builder.add_integer_field(name, stored=True, indexed=True, fast=True)
        elif kind == "key":  # raw, indexed only: looked up, never shown
            builder.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
        elif kind == "u64":
            builder.add_unsigned_field(name, stored=True, indexed=True, fast=True)
        elif kind == "stored":  # JSON as bytes, shown, never looked up (links_to is)
            builder.add_bytes_field(name, stored=True)
    return builder.build()


@dataclass(frozen=True, slots=True)
class Page:
    """One document of the index: a version of a page as the rebuild read it."""

    url: str
    host: str
    domain: str
    time: int  # microseconds since the epoch, as the archive counts
    content_type: str
    status: int
    digest: str
    title: str
    text: str
    lang: str
    outlinks: Sequence[tuple[str, str]]  # (url, anchor text)
    simhash: int
    # The capture whose version this is, when not at `time`: a stream title's chunk log.
    version_time: int | None = None

    def document(self) -> tantivy.Document:
        """Its tantivy document."""
        doc = tantivy.Document()
        for name in ("url", "host", "domain", "content_type", "digest", "title", "text", "lang"):
            doc.add_text(name, getattr(self, name))
        when = from_micros(self.time)
        doc.add_date("time", when)
        doc.add_integer("year", when.year)
        doc.add_integer("status", self.status)
        doc.add_unsigned("simhash", self.simhash)
        doc.add_text("urlkey", link_key(self.url))
        version = self.time if self.version_time is None else self.version_time
        doc.add_text("version", version_key(structure_name(self.url), version))
        for key in sorted({link_key(url) for url, _ in self.outlinks}):
            doc.add_text("links_to", key)
        if self.simhash:  # a page without words is like no other
            for band in bands(self.simhash):
                doc.add_text("simhash_bands", band)
        if self.outlinks:
            doc.add_bytes("outlinks", json.dumps(self.outlinks, ensure_ascii=False).encode())
        return doc


@dataclass(frozen=True, slots=True)
class Hit:
    """One answer to a query, best first."""

    score: float
    url: str
    time: str  # ISO 8601, UTC
    title: str
    snippet: str  # a fragment of the text around the words matched
    highlights: list[tuple[int, int]]  # where in the snippet the matched words are
    snippet_html: str  # the snippet with the words in <b>, the rest escaped
    digest: str
    content_type: str
    status: int
    lang: str
    simhash: int

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "score": round(self.score, 6),
            "highlights": [list(span) for span in self.highlights],
            "simhash": f"{self.simhash:016x}",
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """The hits of a query, how many documents match in all, and how those spread over domains,
    years and content types (facets), for the reader to narrow the query."""

    total: int
    hits: list[Hit]
    offset: int = 0  # how many better hits come before these
    # By facet (domain, year, content_type): value and count, most first (years in order).
    facets: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_json(self, query: str) -> dict[str, Any]:
        return {
            "query": query,
            "total": self.total,
            "offset": self.offset,
            "hits": [hit.as_json() for hit in self.hits],
            "facets": self.facets,
        }


def create(folder: Path) -> tantivy.Index:
    """A new, empty index in `folder`, which must be empty."""
    folder.mkdir(parents=True, exist_ok=True)
    return tantivy.Index(schema(), path=str(folder), reuse=False)


def new_writer(index: tantivy.Index) -> tantivy.IndexWriter:
    """The index's writer, on WRITER_THREADS threads."""
    return index.writer(WRITER_HEAP, WRITER_THREADS)


def mark_built(folder: Path, summary: dict[str, Any]) -> None:
    """Write what built the index beside its files, for `open_index` to check."""
    built = {"schema": SCHEMA_VERSION, "built": format_iso(_now_micros()), **summary}
    text = json.dumps(built, indent=1, sort_keys=True) + "\n"
    atomic_write(folder / BUILT_FILE, text.encode(), shared=True)


def _now_micros() -> int:
    return int(datetime.datetime.now(datetime.UTC).timestamp() * 1_000_000)


def read_built(folder: Path) -> dict[str, Any]:
    """What built the index in `folder` (mark_built); NoIndex when there is none."""
    try:
        built: dict[str, Any] = json.loads((folder / BUILT_FILE).read_text())
    except FileNotFoundError:
        raise NoIndex(
            f"no search index in {folder}: build it with `dlweb search rebuild --index {folder}`"
        ) from None
    except (OSError, ValueError) as exc:
        raise NoIndex(f"{folder / BUILT_FILE} cannot be read: {exc}") from None
    return built


def open_index(folder: Path) -> tantivy.Index:
    """The index in `folder`; NoIndex when there is none or it has another schema."""
    built = read_built(folder)
    if built.get("schema") != SCHEMA_VERSION:
        raise NoIndex(
            f"the search index in {folder} has schema {built.get('schema')}, this version reads"
            f" {SCHEMA_VERSION}: rebuild it with `dlweb search rebuild --index {folder}`"
        )
    try:
        return tantivy.Index.open(str(folder))
    except ValueError as exc:
        raise NoIndex(f"the search index in {folder} cannot be opened: {exc}") from None


def parse(index: tantivy.Index, query: str) -> tantivy.Query:
    """`query` parsed over title and text, all its words required unless it says OR; BadQuery
    when it does not parse, or passes a limit of query_limits.py (which tantivy could not
    withstand)."""
    if not query.strip():
        raise BadQuery("the query is empty")
    check_query(query)
    try:
        return index.parse_query(
            query, DEFAULT_FIELDS, field_boosts=FIELD_BOOSTS, conjunction_by_default=True
        )
    except ValueError as exc:
        reason = " ".join(str(exc).split())
        raise BadQuery(
            f"cannot read the query {query!r}: {reason} (phrases go in double quotes, a field"
            " is named as title:word, and AND, OR, NOT, ( ) must be complete)"
        ) from None


FACET_DOMAINS = 10  # the domains shown of a query's facets, most frequent first
MAX_YEARS = 10_000  # every year: the years facet is whole
_DAY = re.compile(r"\d{4}-\d{2}(-\d{2})?")  # 2019-05, 2019-05-01: read as their digits


# A search runs on SEARCHES_AT_ONCE threads of its own, and its asker is answered within
# SEARCH_BUDGET seconds (budget.py): tantivy cannot stop a search it has begun.
SEARCH_BUDGET = 10.0
SEARCHES_AT_ONCE = 2
QUERIES = Budgeted(
    SEARCHES_AT_ONCE,
    SEARCH_BUDGET,
    "the search",
    "narrow the query (fewer words, a field, a date range) or ask again later",
)


def search(
    index: tantivy.Index,
    query: str,
    limit: int = 10,
    offset: int = 0,
    start: int | None = None,
    end: int | None = None,
    facets: bool = False,
) -> Answer:
    """The best `limit` documents for `query` after the first `offset`, best first (a tie by URL,
    then time), of those first captured between `start` and `end` (UTC microseconds, both
    included, None for no bound); with `facets`, how every document that matches spreads over
    domains, years and types (which costs a pass over the matches). OverBudget when the answer
    takes longer than SEARCH_BUDGET seconds."""
    if limit < 1 or offset < 0:
        raise BadQuery(
            f"limit={limit}, offset={offset}: give a limit of 1 or more, an offset of 0 or more"
        )
    parsed = parse(index, query)
    return QUERIES.run(_answer, index, parsed, query, limit, offset, start, end, facets)


def _answer(
    index: tantivy.Index,
    parsed: tantivy.Query,
    query: str,
    limit: int,
    offset: int,
    start: int | None,
    end: int | None,
    facets: bool,
) -> Answer:
    """What `search` answers, from the query parsed (on a thread of QUERIES)."""
    matching = _within(index, parsed, start, end)
    searcher = index.searcher()
    try:
        found = searcher.search(matching, limit, offset=offset)
        spread = _facets(searcher, matching) if facets else {}
    except ValueError as exc:
        raise BadQuery(f"the query {query!r} cannot be run: {exc}") from None
    snippets = tantivy.SnippetGenerator.create(searcher, parsed, index.schema, "text")
    snippets.set_max_num_chars(SNIPPET_CHARS)
    hits = []
    for score, address in found.hits:
        doc = searcher.doc(address)
        snippet = snippets.snippet_from_doc(doc)
        fragment = snippet.fragment()
        highlights = _in_characters(fragment, snippet.highlighted())
        html = snippet.to_html()
        text = str(doc.get_first("text") or "")
        if not fragment:  # only the title matched: the text's beginning
            fragment = _lead(text)
            html = _escape(fragment)
        when = doc.get_first("time")
        hits.append(
            Hit(
                score=float(score),
                url=str(doc.get_first("url")),
                time=when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else "",
                title=str(doc.get_first("title") or ""),
                snippet=fragment,
                highlights=highlights,
                snippet_html=html,
                digest=str(doc.get_first("digest") or ""),
                content_type=str(doc.get_first("content_type") or ""),
                status=int(doc.get_first("status") or 0),
                lang=str(doc.get_first("lang") or ""),
                simhash=int(doc.get_first("simhash") or 0),
            )
        )
    hits.sort(key=lambda hit: (-hit.score, hit.url, hit.time))
    total = getattr(found, "count", None)  # given when counting, which the stubs omit
    return Answer(int(total or len(hits)), hits, offset, spread)


def time_range(start: str | None, end: str | None) -> tuple[int | None, int | None]:
    """The bounds a reader typed (`2019`, `2019-05`, `2019-05-01`, 4 to 14 digits or ISO 8601) as
    UTC microseconds: `start` from the beginning of the period it names, `end` to its end (`2019`
    is the whole year); None where none was given. BadQuery when one cannot be read."""
    first = _bound("from", start, up=False) if start and start.strip() else None
    last = _bound("to", end, up=True) if end and end.strip() else None
    if first is not None and last is not None and first > last:
        raise BadQuery(f"from={start!r} is after to={end!r}")
    return first, last


# Digits a date is given to, and the length of the period it then names.
_PERIODS = {8: datetime.timedelta(days=1), 10: datetime.timedelta(hours=1)}
_PERIODS |= {12: datetime.timedelta(minutes=1), 14: datetime.timedelta(seconds=1)}


def _bound(name: str, text: str, up: bool) -> int:
    """One bound of a time range; `up` rounds a date up to the last microsecond it names."""
    text = text.strip()
    digits = text.replace("-", "") if _DAY.fullmatch(text) else text
    if digits.isdigit() and len(digits) <= 14 and len(digits) % 2:
        raise BadQuery(f"{name}={text!r}: give YYYY, YYYYMM, YYYYMMDD, … to 14 digits, or ISO 8601")
    try:
        moment = parse_time(digits)
    except BadTime as exc:
        raise BadQuery(f"{name}={text[:40]!r}: {exc}") from None
    if not up or not digits.isdigit() or len(digits) > 14:
        return moment
    begun = from_micros(moment)
    if len(digits) == 4:
        after = begun.replace(year=begun.year + 1) if begun.year < 9999 else None
    elif len(digits) == 6:
        after = (begun.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
    else:
        after = begun + _PERIODS[len(digits)]
    return MAX_TIME if after is None else to_micros(after) - 1


def _within(
    index: tantivy.Index, query: tantivy.Query, start: int | None, end: int | None
) -> tantivy.Query:
    """`query`, limited to the documents first captured between `start` and `end`; the limit
    adds nothing to their scores."""
    if start is None and end is None:
        return query
    period = tantivy.Query.range_query(
        index.schema,
        "time",
        tantivy.FieldType.Date,
        None if start is None else from_micros(start),
        None if end is None else from_micros(end),
    )
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, query),
            (tantivy.Occur.Must, tantivy.Query.const_score_query(period, 0.0)),
        ]
    )


def _facets(searcher: tantivy.Searcher, query: tantivy.Query) -> dict[str, dict[str, int]]:
    """How the documents matching `query` (all of them, not a page) spread over their registered
    domains (the FACET_DOMAINS most frequent), years and content types. Each is read from the
    index's terms or columns, never from the stored documents."""
    domains = searcher.terms_with_prefix("domain", "", filter_query=query, limit=FACET_DOMAINS)
    types = searcher.terms_with_prefix("content_type", "", filter_query=query)
    asked = {"year": {"terms": {"field": "year", "size": MAX_YEARS}}}
    years = searcher.aggregate(query, asked)["year"]["buckets"]
    return {
        "domain": {str(term): count for term, count in domains},
        "year": {str(b["key"]): b["doc_count"] for b in sorted(years, key=lambda b: b["key"])},
        "content_type": {str(term): count for term, count in types},
    }


def _in_characters(fragment: str, spans: list[Any]) -> list[tuple[int, int]]:
    """The highlighted spans of a snippet in characters of its fragment: tantivy counts them in
    bytes of its UTF-8, which differ after the first character beyond ASCII."""
    if fragment.isascii():
        return [(span.start, span.end) for span in spans]
    raw = fragment.encode()
    return [
        (
            len(raw[: span.start].decode(errors="ignore")),
            len(raw[: span.end].decode(errors="ignore")),
        )
        for span in spans
    ]


def _lead(text: str) -> str:
    """The beginning of a text, cut at a word, for a hit whose text matched nothing."""
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
