"""Full-text search: dlweb's indexing and queries (tantivy) beside SQLite FTS5 on the same text.

Everything is generated from a seed: a vocabulary of made-up words whose frequencies follow
Zipf's law (the word of rank r is drawn with weight 1/r, as in natural text), pages of a title,
paragraphs and links drawn from it, and queries drawn from it too. In one run:

1. **Indexing**: N HTML pages (a head with a script and a style, a navigation bar, 4-12
   paragraphs with links in them, a footer; about 4.5 KB each) with their header blocks. dlweb
   end to end is what `dlweb search rebuild` and the indexer do with fetched pages
   (search/updating.py): chunks of 128 parsed header blocks and payloads extracted on worker
   processes, one a core (`search.extract_workers.Extractors`: lxml, language, simhash), then on a
   thread, while the next chunk is extracted, each `Page` made and its tantivy document (SURT
   keys of the URL and the outlinks, simhash bands) added to the writer (tantivy indexes on a
   thread of its own), then commit. Extraction alone is timed on one thread, and SQLite FTS5's
   end to end is that extraction plus indexing the same extracted URL, title and text (one
   transaction, then commit). Index only: the same extracted pages indexed again into fresh
   indexes, dlweb's split into making the documents and tantivy's adding and committing. Where
   an extraction's time goes (language, simhash, the rest) is measured again on a sample.
2. **Queries** at two sizes (100k and 1M documents; 20k with --quick), indexes made from
   generated text directly (no HTML; title, URL, date and a 50-350 word text, no outlinks):
   p50 and p99 latency of two-word queries (words of any rank but the 20 commonest, by the same
   law), two-word queries of common words (ranks 20-200: long posting lists), and phrases (two
   words that follow each other in a page, often common ones, as in text: the slowest kind).
   dlweb answers with `search.index.search` (the top 10 by BM25 with their stored fields and
   snippets, and the count of all matches); SQLite with its top 10 by `bm25()` (title weighing
   twice, as dlweb's), their URL, title and `snippet()`, without a count. The engines take
   turns query by query, after one warm-up pass of every query, so a busy machine slows them
   alike.
3. **Fan-out**: the same documents also written as two shards by time range (2019-2020 and
   2021-2022); `search.shards.search_shards` over the two against the same function over the
   one index (both open their indexes on every query, as a command does).

It ends with the targets, each PASS or MISS (information, not a failure): 1,000 documents per
second end to end, and a two-word query's p99 under 50 ms at the largest size.

Usage: python benchmarks/bench_search.py [--quick] [--pages N] [--sizes N,N] [--queries N]
       [--seed N] [--dir DIR] [--json FILE]
"""

import argparse
import asyncio
import hashlib
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import MB, BenchError, run_benchmark  # noqa: E402

from archive.header_block import parse_header_block  # noqa: E402
from archive.simhash import simhash  # noqa: E402
from archive.structure import Capture as StructureCapture  # noqa: E402
from archive.urlkey import structure_name  # noqa: E402
from search.extract import Extracted, extract, extract_many  # noqa: E402
from search.extract_workers import Extractors, default_workers  # noqa: E402
from search.index import Page, create, mark_built, new_writer, open_index, search  # noqa: E402
from search.keys import link_key  # noqa: E402
from search.language import guess_language  # noqa: E402
from search.shards import search_shards  # noqa: E402
from search.updating import CHUNK, Fetched, index_fetched  # noqa: E402
from search.updating import page_of as document_page  # noqa: E402
from search.versions import Version  # noqa: E402

