"""Files that appear whole or not at all: written beside their place, fsynced, renamed. Like
every file `tempfile` makes, they are readable by their owner only."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .store import fsync_dir


class AtomicFile:
    """A file written beside `path` that takes its place on `commit()` or leaves nothing on
    `abandon()`: for a file written over a longer time than one block (as a crawl goes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self.temp = Path(temp_name)
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


@contextmanager
def atomic_file(path: Path, replace: bool = True) -> Iterator[BinaryIO]:
    """A file to write that takes `path`'s place only when the block ends without an error
    (fsynced, renamed, the folder fsynced); after an error nothing of it remains."""
    pending = AtomicFile(path)
    try:
        yield pending.out
    except BaseException:
        pending.abandon()
        raise
    pending.commit(replace)


def atomic_write(path: Path, data: bytes, replace: bool = True) -> None:
    """Write a whole state file so that a crash leaves the old one or the new, never a part."""
    with atomic_file(path, replace) as out:
        out.write(data)
