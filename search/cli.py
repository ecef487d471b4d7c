"""`dlweb search QUERY` and `dlweb search rebuild`: full-text search over the archive's pages;
`dlweb cdx URL`: its captures as pywb's CDX server lists them (cdx.py).

A query is one or more words (put together, as the shell splits them): `dlweb search "quick
brown fox"` searches those words, `dlweb search '"quick brown fox"'` the phrase. The one word
`rebuild` makes the index again instead (search for that word as `text:rebuild`).
`dlweb search --backlinks URL` lists the pages linking to a URL, `dlweb search --similar URL`
the pages nearest it by simhash (backlinks.py), `dlweb search --history URL` its versions and what
changed in each (history.py). `--offset`, `--from` and `--to` page and limit a query's hits.
`dlweb search --about` tells what the index holds and the versions it set aside.
"""

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archive import collector
from archive.command_line import (
    Subparsers,
    add_config_option,
    add_search_index_option,
    positive_int,
    search_index,
    standalone,
)
from archive.config import load_config
from archive.progress import terminal_bar

if TYPE_CHECKING:
    from .backlinks import Backlink, Neighbours
    from .history import History
    from .index import Answer

REBUILD = "rebuild"
BOLD, PLAIN = "\033[1m", "\033[0m"


def _run(args: argparse.Namespace) -> int:
    from .errors import BadLinkQuery

    index = search_index(args.index, args.config)
    if args.about:
        if args.words:
            raise BadLinkQuery(f"give --about or a query, not both (got {' '.join(args.words)!r})")
        return _about(args, index)
    asked = next(
        (url for url in (args.backlinks, args.similar, args.history) if url is not None), None
    )
    if asked is not None:
        if args.words:
            raise BadLinkQuery(
                "give --backlinks, --similar or --history, or a query, not both"
                f" (got {' '.join(args.words)!r})"
            )
        return _links(args, asked, index)
    if not args.words:
        raise BadLinkQuery(
            "give a query, `rebuild`, --backlinks URL, --similar URL or --history URL"
        )
    if args.words == [REBUILD]:
        return asyncio.run(_rebuild(args, index))
    return _query(args, index)


def _links(args: argparse.Namespace, url: str, folder: Path) -> int:
    """`--backlinks URL`, `--similar URL` or `--history URL`."""
    from .backlinks import backlinks, similar
    from .history import history
    from .index import open_index
    from .keys import asked_key

    asked_key(url)  # a bad URL is told before the index is opened
    index = open_index(folder)
    if args.history is not None:
        versions = history(index, url)
        if args.json:
            print(json.dumps(versions.as_json(), ensure_ascii=False))
        else:
            print("\n".join(_history_lines(versions)))
        return 0
    if args.backlinks is not None:
        found = backlinks(index, url)
        shown = found[: args.limit] if args.limit else found
        if args.json:
            listed = [link.as_json() for link in shown]
            print(
                json.dumps(
                    {"url": url, "total": len(found), "backlinks": listed}, ensure_ascii=False
                )
            )
        else:
            print("\n".join(_backlink_lines(url, found, shown)))
        return 0
    near = similar(index, url, args.limit or 10)
    if args.json:
        print(json.dumps(near.as_json(), ensure_ascii=False))
    else:
        print("\n".join(_similar_lines(near)))
    return 0


def _about(args: argparse.Namespace, folder: Path) -> int:
    """`--about`: what the index holds, how far it follows the master's changes, and the
    versions it set aside (those it could not take), the last few of them."""
    from .catalog import Catalog
    from .index import open_index, read_built
    from .rebuild import set_aside_lines
    from .updating import SET_ASIDE_SHOWN

    documents = open_index(folder).searcher().num_docs
    built = read_built(folder)
    catalog = Catalog(folder)
    try:
        position = catalog.position()[1]
        count, last = catalog.set_aside(SET_ASIDE_SHOWN)
    finally:
        catalog.close()
    if args.json:
        about = {
            "index": str(folder),
            "schema": built.get("schema"),
            "built": built.get("built"),
            "documents": documents,
            "position": position,
            "set_aside": count,
            "last_set_aside": [entry.as_json() for entry in last],
        }
        print(json.dumps(about, ensure_ascii=False))
        return 0
    lines = [
        f"search index in {folder}: {documents:,} page versions, built {built.get('built')}",
        f"up to change {position:,} of the master's feed",
        f"{count:,} versions set aside (their reading failed, or the index cannot take them)",
        *set_aside_lines(last),
    ]
    print("\n".join(lines))
    return 0