VOCABULARY = 50_000
STOP_WORDS = 20  # the commonest ranks, left out of queries and titles
COMMON = (20, 200)  # the ranks of the "common words" queries
SYLLABLES = [consonant + vowel for consonant in "bdfgklmnprstvz" for vowel in "aeiou"]
SITES = 2_000
# What a page's head carries besides its title: a style sheet and a tracking script.
STYLE = (
    "body { margin: 0; font: 16px/1.5 Georgia, serif; color: #222 } header nav ul { display:"
    " flex; gap: 1em; list-style: none } main { max-width: 42em; margin: auto } .block p {"
    " margin: 0 0 1em } footer { font-size: 80%; color: #666; border-top: 1px solid #ddd }"
)
SCRIPT = (
    "(function (w, d) { w.dataLayer = w.dataLayer || []; function track() {"
    " w.dataLayer.push(arguments) } track('js', new Date()); track('config', 'UA-%d');"
    " var s = d.createElement('script'); s.async = true; s.src = '/static/analytics.js?v=%d';"
    " d.head.appendChild(s); d.addEventListener('click', function (e) { if (e.target.href)"
    " { track('event', 'click', { url: e.target.href }) } }) })(window, document);"
)
YEARS = (2019, 2020, 2021, 2022)  # the first two in one shard, the last two in the other
SPLIT = int(datetime(YEARS[2], 1, 1, tzinfo=UTC).timestamp() * 1_000_000)
BATCH = 10_000  # documents generated at a time for the query indexes
SAMPLE = 1_000  # pages whose extraction is timed piece by piece
TOP = 10
TARGET_DOCS_PER_S = 1_000
TARGET_P99_MS = 50.0
SQLITE_QUERY = (
    "SELECT url, title, snippet(pages, 2, '<b>', '</b>', ' … ', 30), bm25(pages, 0.0, 2.0, 1.0)"
    " AS score FROM pages WHERE pages MATCH ? ORDER BY score LIMIT ?"
)


class Words:
    """Made-up words drawn by Zipf's law: the word of rank r (from 0) with weight 1/(r+1)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        made: set[str] = set()
        while len(made) < VOCABULARY:
            made.add("".join(rng.choices(SYLLABLES, k=rng.choice((1, 2, 2, 3, 3, 3, 4)))))
        # Short words are the common ones, as in natural languages.
        self.vocabulary = sorted(made, key=lambda word: (len(word), word))
        weights = 1.0 / np.arange(1, VOCABULARY + 1)
        self.cumulative = np.cumsum(weights) / weights.sum()
        self.words = np.array(self.vocabulary, dtype=object)
        self.rng = np.random.default_rng(seed)

    def ranks(self, n: int, lowest: int = 0, highest: int = VOCABULARY) -> "np.ndarray[Any, Any]":
        """`n` ranks drawn by the law, within [lowest, highest)."""
        low, high = (self.cumulative[lowest - 1] if lowest else 0.0), self.cumulative[highest - 1]
        picked = np.searchsorted(self.cumulative, self.rng.uniform(low, high, n), side="right")
        return np.minimum(picked, highest - 1)

    def text(self, n: int, lowest: int = 0) -> str:
        return " ".join(self.words[self.ranks(n, lowest)].tolist())

    def length(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))


@dataclass(frozen=True, slots=True)
class Capture:
    """A generated HTML capture as the rebuild gets it: URL, time, header block, payload and the
    payload's name (its SHA-256)."""

    url: str
    time: int  # microseconds since the epoch
    header: bytes
    payload: bytes
    digest: str


def when(rng: random.Random) -> datetime:
    start = datetime(YEARS[0], 1, 1, tzinfo=UTC).timestamp()
    end = datetime(YEARS[-1] + 1, 1, 1, tzinfo=UTC).timestamp()
    return datetime.fromtimestamp(rng.uniform(start, end), UTC)


def html_page(words: Words, rng: random.Random, number: int) -> Capture:
    """A page of a site: head (title, style, script), navigation, paragraphs with links, footer."""
    site = f"site{rng.randrange(SITES)}.example"
    url = f"http://{site}/{words.vocabulary[rng.randrange(200, 5_000)]}/{number}.html"
    title = words.text(words.length(3, 8), STOP_WORDS)
    nav = "".join(
        f'<li><a href="/{words.vocabulary[rng.randrange(50, 500)]}/">'
        f"{words.text(words.length(1, 2), STOP_WORDS)}</a></li>"
        for _ in range(words.length(8, 20))
    )
    paragraphs = []
    for _ in range(words.length(4, 12)):
        text = words.text(words.length(20, 90)).split(" ")
        for _ in range(words.length(0, 3)):
            at = rng.randrange(len(text))
            target = f"http://site{rng.randrange(SITES)}.example/{rng.randrange(10**6)}.html"
            text[at] = f'<a href="{target}">{text[at]}</a>'
        paragraphs.append(f'<div class="block"><p>{" ".join(text)}</p></div>\n')
    footer = " | ".join(
        f'<a href="/{part}">{part}</a>' for part in ("about", "contact", "privacy", "terms", "help")
    )
    html = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width"><title>{title}</title>\n'
        f"<style>{STYLE}</style>\n<script>{SCRIPT % (number, number)}</script>\n"
        f"</head><body><header><nav><ul>{nav}</ul></nav></header>\n<main><h1>{title}</h1>\n"
        f'{"".join(paragraphs)}</main>\n<footer class="footer">{footer}</footer></body></html>\n'
    ).encode()
    captured = when(rng)
    header = (
        "HTTP/1.1 200 OK\r\n"
        f"Date: {format_datetime(captured, usegmt=True)}\r\nServer: nginx\r\n"
        f"Content-Type: text/html; charset=utf-8\r\nContent-Length: {len(html)}\r\n"
        "Cache-Control: max-age=600\r\n\r\n"
    ).encode()
    digest = hashlib.sha256(html).hexdigest()
    return Capture(url, int(captured.timestamp() * 1_000_000), header, html, digest)


