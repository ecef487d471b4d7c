"""Packs: many small contents in one HTTP exchange, both ways.

Thousands of 4 KB files sent one request each spend most of their time on HTTP. A pack is one
stream of frames: the 32-byte SHA-256 of a content, its length as 8 bytes big-endian, then its
bytes. A node copying from another POSTs a list of names to `/contents/pack` and reads a pack
back; a name the node does not hold comes back with the length MISSING and no bytes, one larger
than MAX_PACKED with TOO_LARGE (the copier fetches it alone). A client storing many contents
POSTs a pack to `/contents`. The receiver verifies every hash.
"""

import struct
from collections.abc import AsyncIterator, Container, Iterable, Iterator

import aiohttp
import aiohttp.abc
import aiohttp.payload

from .errors import DlwebError

MAX_NAMES = 1_000
MAX_PACKED = 1024 * 1024
MISSING = 2**64 - 1
TOO_LARGE = 2**64 - 2
_HEAD = struct.Struct(">32sQ")
FLUSH_AT = 256 * 1024
MAX_UPLOAD = 64 * 1024 * 1024
_UNSENT = {MISSING: "not held by the source", TOO_LARGE: "too large to pack"}


class BadPack(DlwebError):
    """A pack stream that ends early or announces an impossible length."""


def encode_frame(name: str, data: bytes) -> bytes:
    return _head(name, len(data)) + data


def unsent_frame(name: str, why: int) -> bytes:
    """The frame of a content that is not sent: MISSING or TOO_LARGE."""
    return _head(name, why)


def _head(name: str, length: int) -> bytes:
    return _HEAD.pack(bytes.fromhex(name), length)


def writes(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """Pieces of a pack gathered into writes of about FLUSH_AT bytes: few writes, and no copy of
    the whole pack (a pack of 1,000 contents joined into one buffer is copied at every step)."""
    group: list[bytes] = []
    held = 0
    for piece in pieces:
        group.append(piece)
        held += len(piece)
        if held >= FLUSH_AT:
            yield b"".join(group)
            group, held = [], 0
    if group:
        yield b"".join(group)


class Upload(aiohttp.payload.Payload):
    """A pack of (name, bytes) to POST to `/contents`, written as it is framed."""

    def __init__(self, items: list[tuple[str, bytes]]) -> None:
        super().__init__(items, content_type="application/x-dlweb-pack")
        self._size = sum(_HEAD.size + len(data) for _, data in items)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        raise TypeError("a pack is binary")

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:
        for chunk in writes(self._pieces()):
            await writer.write(chunk)

    def _pieces(self) -> Iterator[bytes]:
        for name, data in self._value:
            yield _head(name, len(data))
            yield data


class _Frames:
    """Frames cut out of a pack as its bytes arrive, in whatever pieces the network gives: one
    await a piece rather than two a frame, and each byte copied about once."""

    def __init__(self, bodiless: Container[int] = ()) -> None:
        self.bodiless = bodiless  # lengths that stand for a content not sent, with no bytes
        self.given = 0
        self._data = b""
        self._at = 0
        self._more: list[bytes] = []
        self._held = 0  # bytes received and not cut out yet
        self._need = _HEAD.size
        self._head: tuple[bytes, int] | None = None

    def feed(self, piece: bytes) -> list[tuple[bytes, int, bytes | None]]:
        """The (SHA-256, length, bytes or None) of each frame `piece` completes."""
        self._more.append(piece)
        self._held += len(piece)
        if self._held < self._need:
            return []
        rest = [self._data[self._at :]] if self._at < len(self._data) else []
        pieces = rest + self._more
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        at = 0
        frames: list[tuple[bytes, int, bytes | None]] = []
        while True:
            if self._head is None:
                if len(data) - at < _HEAD.size:
                    self._need = _HEAD.size
                    break
                digest, length = _HEAD.unpack_from(data, at)
                at += _HEAD.size
                if length in self.bodiless:
                    frames.append((digest, length, None))
                    self.given += 1
                    continue
                if length > MAX_PACKED:
                    raise BadPack(
                        f"frame {self.given} announces {length} bytes, more than {MAX_PACKED}"
                    )
                self._head = digest, length
            digest, length = self._head
            if len(data) - at < length:
                self._need = length
                break
            frames.append((digest, length, data[at : at + length]))
            at += length
            self._head = None
            self.given += 1
        self._data, self._at, self._more, self._held = data, at, [], len(data) - at
        return frames

    def finish(self) -> None:
        """Raise if the stream ended inside a frame."""
        if self._held or self._head is not None:
            raise BadPack(f"pack ends inside frame {self.given}")


async def read_upload(
    stream: aiohttp.StreamReader, max_frames: int = MAX_NAMES, max_bytes: int = MAX_UPLOAD
) -> AsyncIterator[tuple[str, bytes]]:
    """The (name, bytes) of each frame of an uploaded pack, until the stream ends."""
    frames = _Frames()
    count = total = 0
    async for piece in stream.iter_any():
        for digest, length, data in frames.feed(piece):
            count += 1
            if count > max_frames:
                raise BadPack(f"a pack holds at most {max_frames} contents")
            total += length
            if total > max_bytes:
                raise BadPack(f"a pack holds at most {max_bytes} bytes of contents")
            assert data is not None
            yield digest.hex(), data
    frames.finish()


async def read_frames(
    stream: aiohttp.StreamReader, names: list[str]
) -> AsyncIterator[tuple[str, bytes | None, str | None]]:
    """(name, bytes, None) for each content sent, or (name, None, why) for one that was not."""
    frames = _Frames(bodiless=_UNSENT)
    due = iter(names)
    try:
        async for piece in stream.iter_any():
            for digest, length, data in frames.feed(piece):
                name, expected = digest.hex(), next(due, None)
                if expected is None:
                    raise BadPack(f"pack stream sent {name} after the {len(names)} asked for")
                if name != expected:
                    raise BadPack(f"pack stream sent {name} where {expected} was due")
                yield name, data, None if data is not None else _UNSENT[length]
            if frames.given == len(names):
                return
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise BadPack(f"pack stream ended early: {exc}") from None
    frames.finish()
    raise BadPack(f"pack stream ended early: {frames.given} of {len(names)} contents came")
