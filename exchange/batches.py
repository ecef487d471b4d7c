"""Reading WARC and ARC files into batches of records, on a thread of its own.

Reading (parsing, inflating, hashing, checking) is most of an import's work on the client, so it
starts before anything else: `dlweb import` starts a BatchReader, then loads its network modules
and reaches the cluster while the first batches are read. The thread stays at most BATCHES_AHEAD
batches ahead of the inserts, so memory stays bounded however large the files.
"""

import asyncio
import queue
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from archive.warc.reader import Item, SourceRecord, read_archive

from .wacz import archive_inputs

BATCH_RECORDS = 1_000
BATCH_BYTES = 64 * 1024 * 1024
BATCHES_AHEAD = 2
DEFAULT_MAX_RECORD = 1 << 30

__all__ = ["Batch", "BatchReader", "DEFAULT_MAX_RECORD", "discard_all"]


@dataclass
class Batch:
    items: list[Item]
    position: int  # bytes of the files read up to the end of this batch
    end_of: Path | None = None  # set on the last batch of a file


class BatchReader:
    """Use as `async with BatchReader(paths, max_record) as reading:`, or call `start` early and
    `close` at the end; `next` gives the batches in order, then None."""

    def __init__(self, paths: Sequence[Path], max_record: int = DEFAULT_MAX_RECORD) -> None:
        self.paths = list(paths)
        self.max_record = max_record
        self._queue: queue.Queue[Batch | BaseException | None] = queue.Queue(BATCHES_AHEAD)
        self._stop = threading.Event()
        self._spool: tempfile.TemporaryDirectory[str] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "BatchReader":
        self._spool = tempfile.TemporaryDirectory(prefix="dlweb-import-")
        self._thread = threading.Thread(
            target=self._read_all, args=(Path(self._spool.name),), daemon=True
        )
        self._thread.start()
        return self

    async def __aenter__(self) -> "BatchReader":
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def next(self) -> Batch | None:
        """The next batch, or None once every file is read; a failure of the thread is raised."""
        batch = await asyncio.to_thread(self._queue.get)
        if isinstance(batch, BaseException):
            raise batch
        return batch

    async def close(self) -> None:
        """Stop reading, let go of the batches not taken and remove the spooled bodies."""
        self._stop.set()
        while self._thread is not None and self._thread.is_alive():
            self._drop()
            await asyncio.to_thread(self._thread.join, 0.1)
        self._drop()
        # A `next` cancelled while it waited leaves a worker thread waiting on the queue, which
        # the event loop waits for when it closes: the end mark sets it free.
        self._queue.put_nowait(None)
        if self._spool is not None:
            self._spool.cleanup()
            self._spool = None

    def _read_all(self, spool_dir: Path) -> None:
        out = self._queue
        try:
            done = 0
            for path in self.paths:
                # A file, or each WARC file of a WACZ package (read from the ZIP).
                for name, fh, start in archive_inputs(path):
                    position = done + start

                    def progress(at: int, base: int = done + start) -> None:
                        nonlocal position
                        position = base + at

                    items: list[Item] = []
                    held = 0
                    for item in read_archive(name, self.max_record, spool_dir, progress, fh):
                        if self._stop.is_set():
                            discard_all(items + [item])
                            return
                        items.append(item)
                        if isinstance(item, SourceRecord):
                            held += item.body.size
                        if len(items) >= BATCH_RECORDS or held >= BATCH_BYTES:
                            out.put(Batch(items, position))
                            items, held = [], 0
                    out.put(Batch(items, position, end_of=name))
                done += path.stat().st_size
            out.put(None)
        except BaseException as exc:  # handed to the event loop, which raises it
            out.put(exc)

    def _drop(self) -> None:
        """Empty the queue so the reading thread is never stuck on a full one."""
        while True:
            try:
                batch = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(batch, Batch):
                discard_all(batch.items)


def discard_all(items: list[Item]) -> None:
    for item in items:
        if isinstance(item, SourceRecord):
            item.body.discard()
