"""A node's contents: small ones in volumes, large ones as files named by their SHA-256."""

import os
from collections.abc import Iterator
from pathlib import Path

from archive.store import FileStore, PendingFile, fsync_dir

from .volumes import SMALL_CONTENT, Span, VolumeEntry, Volumes, spans_on_disk

VOLUMES_DIR = "volumes"


def move_file(source: Path, target: Path) -> None:
    """Rename a file into another folder of the same filesystem, durably."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    fsync_dir(target.parent)
    fsync_dir(source.parent)


def contents_on_disk(root: Path) -> Iterator[Span]:
    """Every content in the content store at `root`, read from disk without opening the store
    (for inspecting a node's disk from outside, as tests and admins do)."""
    yield from spans_on_disk(Path(root) / VOLUMES_DIR)
    files = FileStore(root)
    for name in files.names():
        yield Span(name, files.location(name), 0, files.size(name))


class ContentStore:
    """Every content a node holds, whichever way it is kept."""

    def __init__(self, root: Path) -> None:
        self.files = FileStore(root)
        self.root = self.files.root
        self.volumes = Volumes(self.root / VOLUMES_DIR)

    def clean_temporaries(self) -> int:
        return self.files.clean_temporaries()

    def exists(self, name: str) -> bool:
        return name in self.volumes or self.files.exists(name)

    def span(self, name: str) -> Span:
        """Where the content's bytes are; FileNotFoundError when it is not held."""
        span = self.volumes.span(name)
        if span is not None:
            return span
        location = self.files.location(name)
        return Span(name, location, 0, os.stat(location).st_size)

    def read_small(self, name: str) -> tuple[Span, bytes | None]:
        """Where a content is, and its bytes when a volume could hold it (None for a larger
        one, to be sent from its file); FileNotFoundError when it is not held.

        A volume being compacted is deleted once its contents are indexed elsewhere, so a read
        that finds its volume gone looks the content up once more."""
        try:
            return self._read_small(name)
        except FileNotFoundError:
            return self._read_small(name)

    def _read_small(self, name: str) -> tuple[Span, bytes | None]:
        span = self.span(name)
        return span, (span.read() if span.size <= SMALL_CONTENT else None)

    def size(self, name: str) -> int:
        return self.span(name).size

    def names(self) -> Iterator[str]:
        yield from self.volumes.names()
        yield from self.files.names()

    def writer(self, expected: str | None = None) -> PendingFile:
        """A content file being received as a stream (for a content larger than a volume
        entry, or of unknown size)."""
        return self.files.writer(expected)

    def stage(self, name: str, data: bytes, fsync: bool) -> PendingFile | VolumeEntry:
        """Write a content received whole aside, verified, to be placed later."""
        if len(data) <= SMALL_CONTENT:
            return self.volumes.stage(name, data)
        pending = self.files.writer(name)
        try:
            pending.write(data)
            pending.seal(fsync=fsync)
        except BaseException:
            pending.abort()
            raise
        return pending

    def stage_file(self, pending: PendingFile) -> PendingFile | VolumeEntry:
        """A received content file, or, when it is small, its bytes moved into a volume."""
        assert pending.name is not None, "stage_file before seal"
        if pending.size > SMALL_CONTENT:
            return pending
        data = pending.temp_path.read_bytes()
        entry = self.volumes.stage_verified(pending.name, data)
        pending.abort()
        return entry

    def delete(self, name: str) -> bool:
        """Remove a content durably, from a volume and as a file (a node that held it as a file
        before volumes existed may hold both); False when it was not there."""
        in_volume = self.volumes.remove(name)
        return self.files.delete(name) or in_volume

    def move_out(self, name: str, target: Path) -> None:
        """Take a content out of the store into the file `target` (quarantine), durably."""
        span = self.volumes.span(name)
        if span is None:
            move_file(self.files.path_for(name), target)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(target.name + ".part")
        with open(temp, "wb") as out:
            out.write(span.read())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
        fsync_dir(target.parent)
        self.volumes.remove(name)

    def compact(self) -> int:
        """Reclaim the space of removed contents in volumes; return how many were rewritten."""
        return self.volumes.compact()

    def close(self) -> None:
        self.volumes.close()
