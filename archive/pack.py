"""Packs: many small contents in one HTTP exchange, both ways.

Thousands of 4 KB files sent one request each spend most of their time on HTTP. A pack is one
stream of frames: the 32-byte SHA-256 of a content, its length as 8 bytes big-endian, then its
bytes. A node copying from another POSTs a list of names to `/contents/pack` and reads a pack
back; a name the node does not hold comes back with the length MISSING and no bytes, one larger
than MAX_PACKED with TOO_LARGE (the copier fetches it alone). A client storing many contents
POSTs a pack to `/contents`. The receiver verifies every hash.
"""

import asyncio
import struct
from collections.abc import AsyncIterator, Iterable, Iterator

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


async def read_upload(
    stream: aiohttp.StreamReader, max_frames: int = MAX_NAMES, max_bytes: int = MAX_UPLOAD
) -> AsyncIterator[tuple[str, bytes]]:
    """The (name, bytes) of each frame of an uploaded pack, until the stream ends."""
    total = 0
    for index in range(max_frames + 1):
        head = await stream.read(_HEAD.size) if not stream.at_eof() else b""
        if not head:
            return
        if index == max_frames:
            raise BadPack(f"a pack holds at most {max_frames} contents")
        try:
            if len(head) < _HEAD.size:
                head += await stream.readexactly(_HEAD.size - len(head))
            digest, length = _HEAD.unpack(head)
            if length > MAX_PACKED:
                raise BadPack(f"frame {index} announces {length} bytes, more than {MAX_PACKED}")
            total += length
            if total > max_bytes:
                raise BadPack(f"a pack holds at most {max_bytes} bytes of contents")
            yield digest.hex(), await stream.readexactly(length)
        except asyncio.IncompleteReadError:
            raise BadPack(f"pack ends inside frame {index}") from None


async def read_frames(
    stream: aiohttp.StreamReader, names: list[str]
) -> AsyncIterator[tuple[str, bytes | None, str | None]]:
    """(name, bytes, None) for each content sent, or (name, None, why) for one that was not."""
    for expected in names:
        try:
            digest, length = _HEAD.unpack(await stream.readexactly(_HEAD.size))
        except Exception as exc:  # readexactly raises IncompleteReadError and client errors
            raise BadPack(f"pack stream ended early: {exc}") from None
        name = digest.hex()
        if name != expected:
            raise BadPack(f"pack stream sent {name} where {expected} was due")
        if length == MISSING:
            yield name, None, "not held by the source"
        elif length == TOO_LARGE:
            yield name, None, "too large to pack"
        elif length > MAX_PACKED:
            raise BadPack(f"pack stream announces {length} bytes for {name}")
        else:
            yield name, await stream.readexactly(length), None
