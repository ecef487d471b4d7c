"""The space a storage node keeps free: writes stop at a reserve, before the disk is full.

A disk filled to its last block fails writes midway, the node's own logs with them. So a node
refuses a new file (a content, a structure file created, a copy the master orders) that would
take its free space under the reserve, before writing any of it, with 507 Insufficient Storage
naming both; and it tells the master, which stops placing files on it until space returns. The
lower half of the reserve is kept for the files it holds: appends to its structure files (an
index node appends to the active copy wherever it is) and refreshed copies of them go on until
free space falls under half the reserve. A write the disk still fails (ENOSPC) is refused the
same way, after what it had written is removed.
"""

import asyncio
import contextlib
import errno
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from archive.errors import InsufficientStorage

DEFAULT_BYTES = 64 * 1024 * 1024
DEFAULT_PERCENT = 1.0
MAX_PERCENT = 50.0
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class Reserve:
    """Free space a node keeps: the larger of a size and a share of its disk."""

    size: int = DEFAULT_BYTES
    percent: float = DEFAULT_PERCENT

    def of(self, total: int) -> int:
        return max(self.size, int(total * self.percent / 100))


DEFAULT_RESERVE = Reserve()


def parse_reserve(text: str) -> Reserve:
    """A reserve given as a size (`0`, `500M`, `2G`) or a share of the disk (`5%`)."""
    if match := _PERCENT.fullmatch(text.strip()):
        percent = float(match[1])
        if percent > MAX_PERCENT:
            raise ValueError(f"{text!r}: a reserve of more than {MAX_PERCENT:g}% of the disk")
        return Reserve(0, percent)
    if match := _SIZE.fullmatch(text.strip()):
        return Reserve(int(match[1]) * _UNITS[match[2].lower()], 0.0)
    raise ValueError(f"{text[:100]!r} is not a size such as 0, 500M or 2G, nor a share such as 5%")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def _is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS


class Space:
    """Free space of a node's disk against its reserve, with the bytes of writes under way."""

    def __init__(self, root: Path, reserve: Reserve = DEFAULT_RESERVE) -> None:
        self.root = root
        self.reserve = reserve
        # Bytes announced by writes that have not written them yet (packs, creates).
        self.incoming = 0
        self.refused = 0
        self._full = False
        # Set when the node turns full or has room again, so the master hears of it at once.
        self.changed = asyncio.Event()

    def usage(self) -> tuple[int, int]:
        """Free and total bytes of the disk."""
        usage = shutil.disk_usage(self.root)
        return usage.free, usage.total

    def state(self) -> tuple[int, int, int]:
        """Free bytes (less those announced), total bytes and the reserve in bytes; notes
        whether the node is full now."""
        free, total = self.usage()
        free -= self.incoming
        reserve = self.reserve.of(total)
        full = free < reserve
        if full != self._full:
            self._full = full
            self.changed.set()
        return free, total, reserve

    def check(self, size: int, held: bool = False) -> None:
        """InsufficientStorage when writing `size` more bytes would take the free space under
        the reserve (half of it for a file already `held`)."""
        free, total, reserve = self.state()
        floor = reserve // 2 if held else reserve
        if free - size < floor:
            self.refused += 1
            what = "changes of files held" if held else "new files"
            more = f" ({_mib(size)} more)" if size else ""
            raise InsufficientStorage(
                f"disk full: {_mib(max(free, 0))} free of {_mib(total)}, reserve {_mib(reserve)}"
                f"; {what}{more} are refused until space returns"
            )

    @contextlib.contextmanager
    def writing(self, size: int, held: bool = False) -> Iterator[None]:
        """Around a write of `size` bytes: checked first, counted as announced while it runs,
        and refused the same way if the disk fails it for lack of space."""
        self.check(size, held)
        self.incoming += size
        try:
            yield
        except OSError as exc:
            if not _is_disk_full(exc):
                raise
            self.refused += 1
            free, total = self.usage()
            raise InsufficientStorage(
                f"disk full: the write failed ({exc.strerror or exc}) with {_mib(free)} free of"
                f" {_mib(total)}, reserve {_mib(self.reserve.of(total))}; nothing of it was kept"
            ) from None
        finally:
            self.incoming -= size

    def to_json(self) -> dict[str, object]:
        free, total, reserve = self.state()
        return {
            "free": free + self.incoming,
            "total": total,
            "reserve": reserve,
            "full": free < reserve,
            "refused": self.refused,
        }
