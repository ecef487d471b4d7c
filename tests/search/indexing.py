"""`dlweb search-indexer` run as a process by the tests, how they wait on its index, and what an
index answers (to compare one made by updates with one rebuilt)."""

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archive.url_index import URLKEYS_FILE
from deploy.testing.cluster import Cluster
from deploy.testing.waits import wait_until
from search.backlinks import backlinks, similar
from search.index import BUILT_FILE, open_index, search

from . import pages

SEARCHABLE_WITHIN = 10.0  # seconds from the end of an import, as the issue asks
READY_TIMEOUT = 60.0


class Indexer:
    """`dlweb search-indexer` as a process, its log in a file."""

    def __init__(self, cluster: Cluster, folder: Path) -> None:
        self.cluster = cluster
        self.folder = folder
        self.log_path = folder.parent / f"{folder.name}-indexer.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Indexer":
        command = [sys.executable, "-m", "dlweb", "search-indexer"]
        command += ["-c", str(self.cluster.config_path), "--index", str(self.folder)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.wait_until(lambda: (self.folder / BUILT_FILE).exists(), "the index built")
        return self

    def wait_until(
        self, done: Callable[[], bool], what: str, timeout: float = READY_TIMEOUT
    ) -> float:
        """Seconds until `done()` holds, polled; fails with the indexer's log after `timeout`,
        or as soon as the indexer exits."""
        return wait_until(done, what, timeout, process=self.process, details=self.log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=20)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


def hits(folder: Path, query: str) -> list[tuple[str, str]]:
    """The (url, time) of every hit of a query, best first; none before the index is built."""
    if not (folder / BUILT_FILE).exists():
        return []
    index = open_index(folder)
    return [(hit.url, hit.time) for hit in search(index, query, 100).hits]


def answers(folder: Path) -> dict[str, Any]:
    """What an index answers to the queries of the tests, and what its URL-key index holds."""
    index = open_index(folder)
    with sqlite3.connect(folder / URLKEYS_FILE) as db:
        urls = sorted(db.execute("SELECT urlkey, url, structure FROM urls"))
    return {
        "documents": index.searcher().num_docs,
        "queries": {
            query: hits(folder, query)
            for query in (
                f'"{pages.SENTENCE}"',
                "lighthouse",
                "museum OR menu",
                "lang:fr",
                "year:2019",
            )
        },
        "backlinks": [link.as_json() for link in backlinks(index, pages.BLOG)],
        "similar": similar(index, pages.TIDES, 10).as_json(),
        "urls": urls,
    }
