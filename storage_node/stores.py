"""A node's two stores: small files in volumes, larger ones as files named by their SHA-256.

Contents up to 1 MiB and structure files up to 64 KiB (about 680 captures) are kept in volumes
(`volumes.py`); larger ones are a file each. A content never changes. A structure file does: a
change writes its whole new version, to the volume while it stays small (the old version becomes
unused space), and to a file once it has grown past the limit or has a file already. A file is
looked for before a volume entry, so the newest version wins even if a crash came between writing
a file and removing the volume entry it replaced.
"""

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from archive.hashing import check_name
from archive.store import FileStore, PendingFile, StagedFile, fsync_dir
from archive.structure import StructureFile

from .volumes import Span, VolumeEntry, Volumes, spans_on_disk

VOLUMES_DIR = "volumes"
SMALL_CONTENT = 1024 * 1024
SMALL_STRUCTURE = 64 * 1024


def move_file(source: Path, target: Path) -> None:
    """Rename a file into another folder of the same filesystem, durably."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    fsync_dir(target.parent)
    fsync_dir(source.parent)


def spans_in_store(root: Path) -> Iterator[Span]:
    """Every file of the store at `root`, read from disk without opening the store (for
    inspecting a node's disk from outside, as tests and admins do)."""
    files = FileStore(root)
    in_files = set()
    for name in files.names():
        in_files.add(name)
        yield Span(name, files.location(name), 0, files.size(name))
    for span in spans_on_disk(Path(root) / VOLUMES_DIR):
        if span.name not in in_files:
            yield span


class _Graduation:
    """A file that replaces a volume entry of the same name: placed, then the entry removed."""

    def __init__(self, staged: StagedFile, volumes: Volumes, name: str) -> None:
        self._staged = staged
        self._volumes = volumes
        self.name = name

    def place(self, sync_dir: bool = True) -> None:
        self._staged.place(sync_dir)
        self._volumes.remove(self.name)

    def abort(self) -> None:
        self._staged.abort()


Staged = PendingFile | StagedFile | VolumeEntry | _Graduation


class VolumeStore:
    """Every file of one kind a node holds, whichever way it is kept."""

    def __init__(self, root: Path, small: int, mutable: bool) -> None:
        self.files = FileStore(root)
        self.root = self.files.root
        self.small = small
        self.volumes = Volumes(self.root / VOLUMES_DIR, replace=mutable)

    def clean_temporaries(self) -> int:
        return self.files.clean_temporaries()

    # -- reading ---------------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        # The volumes first: a dictionary lookup, where the file store costs a stat.
        check_name(name)
        return name in self.volumes or self.files.exists(name)

    def span(self, name: str) -> Span:
        """Where the file's bytes are; FileNotFoundError when it is not held."""
        location = self.files.location(name)
        try:
            return Span(name, location, 0, os.stat(location).st_size)
        except FileNotFoundError:
            span = self.volumes.span(name)
            if span is None:
                raise
            return span

    def size(self, name: str) -> int:
        return self.span(name).size

    def names(self) -> Iterator[str]:
        in_files = set()
        for name in self.files.names():
            in_files.add(name)
            yield name
        for name in self.volumes.names():
            if name not in in_files:
                yield name

    def sizes(self) -> Iterator[tuple[str, int]]:
        """`names` with each file's size: a stat for a file of its own, none for a volume entry."""
        in_files = set()
        for name in self.files.names():
            try:
                size = self.files.size(name)
            except FileNotFoundError:
                continue  # deleted since it was listed
            in_files.add(name)
            yield name, size
        for name, size in self.volumes.sizes():
            if name not in in_files:
                yield name, size

    def count(self) -> int:
        """How many files are held, or a few more (a file replaced while it is listed counts
        twice): what a filter is sized for."""
        return sum(1 for _ in self.files.names()) + len(self.volumes)

    def read_small(self, name: str) -> tuple[Span, bytes | None]:
        """Where a file is, and its bytes when a volume could hold it (None for a larger one,
        to be sent from its file); FileNotFoundError when it is not held.

        A volume being compacted is deleted once its entries are indexed elsewhere, so a read
        that finds its volume gone looks the file up once more."""
        try:
            return self._read_small(name)
        except FileNotFoundError:
            return self._read_small(name)

    def _read_small(self, name: str) -> tuple[Span, bytes | None]:
        span = self.span(name)
        return span, (span.read() if span.size <= self.small else None)

    def open_structure(self, name: str, writable: bool = False) -> StructureFile:
        """The structure file `name`; a writable one only if it is a file (a volume entry is
        replaced whole instead). FileNotFoundError when it is not held. As in `read_small`, a
        volume deleted by a compaction meanwhile makes it look once more."""
        try:
            return self._open_structure(name, writable)
        except FileNotFoundError:
            return self._open_structure(name, writable)

    def _open_structure(self, name: str, writable: bool) -> StructureFile:
        span = self.span(name)
        if span.offset == 0 and span.path == self.files.location(name):
            return StructureFile(Path(span.path), writable)
        if writable:
            raise ValueError(f"structure file {name} is in a volume: write a new version")
        return StructureFile(Path(span.path), start=span.offset, length=span.size)

    def volume_span(self, name: str) -> Span | None:
        """Where a file kept in a volume is; None when it is a file of its own or not held."""
        try:
            span = self.span(name)
        except FileNotFoundError:
            return None
        return None if span.path == self.files.location(name) else span

    def in_volume(self, name: str) -> bool:
        """True when the newest version of `name` is a volume entry, not a file."""
        return not self.files.exists(name) and name in self.volumes

    # -- writing ---------------------------------------------------------------------------------

    def writer(self, expected: str | None = None) -> PendingFile:
        """A content file being received as a stream (one larger than a volume entry, or of
        unknown size)."""
        return self.files.writer(expected)

    def stage_contents(
        self, files: Sequence[tuple[str, bytes | memoryview]], fsync: bool
    ) -> list[PendingFile | VolumeEntry]:
        """Write contents received whole aside, verified, to be placed later: the small ones
        appended to the volumes together, each larger one to a file of its own."""
        staged: list[PendingFile | VolumeEntry] = list(
            self.volumes.stage_many([(n, data) for n, data in files if len(data) <= self.small])
        )
        try:
            for name, data in files:
                if len(data) > self.small:
                    pending = self.files.writer(name)
                    staged.append(pending)
                    pending.write(data)
                    pending.seal(fsync=fsync)
        except BaseException:
            for entry in staged:
                entry.abort()
            raise
        return staged

    def stage_file(self, pending: PendingFile) -> PendingFile | VolumeEntry:
        """A received content file, or, when it is small, its bytes moved into a volume."""
        assert pending.name is not None, "stage_file before seal"
        if pending.size > self.small:
            return pending
        data = pending.temp_path.read_bytes()
        entry = self.volumes.stage_verified(pending.name, data)
        pending.abort()
        return entry

    def stage_version(
        self,
        name: str,
        data: bytes | None = None,
        temp: Path | None = None,
        absent: bool = False,
    ) -> StagedFile | VolumeEntry | _Graduation:
        """A new version of a structure file (its bytes, or a file holding them) written aside,
        to be placed later: a volume entry while it is small and has no file, else a file.
        `absent` says the caller knows it is not held as a file (no stat is needed to find out)."""
        size = len(data) if data is not None else os.stat(temp or "").st_size
        if not self._kept_in_volume(name, size, absent):
            return self._stage_file_version(name, data, temp)
        if data is None:
            assert temp is not None
            data = temp.read_bytes()
            temp.unlink()
        return self.volumes.stage_verified(name, data)

    def stage_versions(
        self, files: Sequence[tuple[str, bytes]], absent: bool = False
    ) -> list[StagedFile | VolumeEntry | _Graduation]:
        """`stage_version` for the bytes of many files, in order; those kept in volumes are
        appended together."""
        small = [self._kept_in_volume(name, len(data), absent) for name, data in files]
        entries = iter(
            self.volumes.stage_many(
                [file for file, is_small in zip(files, small, strict=True) if is_small],
                verified=True,
            )
        )
        staged: list[StagedFile | VolumeEntry | _Graduation] = []
        try:
            for (name, data), is_small in zip(files, small, strict=True):
                staged.append(next(entries) if is_small else self._stage_file_version(name, data))
        except BaseException:
            for version in [*staged, *entries]:
                version.abort()
            raise
        return staged

    def _kept_in_volume(self, name: str, size: int, absent: bool) -> bool:
        """Whether a version of a structure file goes to a volume: while it is small and the
        file has no file of its own."""
        return size <= self.small and (absent or not self.files.exists(name))

    def _stage_file_version(
        self, name: str, data: bytes | None, temp: Path | None = None
    ) -> StagedFile | _Graduation:
        staged = self.files.stage(name, data, temp)
        if name in self.volumes:
            return _Graduation(staged, self.volumes, name)
        return staged

    def delete(self, name: str) -> bool:
        """Remove a file durably, as a file and from a volume; False when it was not there."""
        in_volume = self.volumes.remove(name)
        return self.files.delete(name) or in_volume

    def move_out(self, name: str, target: Path) -> None:
        """Take a file out of the store into the file `target` (quarantine), durably."""
        if self.files.exists(name):
            move_file(self.files.path_for(name), target)
            self.volumes.remove(name)
            return
        span = self.volumes.span(name)
        if span is None:
            raise FileNotFoundError(name)
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
        """Reclaim the space of removed or replaced volume entries; return how many volumes
        were rewritten."""
        return self.volumes.compact()

    def close(self) -> None:
        self.volumes.close()
