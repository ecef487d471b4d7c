"""A record's body while it is read: hashed as it arrives, in memory or, when large, on disk.

An import holds the bodies of one batch until the cluster has stored them; a spool keeps memory
flat whatever the size of the records by moving a body past SPOOL_IN_MEMORY to a file.
"""

import hashlib
import os
import tempfile
from pathlib import Path

SPOOL_IN_MEMORY = 4 * 1024 * 1024


class Spool:
    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._hash = hashlib.sha256()
        # The pieces as read: a body read in one piece is kept without a copy.
        self._pieces: list[bytes] = []
        self._fd: int | None = None
        self._path: Path | None = None
        self.size = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._hash.update(data)
        self.size += len(data)
        if self._fd is not None:
            _write_all(self._fd, data)
            return
        self._pieces.append(data)
        if self.size > SPOOL_IN_MEMORY:
            self._fd, name = tempfile.mkstemp(dir=self._directory, prefix="body-", suffix=".part")
            self._path = Path(name)
            for piece in self._pieces:
                _write_all(self._fd, piece)
            self._pieces = []

    @property
    def name(self) -> str:
        """The SHA-256 of what was written: the content's name."""
        return self._hash.hexdigest()

    def body(self) -> bytes | Path:
        """The bytes, or the path of the file holding them."""
        if self._path is None:
            if len(self._pieces) > 1:
                self._pieces = [b"".join(self._pieces)]
            return self._pieces[0] if self._pieces else b""
        return self._path

    def discard(self) -> None:
        """Free the memory or remove the file."""
        self._pieces = []
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
