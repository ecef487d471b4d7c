"""The search index: one tantivy index in one folder, one document per version of a page.

Its fields are listed in FIELDS (docs/search.md tells what each holds); title and text are read
by the query parser, with tantivy's syntax (phrases, AND/OR/NOT, `field:value`, ranges), the
other fields by name. A query that does not parse is a BadQuery, a one-line message.
"""

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tantivy

from archive.timestamps import format_iso, from_micros

from .errors import BadQuery, NoIndex
from .keys import bands, link_key

SCHEMA_VERSION = 2  # 2: urlkey, links_to, simhash_bands; simhash a fast field
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
    ("content_type", "raw", "text/html or text/plain"),
    ("status", "int", "its HTTP status"),
    ("digest", "raw", "the SHA-256 of its payload (the content's name in the archive), stored"),
    ("title", "text", "the HTML title, stored"),
    ("text", "text", "the visible text, stored for snippets"),
    ("lang", "raw", "ISO 639-1 language code, or empty"),
    ("outlinks", "json", "[{url, text}] links out with anchor texts, stored, urls indexed whole"),
    ("simhash", "u64", "64-bit simhash of the text's word shingles, stored and fast"),
    ("urlkey", "key", "the SURT key of the URL (links.py), for backlinks and similar pages"),
    ("links_to", "key", "the SURT keys of the outlinks, fragments dropped: backlinks"),
    ("simhash_bands", "key", "the simhash's four 16-bit bands, as `0:1a2b`: similar pages"),
)


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
        elif kind == "json":
            builder.add_json_field(name, stored=True, tokenizer_name="raw", index_option="basic")
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
    outlinks: list[dict[str, str]]
    simhash: int

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
        for key in sorted({link_key(link["url"]) for link in self.outlinks}):
            doc.add_text("links_to", key)
        if self.simhash:  # a page without words is like no other
            for band in bands(self.simhash):
                doc.add_text("simhash_bands", band)
        if self.outlinks:
            # A list of objects in one JSON field: each of its urls is indexed whole.
            doc.add_json("outlinks", json.dumps({"links": self.outlinks}))
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
        return {
            "score": round(self.score, 6),
            "url": self.url,
            "time": self.time,
            "title": self.title,
            "snippet": self.snippet,
            "highlights": [list(span) for span in self.highlights],
            "snippet_html": self.snippet_html,
            "digest": self.digest,
            "content_type": self.content_type,
            "status": self.status,
            "lang": self.lang,
            "simhash": f"{self.simhash:016x}",
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """The hits of a query and how many documents match in all."""

    total: int
    hits: list[Hit]


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
    (folder / BUILT_FILE).write_text(json.dumps(built, indent=1, sort_keys=True) + "\n")


def _now_micros() -> int:
    return int(datetime.datetime.now(datetime.UTC).timestamp() * 1_000_000)


def open_index(folder: Path) -> tantivy.Index:
    """The index in `folder`; NoIndex when there is none or it has another schema."""
    try:
        built = json.loads((folder / BUILT_FILE).read_text())
    except FileNotFoundError:
        raise NoIndex(
            f"no search index in {folder}: build it with `dlweb search rebuild --index {folder}`"
        ) from None
    except (OSError, ValueError) as exc:
        raise NoIndex(f"{folder / BUILT_FILE} cannot be read: {exc}") from None
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
    when it does not parse."""
    if not query.strip():
        raise BadQuery("the query is empty")
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


def search(index: tantivy.Index, query: str, limit: int = 10) -> Answer:
    """The best `limit` documents for `query`, best first (a tie by URL, then time)."""
    parsed = parse(index, query)
    searcher = index.searcher()
    try:
        found = searcher.search(parsed, limit)
    except ValueError as exc:
        raise BadQuery(f"the query {query!r} cannot be run: {exc}") from None
    snippets = tantivy.SnippetGenerator.create(searcher, parsed, index.schema, "text")
    snippets.set_max_num_chars(SNIPPET_CHARS)
    hits = []
    for score, address in found.hits:
        doc = searcher.doc(address)
        snippet = snippets.snippet_from_doc(doc)
        fragment = snippet.fragment()
        highlights = [(span.start, span.end) for span in snippet.highlighted()]
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
    return Answer(int(total or len(hits)), hits)


def _lead(text: str) -> str:
    """The beginning of a text, cut at a word, for a hit whose text matched nothing."""
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