def version_of(capture: Capture) -> Version:
    """The version of a page an update reads, as the archive's structure file lists it."""
    header = hashlib.sha256(capture.header).hexdigest()
    return Version(capture.url, StructureCapture(capture.time, capture.digest, header, 200))


def page_of(capture: Capture, got: Extracted) -> Page:
    """The index's document of an extracted capture, as an update makes it."""
    return document_page(version_of(capture), got)


async def extract_and_add(captures: list[Capture], writer: Any) -> float:
    """An update's pipeline over these pages (search.updating.index_fetched, as fetched chunk
    by chunk), and its seconds, the extracting processes started and warm before the clock."""
    fetched = [
        Fetched(version_of(c), parse_header_block(c.header), c.payload, structure_name(c.url))
        for c in captures
    ]
    extractors = Extractors()
    try:
        await extractors.ready()

        async def chunks() -> AsyncIterator[list[Fetched]]:
            for start in range(0, len(fetched), CHUNK):
                yield fetched[start : start + CHUNK]

        started = time.perf_counter()
        indexed = await index_fetched(chunks(), extractors, writer)
        writer.commit()
        writer.wait_merging_threads()
        seconds = time.perf_counter() - started
    finally:
        extractors.close()
    if indexed.documents != len(captures):
        raise BenchError(
            f"only {indexed.documents} of {len(captures)} pages were indexed:"
            f" {dict(indexed.skipped)}"
        )
    return seconds


def new_sqlite(path: Path) -> sqlite3.Connection:
    """An FTS5 table of URL (stored, not indexed), title and text, default tokenizer."""
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE pages USING fts5(url UNINDEXED, title, text)")
    return db


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def bench_indexing(work: Path, pages: int, seed: int) -> dict[str, Any]:
    """Part 1: extraction and indexing of generated HTML pages, dlweb beside SQLite FTS5."""
    words = Words(seed)
    rng = random.Random(seed)
    print(f"generating {pages:,} HTML pages ...")
    captures = [html_page(words, rng, number) for number in range(pages)]
    html_bytes = sum(len(capture.payload) for capture in captures)

    print(f"dlweb end to end: {default_workers()} extracting processes, documents, tantivy ...")
    index = create(work / "e2e")
    writer = new_writer(index)
    end_to_end = asyncio.run(extract_and_add(captures, writer))
    del index, writer

    print("extraction alone, on one thread ...")
    first = captures[0]  # loads the language model (1-2 s), which a rebuild does before it starts
    extract(first.url, parse_header_block(first.header), first.payload)
    extracted: list[Extracted] = []
    started = time.perf_counter()
    for start in range(0, pages, CHUNK):  # read a chunk at a time, as the workers do
        chunk = captures[start : start + CHUNK]
        items = [(c.url, parse_header_block(c.header), c.payload) for c in chunk]
        for got in extract_many(items):
            if not isinstance(got, Extracted):
                raise BenchError(f"a generated page was not indexed: {got}")
            extracted.append(got)
    extracting = time.perf_counter() - started

    print("index only: the same pages into fresh indexes ...")
    link_key.cache_clear()  # as a new process starts
    started = time.perf_counter()
    documents = [page_of(c, got).document() for c, got in zip(captures, extracted, strict=True)]
    making = time.perf_counter() - started
    index = create(work / "only")
    writer = new_writer(index)
    started = time.perf_counter()
    for document in documents:
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    adding = time.perf_counter() - started
    del index, writer, documents
    db = new_sqlite(work / "only.sqlite")
    started = time.perf_counter()
    with db:
        db.executemany(
            "INSERT INTO pages VALUES (?, ?, ?)",
            ((c.url, got.title, got.text) for c, got in zip(captures, extracted, strict=True)),
        )
    inserting = time.perf_counter() - started
    db.close()

    print(f"where an extraction's time goes, on {min(SAMPLE, pages):,} pages ...")
    sample = extracted[:SAMPLE]
    languages = timed_each(lambda got: guess_language(got.text), sample)
    signatures = timed_each(lambda got: simhash(got.text), sample)
    keys = timed_each(lambda got: [link_key(url) for url, _ in got.links], sample)
    per_page = extracting / pages
    return {
        "pages": pages,
        "html_kb_per_page": html_bytes / pages / 1024,
        "words_per_page": sum(len(got.text.split()) for got in extracted) / pages,
        "links_per_page": sum(len(got.links) for got in extracted) / pages,
        "dlweb_end_to_end_s": end_to_end,
        "extraction_s": extracting,
        "sqlite_end_to_end_s": extracting + inserting,
        "dlweb_index_only_s": making + adding,
        "dlweb_documents_s": making,
        "tantivy_add_commit_s": adding,
        "sqlite_index_only_s": inserting,
        "per_page_ms": {
            "extraction": 1000 * per_page,
            "language": 1000 * languages,
            "simhash": 1000 * signatures,
            "parse, text and links": 1000 * (per_page - languages - signatures),
            "document (SURT keys of the outlinks)": 1000 * keys,
            "document (all)": 1000 * making / pages,
        },
        "tantivy_bytes": folder_size(work / "only"),
        "sqlite_bytes": (work / "only.sqlite").stat().st_size,
    }


