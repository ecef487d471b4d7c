"""Content addressing: SHA-256 names and their validation."""

import hashlib
import re
from collections.abc import AsyncIterable, Iterable

from .errors import BadName, HashMismatch

NAME_LENGTH = 64
_NAME_RE = re.compile(r"[0-9a-f]{64}")


def is_valid_name(name: str) -> bool:
    """True when `name` is exactly 64 lowercase hex digits and nothing else."""
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


def check_name(name: str) -> str:
    """Return `name` unchanged, or raise BadName before it can reach a filesystem call."""
    if not is_valid_name(name):
        shown = repr(name[:80]) if isinstance(name, str) else type(name).__name__
        raise BadName(f"file name {shown} is not 64 lowercase hex digits")
    return name


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_of_chunks(chunks: Iterable[bytes]) -> str:
    """SHA-256 of a stream, keeping memory flat."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


async def sha256_of_async_chunks(chunks: AsyncIterable[bytes]) -> str:
    h = hashlib.sha256()
    async for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


class VerifyingRelay:
    """Checks a content's bytes against its name as they pass, one piece behind: each piece is
    given on when the next arrives, and the last only once the whole hashes to the name, so a
    reader of a damaged copy never receives all of it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._digest = hashlib.sha256()
        self._held = b""

    def feed(self, piece: bytes) -> bytes:
        """Take a piece; give the one before it."""
        self._digest.update(piece)
        given, self._held = self._held, piece
        return given

    def finish(self) -> bytes:
        """The last piece, when every byte hashes to the name; HashMismatch otherwise."""
        actual = self._digest.hexdigest()
        if actual != self.name:
            raise HashMismatch(f"content {self.name}: the bytes hash to {actual}")
        given, self._held = self._held, b""
        return given
