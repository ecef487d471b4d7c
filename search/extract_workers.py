"""Extraction on worker processes, one a core: reading a page (lxml, py3langid, the simhash) is
Python that holds the GIL, and takes most of an update's time, so a rebuild or an indexer on a
machine of N cores reads N pages at once while its own process fetches and indexes.

The workers are started by `spawn` (the indexing process runs threads, which a fork would copy
in whatever state they were) and load the language model as they start. A worker that dies
(a page that crashes the parser) breaks the pool: its batch is left out with the reason
"extractor crashed", logged, and a new pool is started for the next. A worker whose parent is
gone (an indexer killed with kill -9) ends within PARENT_CHECK seconds: the pool's queue would
keep it waiting for work forever, holding its model.
"""

import asyncio
import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from archive.header_block import HeaderBlock

from .errors import NotIndexed
from .extract import Extracted, Failed, extract_many
from .language import load, preload
from .stream_titles import StreamTitles

log = logging.getLogger(__name__)

MAX_WORKERS = 8
PARENT_CHECK = 1.0  # seconds between a worker's looks at whether its parent is alive
CRASHED = "extractor crashed"

# A page to read: its URL, header block and payload.
Item = tuple[str, HeaderBlock, bytes]
# What a page (or a stream's chunk log) gave, the reason it was left out, or the error its reading
# failed with.
Outcome = Extracted | StreamTitles | str | Failed


def default_workers() -> int:
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def _start_worker(parent: int) -> None:
    """A worker's start: its model loading on a thread, and its parent watched on another."""
    preload()
    threading.Thread(target=_watch, args=(parent,), name="dlweb-parent", daemon=True).start()


def _watch(parent: int) -> None:
    """End this worker once its parent is gone (it then has another parent: init or a reaper)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    os._exit(0)


def _ready() -> int:
    """Wait for the language model (in a worker); which process it is."""
    load()
    return os.getpid()


def extract_batch(items: list[Item]) -> list[Outcome]:
    """Read each page of a batch (in a worker)."""
    return [got.reason if isinstance(got, NotIndexed) else got for got in extract_many(items)]


class Extractors:
    """A pool of extracting processes, for the life of an update's writer."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )

    async def ready(self) -> int:
        """Wait until every worker has started and loaded its model (each is busy loading when
        the next task is handed out, so each takes one); how many processes answered."""
        loop = asyncio.get_running_loop()
        pids = await asyncio.gather(
            *(loop.run_in_executor(self._pool, _ready) for _ in range(self.workers))
        )
        return len(set(pids))

    async def extract(self, items: list[Item]) -> list[Outcome]:
        """What each page gave, in order: the batch split evenly over the workers."""
        if not items:
            return []
        loop = asyncio.get_running_loop()
        size = -(-len(items) // self.workers)
        parts = [items[start : start + size] for start in range(0, len(items), size)]
        try:
            done = await asyncio.gather(
                *(loop.run_in_executor(self._pool, extract_batch, part) for part in parts)
            )
        except BrokenProcessPool:
            log.warning("an extracting process died: %d pages left out", len(items))
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start()
            return [CRASHED] * len(items)
        return [outcome for part in done for outcome in part]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
