"""Files named by SHA-256 on a local directory, written so that no reader ever sees a partial file.

Layout: ``<root>/<ab>/<cd>/<name>`` where ``ab`` and ``cd`` are the name's first two hex pairs, so no
folder grows past a few thousand entries even with a billion files. Writes go to a temporary file in
``<root>/.tmp``, are fsynced and verified, then renamed into place and the folder is fsynced.
"""

import contextlib
import ctypes
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from .errors import HashMismatch
from .hashing import check_name, is_valid_name

TMP_DIR = ".tmp"


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_syncfs() -> "ctypes._NamedFuncPointer | None":
    """libc's syncfs, found among the symbols the process has loaded (libc's among them):
    `ctypes.util.find_library` would run ldconfig at every command's start to name the file."""
    func = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
    if func is not None:
        func.argtypes = [ctypes.c_int]
    return func


_SYNCFS = _load_syncfs()
HAVE_SYNCFS = _SYNCFS is not None


def sync_filesystem(fd: int) -> None:
    """Flush every write and rename on the filesystem holding `fd` (Linux syncfs).

    One call makes a whole batch of renames durable, where fsyncing each folder would cost one
    flush per file; it is how the storage node commits concurrent writes as a group.
    """
    if _SYNCFS is None:
        raise OSError("syncfs is not available on this system")
    if _SYNCFS(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"syncfs failed: {os.strerror(errno)}")


class PendingFile:
    """A file being written: hashes what it receives, and appears under its name only once placed.

    `commit()` does it all for one file. A caller that makes many files durable at once calls
    `seal(fsync=False)`, flushes the filesystem for the whole batch, then `place(sync_dir=False)`
    and flushes again: the data is durable before any name points to it.
    """

    def __init__(self, store: "FileStore", expected: str | None) -> None:
        self._store = store
        self._expected = check_name(expected) if expected is not None else None
        self._hash = hashlib.sha256()
        self.size = 0
        self.name: str | None = None
        self._placed = False
        self._temp = f"{store.tmp_location}/{secrets.token_hex(8)}.part"
        self._fd: int | None = os.open(
            self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644
        )

    @property
    def temp_path(self) -> Path:
        return Path(self._temp)

    def write(self, chunk: bytes | memoryview) -> None:
        assert self._fd is not None, "write after seal or abort"
        self._hash.update(chunk)
        view = memoryview(chunk)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.size += len(chunk)

    def seal(self, fsync: bool = True) -> str:
        """Check the hash against the expected name and close the file; aborts on a mismatch."""
        assert self._fd is not None, "seal after seal or abort"
        name = self._hash.hexdigest()
        if self._expected is not None and name != self._expected:
            self.abort()
            raise HashMismatch(f"received bytes hash to {name}, not to {self._expected}")
        fd, self._fd = self._fd, None
        try:
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.name = name
        return name

    def place(self, sync_dir: bool = True) -> None:
        """Rename the sealed file into place; with `sync_dir` False the caller flushes later."""
        assert self.name is not None and not self._placed, "place before seal, or twice"
        final = self._store.location(self.name)
        folder = os.path.dirname(final)
        try:
            os.rename(self._temp, final)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            os.rename(self._temp, final)
            if sync_dir:
                fsync_dir(Path(folder).parent)
                fsync_dir(self._store.root)
        self._placed = True
        if sync_dir:
            fsync_dir(Path(folder))

    def commit(self) -> str:
        """Verify the hash, fsync, rename into place and fsync the folder; return the name."""
        name = self.seal()
        self.place()
        return name

    def abort(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if not self._placed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temp)

    def __enter__(self) -> "PendingFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


class StagedFile:
    """A file whose name is not the hash of its bytes (a structure file), written aside and
    renamed into place. `place()` makes it durable alone; a group committer instead flushes the
    filesystem once for many staged files, then calls `place(sync_dir=False)`."""

    def __init__(
        self, store: "FileStore", name: str, data: bytes | None, temp: Path | None
    ) -> None:
        self.final = store.path_for(name)
        self.temp = temp or store.tmp_root / f"{secrets.token_hex(8)}.part"
        if data is not None:
            try:
                with open(self.temp, "wb") as out:
                    out.write(data)
            except BaseException:
                # A full disk fails the write midway: no part of the file stays.
                self.temp.unlink(missing_ok=True)
                raise

    def place(self, sync_dir: bool = True) -> None:
        try:
            if sync_dir:
                with open(self.temp, "rb+") as out:
                    os.fsync(out.fileno())
            self.final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.temp, self.final)
        finally:
            self.temp.unlink(missing_ok=True)
        if sync_dir:
            fsync_dir(self.final.parent)

    def abort(self) -> None:
        """Remove the staged file, never placed."""
        self.temp.unlink(missing_ok=True)


class FileStore:
    """One directory of SHA-256-named files (contents, or structure files)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.tmp_root = self.root / TMP_DIR
        self.tmp_root.mkdir(parents=True, exist_ok=True)
        self._base = str(self.root)
        self.tmp_location = str(self.tmp_root)

    def clean_temporaries(self) -> int:
        """Remove what an interrupted write left behind; return how many files were removed."""
        removed = 0
        for entry in os.scandir(self.tmp_root):
            os.unlink(entry.path)
            removed += 1
        return removed

    def location(self, name: str) -> str:
        """The file's path as a string: the cheap form for the request path."""
        check_name(name)
        return f"{self._base}/{name[:2]}/{name[2:4]}/{name}"

    def path_for(self, name: str) -> Path:
        return Path(self.location(name))

    def exists(self, name: str) -> bool:
        return os.path.exists(self.location(name))

    def size(self, name: str) -> int:
        return os.stat(self.location(name)).st_size

    def writer(self, expected: str | None = None) -> PendingFile:
        return PendingFile(self, expected)

    def put_bytes(self, data: bytes, expected: str | None = None) -> str:
        with self.writer(expected) as pending:
            pending.write(data)
            return pending.commit()

    def write_named(self, name: str, data: bytes) -> None:
        """Atomically create or replace a file whose name is not the hash of its bytes."""
        self.stage(name, data).place()

    def stage(self, name: str, data: bytes | None = None, temp: Path | None = None) -> "StagedFile":
        """A file for `name` written to a temporary file (or given as one), not yet in place."""
        return StagedFile(self, name, data, temp)

    def read_bytes(self, name: str) -> bytes:
        return self.path_for(name).read_bytes()

    def delete(self, name: str) -> bool:
        """Remove a file durably; False when it was not there."""
        path = self.path_for(name)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        fsync_dir(path.parent)
        return True

    def names(self) -> Iterator[str]:
        """Every stored name, by walking the fan-out folders (used to rebuild indexes)."""
        for first in sorted(os.scandir(self.root), key=lambda e: e.name):
            if first.name == TMP_DIR or not first.is_dir():
                continue
            for second in os.scandir(first.path):
                if not second.is_dir():
                    continue
                for entry in os.scandir(second.path):
                    if is_valid_name(entry.name):
                        yield entry.name