def _backlink_lines(url: str, found: "list[Backlink]", shown: "list[Backlink]") -> list[str]:
    lines = [f"{len(shown)} of {len(found):,} archived pages linking to {url}"]
    for rank, link in enumerate(shown, 1):
        anchors = ", ".join(json.dumps(text, ensure_ascii=False) for text in link.anchors)
        lines += [
            f"{rank}. {link.title or '(no title)'}",
            f"   {link.url}  {link.time}",
            f"   {anchors or '(no anchor text)'}",
        ]
    return lines


def _similar_lines(near: "Neighbours") -> list[str]:
    lines = [
        f"{len(near.pages)} pages within {near.max_distance} bits of {near.url}"
        f" (its version of {near.time}, simhash {near.simhash:016x})"
    ]
    for rank, page in enumerate(near.pages, 1):
        lines += [
            f"{rank}. {page.title or '(no title)'}",
            f"   {page.url}  {page.time}  {page.distance} bits apart",
        ]
    return lines


def _history_lines(found: "History") -> list[str]:
    lines = [f"{len(found.versions)} versions of {found.url} in the index, oldest first"]
    for version in found.versions:
        lines.append(f"{version.time}  {version.title or '(no title)'}  {version.url}")
        if version.change is None:
            lines.append("   the first version indexed")
            continue
        lines.append(f"   {version.change.summary()}")
        lines += [f"   + {sentence}" for sentence in version.change.added]
        lines += [f"   - {sentence}" for sentence in version.change.removed]
    return lines


async def _rebuild(args: argparse.Namespace, folder: Path) -> int:
    from archive.cluster import ClusterClient  # here: a query needs no network modules

    from .rebuild import check_target, rebuild

    check_target(folder)
    config = load_config(args.config)
    bar = terminal_bar(unit=" pages", desc="indexing")

    def progress(done: int, total: int) -> None:
        assert bar is not None
        bar.total = total
        bar.update(done - bar.n)

    try:
        async with ClusterClient(config) as client:
            summary = await rebuild(client, folder, progress if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps({"index": str(folder), **summary.as_json()}))
    else:
        print("\n".join(summary.lines(folder)))
    return 0


def _indexer(args: argparse.Namespace) -> int:
    import uvloop  # here: only this command runs for long

    from archive.cluster import ClusterClient

    from .indexer import keep_current
    from .rebuild import check_target

    index = search_index(args.index, args.config)
    check_target(index)
    config = load_config(args.config)

    async def serve() -> None:
        async with ClusterClient(config) as client:
            await keep_current(client, index)

    uvloop.run(serve())
    return 0


def _query(args: argparse.Namespace, folder: Path) -> int:
    from .index import open_index, search, time_range

    query = " ".join(args.words)
    start, end = time_range(args.from_date, args.to_date)  # told before the index is opened
    index = open_index(folder)
    answer = search(index, query, args.limit or 10, args.offset, start, end, facets=args.json)
    if args.json:
        print(json.dumps(answer.as_json(query), ensure_ascii=False))
        return 0
    print("\n".join(_lines(query, answer, sys.stdout.isatty())))
    return 0


def _lines(query: str, answer: "Answer", terminal: bool) -> list[str]:
    """The hits as a reader sees them: rank and title, URL and date, the snippet with the words
    matched in bold on a terminal, between asterisks elsewhere."""
    lines = [f"{len(answer.hits)} of {answer.total:,} matching page versions for {query!r}"]
    if answer.offset:
        lines[0] += f", after the first {answer.offset:,}"
    start, end = (BOLD, PLAIN) if terminal else ("*", "*")
    for rank, hit in enumerate(answer.hits, answer.offset + 1):
        snippet, at = [], 0
        for first, last in hit.highlights:
            snippet += [hit.snippet[at:first], start, hit.snippet[first:last], end]
            at = last
        snippet.append(hit.snippet[at:])
        lines += [
            f"{rank}. {hit.title or '(no title)'}",
            f"   {hit.url}  {hit.time}",
            f"   {''.join(snippet)}",
        ]
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "words",
        nargs="*",
        metavar="QUERY",
        help='words, "a phrase", title:word, AND/OR/NOT, year:2019; or `rebuild` to make the'
        " index again from the archive",
    )
    add_search_index_option(parser, "the index folder")
    asked = parser.add_mutually_exclusive_group()
    for option, text in (
        ("--backlinks", "the archived pages that link to URL, with anchor texts"),
        ("--similar", "the pages nearest URL's latest version, by simhash"),
        ("--history", "URL's versions, oldest first, and what changed in each"),
    ):
        asked.add_argument(option, metavar="URL", help=text)
    asked.add_argument(
        "--about",
        action="store_true",
        help="what the index holds, and the versions it set aside (it could not take them)",
    )
    parser.add_argument(
        "--limit",
        type=positive_int,
        help="hits shown (default 10; every backlink for --backlinks)",
    )
    parser.add_argument(
        "--offset",
        type=int,
        default=0,
        metavar="N",
        help="skip the N best hits: the next page of a query",
    )
    parser.add_argument(
        "--from",
        dest="from_date",
        metavar="DATE",
        help="hits first captured from DATE (2019, 2019-05, 2019-05-01 or ISO 8601)",
    )
    parser.add_argument(
        "--to", dest="to_date", metavar="DATE", help="hits first captured until DATE, included"
    )
    parser.add_argument("--json", action="store_true", help="answer in JSON")
    add_config_option(parser)  # for `rebuild`, which reads the cluster
    # A query's words may come after its options; a user's command: no connection chatter.
    parser.set_defaults(
        run=_run, intermixed="words", log_level=logging.WARNING, collection=collector.BATCH
    )


