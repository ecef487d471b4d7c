"""The URL-key index: every URL of the archive by its SURT key, for the CDX API's prefix, host
and domain queries (cdx.py).

A table of the search index's catalog (catalog.py), kept by the same updates as the full-text
index: one row a URL with at least one capture listed by the CDX API, `(urlkey, url,
structure)`, keyed by `(urlkey, url)` (an http and an https URL, or a `www.` one, share their
SURT key). A range of keys is one indexed read.
"""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import surt

from .errors import NoUrlIndex

URLKEYS_FILE = "urlkeys.sqlite"
_SCHEMA = """
CREATE TABLE urls (
    urlkey TEXT NOT NULL,
    url TEXT NOT NULL,
    structure TEXT NOT NULL,
    PRIMARY KEY (urlkey, url)
) WITHOUT ROWID
"""


def surt_key(url: str) -> str:
    """The SURT key of a URL as pywb computes it (`com,example)/path?a=1&b=2`), or the URL itself
    for one the surt library cannot read (pywb keeps such keys as they are too)."""
    try:
        key: str = surt.surt(url)
    except Exception:  # surt raises what its parsers raise
        return url
    return key


class UrlKeys:
    """A URL-key index opened for reading (read-only: a rebuild replaces the folder whole)."""

    def __init__(self, folder: Path) -> None:
        path = folder / URLKEYS_FILE
        if not path.is_file():
            raise NoUrlIndex(
                f"no URL-key index in {folder}: prefix, host and domain queries need one;"
                " make it with `dlweb search rebuild`"
            )
        self._connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)

    def __enter__(self) -> "UrlKeys":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def between(self, start: str, end: str) -> Iterator[tuple[str, str]]:
        """`(urlkey, url)` of every URL whose key is at least `start` and below `end`, in key
        then URL order."""
        try:
            yield from self._connection.execute(
                "SELECT urlkey, url FROM urls WHERE urlkey >= ? AND urlkey < ?"
                " ORDER BY urlkey, url",
                (start, end),
            )
        except sqlite3.DatabaseError as exc:
            raise NoUrlIndex(f"the URL-key index cannot be read ({exc}): rebuild it") from None
