"""How a re-crawl's pages differ from the previous crawl's: pages that are new, old pages whose
content changed, and the text chunks (report.py chunk_signatures) new in each kind. A change
rate made of new pages and one made of new text in old pages call for different schedules."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .order import Signature

__all__ = ["PageChanges"]

log = logging.getLogger(__name__)

CHUNKS_SUFFIX = ".chunks"
MAX_PREVIOUS_CHUNKS = 8_000_000  # signatures of the previous crawl read, at most (64 MB)
CARRY_BLOCK = 1 << 20


def usable_chunk_file(path: Path) -> bool:
    """Whether the previous crawl's chunk file can be compared with: present, whole 8-byte
    signatures, within MAX_PREVIOUS_CHUNKS; a warning when it is not."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        log.info("%s: no previous chunk signatures: %s", path, exc)
        return False
    if size % 8 or size > 8 * MAX_PREVIOUS_CHUNKS:
        log.warning("%s: %d bytes, chunk signatures not compared", path, size)
        return False
    return True


def previous_chunks(path: Path) -> "npt.NDArray[np.uint64] | None":
    """The previous crawl's distinct text-chunk signatures, sorted; None when its chunk file is
    missing, damaged or too large to read. (numpy is loaded here, once a re-crawl has text to
    compare: a site agent's first crawls, and a quick re-crawl of unchanged pages, do without
    its memory.)"""
    if not usable_chunk_file(path):
        return None
    import numpy as np

    try:
        return np.unique(np.fromfile(path, dtype="<u8"))
    except OSError as exc:
        log.info("%s: no previous chunk signatures: %s", path, exc)
        return None


@dataclass
class PageChanges:
    previous: dict[str, "Signature"]
    chunk_file: Path | None  # the previous crawl's chunk signatures; None: not compared
    new_pages: int = 0
    changed_pages: int = 0
    chunks_in_old_pages: int = 0
    chunks_in_new_pages: int = 0
    counted: set[str] = field(default_factory=set)
    # The previous crawl's chunk signatures, sorted, read when the first text is compared.
    _before: "npt.NDArray[np.uint64] | None" = field(default=None, init=False, repr=False)

    @classmethod
    def since(cls, signature_file: Path, previous: dict[str, "Signature"]) -> "PageChanges":
        """Changes against the crawl that left this signature file (and its chunk file)."""
        chunks = signature_file.with_suffix(CHUNKS_SUFFIX)
        return cls(previous, chunks if usable_chunk_file(chunks) else None)

    def carry(self, write: Callable[[bytes], object]) -> None:
        """Write the previous crawl's chunk signatures out again: a quick re-crawl's chunk file
        starts with them, as the pages it does not read still hold that text (the next crawl
        and the scheduler's change rate compare with the whole site's)."""
        if self.chunk_file is None:
            return
        try:
            previous = self.chunk_file.open("rb")
        except OSError as exc:
            log.warning(
                "%s: the previous chunk signatures are not carried: %s", self.chunk_file, exc
            )
            return
        with previous:
            while block := previous.read(CARRY_BLOCK):
                write(block)

    def page(self, url: str, content: str) -> None:
        """A page fetched with this content (SHA-256)."""
        if url in self.counted:
            return
        self.counted.add(url)
        former = self.previous.get(url)
        if former is None:
            self.new_pages += 1
        elif former.content != content:
            self.changed_pages += 1

    def text(self, url: str, signatures: list[int]) -> None:
        """The chunk signatures of a document's text: those the previous crawl lacked are new."""
        if self.chunk_file is None or not signatures:
            return
        if self._before is None:
            self._before = previous_chunks(self.chunk_file)
            if self._before is None:
                self.chunk_file = None
                return
        new = len(signatures)
        if len(self._before):
            import numpy as np

            found = np.asarray(signatures, dtype=np.uint64)
            at = np.searchsorted(self._before, found).clip(max=len(self._before) - 1)
            new = int((self._before[at] != found).sum())
        if url in self.previous:
            self.chunks_in_old_pages += new
        else:
            self.chunks_in_new_pages += new

    def to_json(self) -> dict[str, Any]:
        return {
            "new_pages": self.new_pages,
            "changed_pages": self.changed_pages,
            "removed_pages": sum(
                1 for url, s in self.previous.items() if s.page and url not in self.counted
            ),
            "new_text_chunks_in_old_pages": (
                None if self.chunk_file is None else self.chunks_in_old_pages
            ),
            "new_text_chunks_in_new_pages": (
                None if self.chunk_file is None else self.chunks_in_new_pages
            ),
        }
