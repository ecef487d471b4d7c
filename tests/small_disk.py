"""A small filesystem of its own (a tmpfs with a size limit), to fill up in tests of full disks.

Mounting needs root: without it, or where tmpfs cannot be mounted, the test is skipped.
"""

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

MIB = 1024 * 1024
FILLER = "filler"


@contextlib.contextmanager
def small_disk(path: Path, size: int = 40 * MIB) -> Iterator[Path]:
    """A tmpfs of `size` bytes mounted at `path` (made if needed) while the block runs; it is
    unmounted lazily after, so a process still holding files in it does not keep it mounted."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]
    mounted = subprocess.run(command, capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs at {path}: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True, check=False)


def free_space(path: Path) -> int:
    return shutil.disk_usage(path).free


def fill(path: Path, leave: int) -> None:
    """Size the filler file in `path` so that `leave` bytes of its disk stay free."""
    filler = path / FILLER
    size = filler.stat().st_size if filler.exists() else 0
    target = max(size + free_space(path) - leave, 0)
    with open(filler, "ab") as out:
        out.truncate(0)
    if target:
        fd = os.open(filler, os.O_WRONLY)
        try:
            os.posix_fallocate(fd, 0, target)
        finally:
            os.close(fd)


def unfill(path: Path) -> None:
    """Remove the filler file: the space it took returns."""
    (path / FILLER).unlink(missing_ok=True)
