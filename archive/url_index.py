"""The URL-key index: every URL of the archive by its SURT key, for the CDX API's prefix, host
and domain queries (search/cdx.py) and for `dlweb export --url-prefix`.

A table of a search index's catalog (search/catalog.py, which writes it), kept by the same
updates as the full-text index: one row a URL with at least one capture listed by the CDX API,
`(urlkey, url, structure)`, keyed by `(urlkey, url)` (an http and an https URL, or a `www.` one,
share their SURT key). A range of keys is one indexed read.
"""

import functools
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import surt

from .errors import ServerFault

URLKEYS_FILE = "urlkeys.sqlite"


class NoUrlIndex(ServerFault):
    """A query of URLs by key where no URL-key index was built: the operator must run
    `dlweb search rebuild` (or a search indexer)."""

    status = 503


# A URL whose key is made here without the surt library (some 20 times faster): http(s), a host
# name of letters, digits and hyphens whose last label begins with a letter (not an address),
# a path of plain characters, no port, query or fragment. For these the library lowercases,
# drops a leading `www.` (or `www2.`), reverses the labels and drops trailing slashes; every
# other URL goes to the library, with its rules for escapes, queries and addresses.
_PLAIN = re.compile(
    r"https?://((?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*)(/[A-Za-z0-9_~.-]+(?:/[A-Za-z0-9_~.-]+)*/?|/)?",
    re.ASCII,
)
_WWW = re.compile(r"www\d*\.")


def surt_key(url: str) -> str:
    """The SURT key of a URL as pywb computes it (`com,example)/path?a=1&b=2`), or the URL itself
    for one the surt library cannot read (pywb keeps such keys as they are too)."""
    plain = _PLAIN.fullmatch(url)
    if plain is not None and "/." not in url:
        path = (plain.group(2) or "/").lower()
        return _host_key(plain.group(1)) + ")" + (path.rstrip("/") or "/")
    try:
        key: str = surt.surt(url)
    except Exception:  # surt raises what its parsers raise
        return url
    return key


@functools.lru_cache(maxsize=4096)
def _host_key(host: str) -> str:
    """A plain host name's part of its SURT keys, kept for the hosts met lately: the links of a
    page mostly go to a few."""
    host = host.lower()
    if www := _WWW.match(host):
        host = host[www.end() :]
    return ",".join(reversed(host.split(".")))


class UrlKeys:
    """A URL-key index opened for reading (an indexer may write it meanwhile)."""

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

    def count_keys(self, start: str, end: str) -> int:
        """How many distinct keys are at least `start` and below `end`: counted in the index,
        not in rows read out of it (a million keys in a fraction of a second)."""
        row = self._read(
            "SELECT COUNT(DISTINCT urlkey) FROM urls WHERE urlkey >= ? AND urlkey < ?",
            (start, end),
        )
        return 0 if row is None else int(row[0])

    def key_at(self, start: str, end: str, skipped: int) -> str | None:
        """The key that has `skipped` distinct keys of the range before it, None past its last:
        where a late page of the range starts, found without reading the keys before it out."""
        row = self._read(
            "SELECT DISTINCT urlkey FROM urls WHERE urlkey >= ? AND urlkey < ?"
            " ORDER BY urlkey LIMIT 1 OFFSET ?",
            (start, end, skipped),
        )
        return None if row is None else str(row[0])

    def _read(self, query: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        try:
            row: tuple[Any, ...] | None = self._connection.execute(query, params).fetchone()
        except sqlite3.DatabaseError as exc:
            raise NoUrlIndex(f"the URL-key index cannot be read ({exc}): rebuild it") from None
        return row

    def with_prefix(self, prefix: str) -> list[tuple[str, str]] | None:
        """`(url, structure)` of every URL starting with `prefix`, in URL order; None for a
        prefix that does not name a whole host (`http://exam`), which no range of keys holds."""
        try:
            parts = urlsplit(prefix)
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not parts.netloc or not parts.path:
            return None
        host = surt_key(f"{parts.scheme}://{parts.netloc}/").split(")", 1)[0]
        try:
            rows = self._connection.execute(
                "SELECT url, structure FROM urls WHERE urlkey >= ? AND urlkey < ?",
                (host + ")", host + "*"),  # "*" sorts just after ")"
            )
            return sorted((url, name) for url, name in rows if url.startswith(prefix))
        except sqlite3.DatabaseError as exc:
            raise NoUrlIndex(f"the URL-key index cannot be read ({exc}): rebuild it") from None