def _cdx(args: argparse.Namespace) -> int:
    from .cdx import parse_query

    params = [("url", args.url)]
    for name, value in [
        ("matchType", args.match_type),
        ("output", args.output),
        ("from", args.from_ts),
        ("to", args.to_ts),
        ("limit", args.limit),
        ("sort", args.sort),
        ("closest", args.closest),
        ("fields", args.fields),
        ("page", args.page),
        ("pageSize", args.page_size),
        ("showNumPages", "true" if args.show_num_pages else None),
        ("showPagedIndex", "true" if args.show_paged_index else None),
    ]:
        if value is not None:
            params.append((name, value))
    params += [("filter", text) for text in args.filter]
    query = parse_query(params)  # before connecting: a bad query is told at once
    body = asyncio.run(_cdx_answer(args, query))
    sys.stdout.write(body)
    return 0


async def _cdx_answer(args: argparse.Namespace, query: Any) -> str:
    from archive.cluster import ClusterClient

    from .cdx import answer

    async with ClusterClient(load_config(args.config)) as client:
        return await answer(client, query, search_index(args.index, args.config))


def add_cdx_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url", metavar="URL", help="a URL; example.com/* for a prefix, *.example.com for a domain"
    )
    parser.add_argument(
        "--match-type", metavar="TYPE", help="exact (default), prefix, host or domain"
    )
    parser.add_argument(
        "--output", metavar="FORMAT", help="cdxj (default), json, text or link (a TimeMap)"
    )
    parser.add_argument("--from", dest="from_ts", metavar="TIMESTAMP", help="from, e.g. 2019")
    parser.add_argument("--to", dest="to_ts", metavar="TIMESTAMP", help="to, e.g. 20210615")
    parser.add_argument("--limit", metavar="N", help="at most N lines")
    parser.add_argument("--sort", metavar="ORDER", help="reverse, or closest (with --closest)")
    parser.add_argument("--closest", metavar="TIMESTAMP", help="nearest this time first")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="[!][=|~]FIELD:VALUE",
        help="keep lines whose field contains (=: equals, ~: matches the regex) the value;"
        " ! inverts; repeat to combine",
    )
    parser.add_argument("--fields", metavar="F1,F2", help="the fields shown, e.g. url,timestamp")
    parser.add_argument("--page", metavar="N", help="only the lines of page N, from 0")
    parser.add_argument(
        "--page-size", metavar="BLOCKS", help="blocks of URL keys a page (10 by default)"
    )
    parser.add_argument(
        "--show-num-pages",
        action="store_true",
        help="the number of blocks and pages, as JSON",
    )
    parser.add_argument(
        "--show-paged-index",
        action="store_true",
        help="the blocks of a page (--page, else the first), one a line",
    )
    add_search_index_option(parser, "the search index folder, with the URL-key index")
    add_config_option(parser)
    parser.set_defaults(run=_cdx, log_level=logging.WARNING, collection=collector.BATCH)


def add_indexer_arguments(parser: argparse.ArgumentParser) -> None:
    add_search_index_option(parser, "the index folder, built first when empty")
    add_config_option(parser)
    parser.set_defaults(run=_indexer)


def register(subparsers: Subparsers) -> None:
    add_arguments(
        subparsers.add_parser(
            "search",
            help="search the archived pages' text (`dlweb search rebuild` makes the index)",
        )
    )
    add_indexer_arguments(
        subparsers.add_parser(
            "search-indexer",
            help="keep the search index current as captures are inserted (a follower of the"
            " master)",
        )
    )
    add_cdx_arguments(
        subparsers.add_parser(
            "cdx",
            help="captures of a URL, a prefix, a host or a domain, as pywb's CDX server lists them",
        )
    )


def main() -> int:
    return standalone("python -m search", "full-text search over the dlweb archive", add_arguments)
