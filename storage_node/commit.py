"""Group commit: many concurrent writes made durable by a few filesystem flushes.

Fsyncing every small file and its folder costs two disk flushes per file. Instead, sealed files
wait in a queue; one worker flushes the filesystem (syncfs) for the whole batch, so their data is
durable, then renames them into place. The inventory's own group flush, which every write awaits
before it is acknowledged, then makes the renames durable. A name therefore never points to data
that is not on disk, and a crash before the acknowledgement leaves only temporary files.
"""

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Protocol

from archive.store import sync_filesystem

from .volumes import VolumeEntry, Volumes


class Staged(Protocol):
    """A file written aside without fsync (a PendingFile, a StagedFile or a VolumeEntry), to be
    put in place."""

    def place(self, sync_dir: bool = True) -> None: ...


class _Nothing:
    def place(self, sync_dir: bool = True) -> None:
        """Nothing to rename: waiting for the batch's flush is the point."""


_NOTHING_TO_PLACE = _Nothing()


def place_all(files: Sequence[Staged], sync_dir: bool = True) -> list[BaseException | None]:
    """Put staged files in place; the outcome of each, in order. The entries of one store's
    volumes are placed together: one write of their index records, not one each."""
    outcomes: list[BaseException | None] = [None] * len(files)
    entries: dict[Volumes, list[tuple[int, VolumeEntry]]] = {}
    for index, pending in enumerate(files):
        if isinstance(pending, VolumeEntry):
            entries.setdefault(pending.volumes, []).append((index, pending))
            continue
        try:
            pending.place(sync_dir=sync_dir)
        except OSError as exc:
            outcomes[index] = exc
    for volumes, indexed in entries.items():
        try:
            volumes.place_many([entry for _, entry in indexed], sync=sync_dir)
        except OSError as exc:
            for index, _ in indexed:
                outcomes[index] = exc
    return outcomes


class GroupCommitter:
    def __init__(self, root: Path, executor: Executor) -> None:
        self._fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._executor = executor
        # Each call's files with the one future the call waits on.
        self._queue: list[tuple[Sequence[Staged], asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.files = 0

    async def place(self, pending: Staged) -> None:
        """Return once `pending` (sealed without fsync) is durable and in place."""
        await self.place_all([pending])

    async def place_all(self, staged: Sequence[Staged]) -> None:
        """`place` for many files, which then share the batches' flushes; raises the first
        failure among them, after the others are in place."""
        if not staged:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((staged, future))
        if self._task is None:
            self._task = asyncio.create_task(self._drain())
        await future

    async def flush(self) -> None:
        """Return once everything written before the call is durable (files written in place,
        such as appends to a structure file)."""
        await self.place(_NOTHING_TO_PLACE)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                files = [pending for staged, _ in batch for pending in staged]
                outcomes = await loop.run_in_executor(self._executor, self._flush_and_place, files)
                self.batches += 1
                self.files += len(files)
                start = 0
                for staged, future in batch:
                    failed = next(
                        (o for o in outcomes[start : start + len(staged)] if o is not None), None
                    )
                    start += len(staged)
                    if future.done():
                        continue
                    if failed is None:
                        future.set_result(None)
                    else:
                        future.set_exception(failed)
        finally:
            self._task = None

    def _flush_and_place(self, batch: list[Staged]) -> list[BaseException | None]:
        try:
            sync_filesystem(self._fd)
        except OSError as exc:
            return [exc] * len(batch)
        return place_all(batch, sync_dir=False)

    def close(self) -> None:
        os.close(self._fd)
