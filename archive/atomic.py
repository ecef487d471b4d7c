"""Files that appear whole or not at all: written beside their place, fsynced, renamed. Like
every file `tempfile` makes, they are readable by their owner only, but those made for others to
read (`shared`: an export, an index's marker), which get the permissions the umask leaves."""

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .store import fsync_dir


class AtomicFile:
    """A file written beside `path` that takes its place on `commit()` or leaves nothing on
    `abandon()`: for a file written over a longer time than one block (as a crawl goes). While
    it is written a shared file is named `.NAME.XXXXXXXX.part`, as a download is, others
    `.NAME.XXXXXXXX.tmp`."""

    def __init__(self, path: Path, shared: bool = False) -> None:
        self.path = path
        fd, self.temp = _create_beside(path, shared)
        self.out: BinaryIO = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        self.out.write(data)

    def commit(self, replace: bool = True) -> None:
        """Fsync, rename into place and fsync the folder, so that no crash leaves a part of it
        there; `replace` False refuses (FileExistsError) to take the place of a file."""
        try:
            self.out.flush()
            os.fsync(self.out.fileno())
            self.out.close()
            if replace:
                os.replace(self.temp, self.path)
            else:
                os.link(self.temp, self.path)
                self.temp.unlink()
        except BaseException:
            self.abandon()
            raise
        fsync_dir(self.path.parent)

    def abandon(self) -> None:
        self.out.close()
        self.temp.unlink(missing_ok=True)


def _create_beside(path: Path, shared: bool) -> tuple[int, Path]:
    """A new file in `path`'s folder under a name no other file has, as `tempfile` makes one."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    mode, suffix = (0o666, ".part") if shared else (0o600, ".tmp")
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{suffix}")
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue


@contextmanager
def atomic_file(path: Path, replace: bool = True, shared: bool = False) -> Iterator[BinaryIO]:
    """A file to write that takes `path`'s place only when the block ends without an error
    (fsynced, renamed, the folder fsynced); after an error nothing of it remains."""
    pending = AtomicFile(path, shared)
    try:
        yield pending.out
    except BaseException:
        pending.abandon()
        raise
    pending.commit(replace)


def atomic_write(path: Path, data: bytes, replace: bool = True, shared: bool = False) -> None:
    """Write a whole state file so that a crash leaves the old one or the new, never a part."""
    with atomic_file(path, replace, shared) as out:
        out.write(data)