def timed_each(work: Callable[[Extracted], object], items: list[Extracted]) -> float:
    """The mean seconds `work` takes on one item."""
    started = time.perf_counter()
    for item in items:
        work(item)
    return (time.perf_counter() - started) / max(1, len(items))


@dataclass
class Corpus:
    """The indexes of one size: one tantivy index, two shards by time range, one SQLite table."""

    size: int
    single: Path
    shards: list[Path]
    sqlite: Path
    phrases: list[str]
    build_s: float


def text_documents(words: Words, rng: random.Random, count: int) -> Iterator[Page]:
    """`count` pages of generated text (no HTML, no outlinks), each with a URL and a date."""
    for number in range(count):
        captured = when(rng)
        host = f"site{rng.randrange(SITES)}.example"
        yield Page(
            url=f"http://{host}/{number}.html",
            host=host,
            domain="example",
            time=int(captured.timestamp() * 1_000_000),
            content_type="text/html",
            status=200,
            digest=f"{number:064x}",
            title=words.text(words.length(3, 8), STOP_WORDS),
            text=words.text(words.length(50, 350)),
            lang="",
            outlinks=[],
            simhash=rng.getrandbits(64),
        )


def build_corpus(work: Path, size: int, seed: int) -> Corpus:
    """Write `size` generated documents into the one index, the shard of their year and SQLite."""
    words = Words(seed + size)
    rng = random.Random(seed + size)
    folder = work / f"corpus-{size}"
    single, shards = folder / "single", [folder / "shard-a", folder / "shard-b"]
    indexes = [create(path) for path in (single, *shards)]
    writers = [new_writer(index) for index in indexes]
    db = new_sqlite(folder / "fts5.sqlite")
    phrases: list[str] = []
    started = time.perf_counter()
    done = 0
    # SQLite inserts a batch on a thread (it lets the GIL go) while the next one is made.
    with ThreadPoolExecutor(max_workers=1) as inserting:
        inserted: Future[None] | None = None
        while done < size:
            batch = list(text_documents(words, rng, min(BATCH, size - done)))
            for page in batch:
                document = page.document()
                writers[0].add_document(document)
                writers[1 if page.time < SPLIT else 2].add_document(document)
            if inserted is not None:
                inserted.result()
            inserted = inserting.submit(insert, db, batch)
            for page in batch[:: max(1, BATCH // 50)]:
                text = page.text.split(" ")
                at = rng.randrange(len(text) - 1)
                phrases.append(f'"{text[at]} {text[at + 1]}"')
            done += len(batch)
            if sys.stdout.isatty():
                print(f"\r  {done:,} of {size:,} documents", end="", flush=True)
        if inserted is not None:
            inserted.result()
    for writer in writers:
        writer.commit()
        writer.wait_merging_threads()
    del writers, indexes
    db.close()
    for path in (single, *shards):
        mark_built(path, {"documents": size})
    seconds = time.perf_counter() - started
    print(f"\r  {size:,} documents in {seconds:.0f} s (generation and all three writers)")
    return Corpus(size, single, shards, folder / "fts5.sqlite", phrases, seconds)


def insert(db: sqlite3.Connection, pages: list[Page]) -> None:
    with db:
        db.executemany(
            "INSERT INTO pages VALUES (?, ?, ?)", ((p.url, p.title, p.text) for p in pages)
        )


def latency(samples: list[float]) -> dict[str, float]:
    """p50, p99 and mean of `samples`, in milliseconds."""
    ordered = sorted(samples)

    def at(share: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return {"p50": at(0.50), "p99": at(0.99), "mean": 1000 * statistics.fmean(ordered)}


def make_queries(corpus: Corpus, count: int, seed: int) -> dict[str, list[str]]:
    """Two-word queries of any rank but the commonest, of common words, and phrases."""
    words = Words(seed)

    def pairs(lowest: int, highest: int) -> list[str]:
        found: list[str] = []
        while len(found) < count:
            first, second = words.words[words.ranks(2, lowest, highest)].tolist()
            if first != second:
                found.append(f"{first} {second}")
        return found

    return {
        "two words": pairs(STOP_WORDS, VOCABULARY),
        "two common words": pairs(*COMMON),
        "phrase": (corpus.phrases * (1 + count // max(1, len(corpus.phrases))))[:count],
    }


def bench_queries(corpus: Corpus, count: int, seed: int) -> dict[str, Any]:
    """Part 2 and 3: the latency of each kind of query on each engine, taking turns."""
    index = open_index(corpus.single)
    db = sqlite3.connect(corpus.sqlite)
    engines: dict[str, Callable[[str], int]] = {
        "dlweb": lambda query: search(index, query, TOP).total,
        "SQLite FTS5": lambda query: len(db.execute(SQLITE_QUERY, (query, TOP)).fetchall()),
        "one index": lambda query: search_shards([corpus.single], query, TOP).total,
        "two shards": lambda query: search_shards(corpus.shards, query, TOP).total,
    }
    figures: dict[str, Any] = {}
    try:
        for kind, queries in make_queries(corpus, count, seed).items():
            matches = []
            for query in queries:  # warm up, and check that all answer the same question
                answers = {name: run(query) for name, run in engines.items()}
                total = answers["dlweb"]
                if answers["SQLite FTS5"] != min(total, TOP) or answers["two shards"] != total:
                    raise BenchError(f"the engines disagree on {query!r}: {answers}")
                matches.append(total)
            times: dict[str, list[float]] = {name: [] for name in engines}
            for query in queries:
                for name, run in engines.items():
                    started = time.perf_counter()
                    run(query)
                    times[name].append(time.perf_counter() - started)
            figures[kind] = {
                "example": queries[0],
                "mean_matches": statistics.fmean(matches),
                **{name: latency(samples) for name, samples in times.items()},
            }
            print(
                f"  {kind}: dlweb p99 {figures[kind]['dlweb']['p99']:.1f} ms, SQLite p99"
                f" {figures[kind]['SQLite FTS5']['p99']:.1f} ms"
            )
    finally:
        db.close()
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="dlweb-bench-search-", dir=args.dir))
    try:
        indexing = bench_indexing(work, args.pages, args.seed)
        shutil.rmtree(work / "e2e")
        by_size: dict[str, dict[str, Any]] = {}
        for size in args.sizes:
            print(f"{size:,} documents of generated text, in each index ...")
            corpus = build_corpus(work, size, args.seed)
            print(f"  queries: {args.queries} of each kind, the engines taking turns ...")
            by_size[str(size)] = {
                "build_s": corpus.build_s,
                "tantivy_bytes": folder_size(corpus.single),
                "sqlite_bytes": corpus.sqlite.stat().st_size,
                "queries": bench_queries(corpus, args.queries, args.seed),
            }
            shutil.rmtree(corpus.single.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    largest = by_size[str(max(args.sizes))]["queries"]["two words"]["dlweb"]["p99"]
    end_to_end = indexing["pages"] / indexing["dlweb_end_to_end_s"]
    return {
        "seed": args.seed,
        "cores": os.cpu_count(),
        "indexing": indexing,
        "sizes": by_size,
        "docs_per_s_target_met": end_to_end >= TARGET_DOCS_PER_S,
        "p99_target_met": largest < TARGET_P99_MS,
    }


def show(report: dict[str, Any]) -> None:
    got = report["indexing"]
    pages = got["pages"]
    print()
    print(
        f"Indexing {pages:,} HTML pages ({got['html_kb_per_page']:.1f} KB, "
        f"{got['words_per_page']:.0f} words, {got['links_per_page']:.0f} links each),"
        f" on {report['cores']} cores"
    )
    print(f"  {'':<44}{'seconds':>9}{'docs/s':>10}")
    rows = [
        ("extraction on one thread (in SQLite's end to end)", got["extraction_s"]),
        ("dlweb end to end", got["dlweb_end_to_end_s"]),
        ("SQLite FTS5 end to end", got["sqlite_end_to_end_s"]),
        ("dlweb index only", got["dlweb_index_only_s"]),
        ("  of which Page.document()", got["dlweb_documents_s"]),
        ("  of which tantivy add and commit", got["tantivy_add_commit_s"]),
        ("SQLite FTS5 index only", got["sqlite_index_only_s"]),
    ]
    for label, seconds in rows:
        print(f"  {label:<44}{seconds:>9.2f}{pages / seconds:>10,.0f}")
    parts = ", ".join(f"{name} {ms:.2f}" for name, ms in got["per_page_ms"].items())
    print(f"  ms per page: {parts}")
    print(
        f"  index size: tantivy {got['tantivy_bytes'] / MB:.0f} MB,"
        f" SQLite {got['sqlite_bytes'] / MB:.0f} MB"
    )
    e2e = got["sqlite_end_to_end_s"] / got["dlweb_end_to_end_s"]
    only = got["sqlite_index_only_s"] / got["dlweb_index_only_s"]
    print(f"  ratio dlweb/SQLite, docs/s: end to end {e2e:.2f}, index only {only:.2f}")
    for size, figures in report["sizes"].items():
        print()
        print(
            f"Queries at {int(size):,} documents (built in {figures['build_s']:.0f} s; tantivy"
            f" {figures['tantivy_bytes'] / MB:,.0f} MB, SQLite {figures['sqlite_bytes'] / MB:,.0f}"
            " MB), ms"
        )
        header = "".join(
            f"{name:>15}" for name in ("dlweb", "SQLite FTS5", "one index", "two shards")
        )
        print(f"  {'':<26}{header}{'SQLite/dlweb':>14}{'2 shards/1':>12}")
        for kind, row in figures["queries"].items():
            for stat in ("p50", "p99"):
                values = "".join(
                    f"{row[name][stat]:>15.2f}"
                    for name in ("dlweb", "SQLite FTS5", "one index", "two shards")
                )
                ratio = row["SQLite FTS5"][stat] / row["dlweb"][stat]
                shards = row["two shards"][stat] / row["one index"][stat]
                print(f"  {kind + ' ' + stat:<26}{values}{ratio:>14.2f}{shards:>12.2f}")
            print(f"    ({row['mean_matches']:,.0f} matches on average; e.g. {row['example']})")
    print()
    met = "PASS" if report["docs_per_s_target_met"] else "MISS"
    print(f"target: >= {TARGET_DOCS_PER_S:,} documents/s end to end: {met}")
    met = "PASS" if report["p99_target_met"] else "MISS"
    largest = max(int(size) for size in report["sizes"])
    print(f"target: two-word query p99 < {TARGET_P99_MS:.0f} ms at {largest:,} documents: {met}")


def size_list(text: str) -> list[int]:
    try:
        found = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers") from None
    if not found or min(found) < 1_000:
        raise argparse.ArgumentTypeError("each size must be 1000 or more")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 pages, 20k documents")
    parser.add_argument("--pages", type=int, default=None, help="HTML pages indexed (10,000)")
    parser.add_argument(
        "--sizes", type=size_list, default=None, help="index sizes (100000,1000000)"
    )
    parser.add_argument("--queries", type=int, default=None, help="queries of each kind (200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the pages and queries")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary dir")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    args.pages = args.pages or (2_000 if args.quick else 10_000)
    args.sizes = args.sizes or ([20_000] if args.quick else [100_000, 1_000_000])
    args.queries = args.queries or (100 if args.quick else 200)
    outcome = run_benchmark(args, run, show, "temporary files removed")
    return outcome if isinstance(outcome, int) else 0


if __name__ == "__main__":
    sys.exit(main())
