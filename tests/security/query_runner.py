"""A process that runs the full-text queries it is sent on a small index of its own, as the
proxy's harbors run them (hits, facets and snippets), so that a query which crashes tantivy
ends this process and not the tests: `python -m tests.security.query_runner`, one query a line
(a JSON string) on its standard input, one answer a line on its standard output: `ok`, or the
name of the error (BadQuery for a query tantivy finds malformed).
"""

import json
import sys
import tempfile
from pathlib import Path

import tantivy

from archive.timestamps import parse_time
from search.errors import BadQuery
from search.index import Page, create, new_writer, search

PAGES = [
    ("http://a.test/", "2019-03-01T10:00:00Z", "The lighthouse", "a keeper b lamp c tide"),
    ("http://b.test/x", "2021-06-01T10:00:00Z", "Harbour", "a b boats and a lighthouse keeper"),
]


def small_index(folder: Path) -> tantivy.Index:
    index = create(folder)
    writer = new_writer(index)
    for url, when, title, text in PAGES:
        host = url.split("/")[2]
        page = Page(
            url, host, host, parse_time(when), "text/html", 200, "0" * 64, title, text, "en", (), 1
        )
        writer.add_document(page.document())
    writer.commit()
    index.reload()
    return index


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        index = small_index(Path(folder))
        print("ready", flush=True)
        for line in sys.stdin:
            try:
                search(index, json.loads(line), 10, 0, None, None, True)
                said = "ok"
            except BadQuery:
                said = "BadQuery"
            print(said, flush=True)


if __name__ == "__main__":
    main()
