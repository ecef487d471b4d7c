"""Packs: many small contents in one HTTP exchange, both ways.

Thousands of 4 KB files sent one request each spend most of their time on HTTP. A pack is one
stream of frames: the 32-byte SHA-256 of a content, its length as 8 bytes big-endian, then its
bytes. A node copying from another POSTs a list of names to `/contents/pack` and reads a pack
back; a name the node does not hold comes back with the length MISSING and no bytes, one larger
than MAX_PACKED with TOO_LARGE (the copier fetches it alone). A client storing many contents
POSTs a pack to `/contents`. The receiver verifies every hash, and passes the pack on to the next
node of its chain in the pieces it arrived in (`Relay`), with no framing or copy made again.
"""

import struct
from collections.abc import AsyncIterator, Container, Iterable, Iterator, Sequence

import aiohttp
import aiohttp.abc
import aiohttp.payload

from .errors import ClientFault
from .network import NETWORK_ERRORS

MAX_NAMES = 1_000
MAX_PACKED = 1024 * 1024
MISSING = 2**64 - 1
TOO_LARGE = 2**64 - 2
_HEAD = struct.Struct(">32sQ")
FLUSH_AT = 256 * 1024
MAX_UPLOAD = 64 * 1024 * 1024
# Why a content was not sent; a fetch failing for want of a copy at its source says this.
NOT_HELD = "not held by the source"
_UNSENT = {MISSING: NOT_HELD, TOO_LARGE: "too large to pack"}


class BadPack(ClientFault):
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

    def __init__(self, items: Sequence[tuple[str, bytes | memoryview]]) -> None:
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


class Relay(aiohttp.payload.Payload):
    """A pack received, passed on in the pieces it arrived in: they are written as they are,
    where framing it again from its contents joined every byte into new buffers."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        super().__init__(pieces, content_type="application/x-dlweb-pack")
        self._size = sum(len(piece) for piece in pieces)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        raise TypeError("a pack is binary")

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:
        for piece in self._value:
            await writer.write(piece)


Frame = tuple[bytes, int, memoryview | None]  # SHA-256, length, the bytes (None: not sent)


class _Frames:
    """Frames cut out of a pack as its bytes arrive, in whatever pieces the network gives.

    A frame's bytes are a view of the piece that holds them, not a copy; only a head or a body
    that spans pieces is joined. (Joining each piece to what was left of the last one, then
    slicing each frame out, copied every byte received twice.)
    """

    def __init__(self, bodiless: Container[int] = ()) -> None:
        self.bodiless = bodiless  # lengths that stand for a content not sent, with no bytes
        self.given = 0
        self._need = _HEAD.size  # bytes of the head, or of the body, not received yet
        self._head: tuple[bytes, int] | None = None
        # The part received of a head or a body split across pieces, and its size.
        self._parts: list[memoryview] = []
        self._held = 0

    def feed(self, piece: bytes) -> list[Frame]:
        """The frames `piece` completes."""
        frames: list[Frame] = []
        view = memoryview(piece)
        while view:
            if self._held or len(view) < self._need:
                take = self._need - self._held
                self._parts.append(view[:take])
                self._held += len(self._parts[-1])
                view = view[take:]
                if self._held < self._need:
                    break
                whole = memoryview(b"".join(self._parts))
                self._parts, self._held = [], 0
            else:
                whole, view = view[: self._need], view[self._need :]
            self._cut(whole, frames)
        return frames

    def _cut(self, whole: memoryview, frames: list[Frame]) -> None:
        """Take a whole head or body: a head announces the body to come (none, for a content
        not sent or an empty one), a body ends its frame."""
        if self._head is not None:
            frames.append((*self._head, whole))
            self._head, self._need = None, _HEAD.size
            self.given += 1
            return
        digest, length = _HEAD.unpack(whole)
        if length in self.bodiless or length == 0:
            frames.append((digest, length, None if length else memoryview(b"")))
            self.given += 1
            return
        if length > MAX_PACKED:
            raise BadPack(f"frame {self.given} announces {length} bytes, more than {MAX_PACKED}")
        self._head, self._need = (digest, length), length

    def finish(self) -> None:
        """Raise if the stream ended inside a frame."""
        if self._held or self._head is not None:
            raise BadPack(f"pack ends inside frame {self.given}")


async def read_upload(
    stream: aiohttp.StreamReader,
    max_frames: int = MAX_NAMES,
    max_bytes: int = MAX_UPLOAD,
    pieces: list[bytes] | None = None,
) -> AsyncIterator[tuple[str, memoryview]]:
    """The (name, bytes) of each frame of an uploaded pack, until the stream ends: views of the
    pieces received, which the node hashes and writes without copying them first. The pieces are
    taken as the connection gave them (`iter_any` joins those waiting into one new buffer), and
    added to `pieces` when given, for a `Relay`."""
    frames = _Frames()
    count = total = 0
    async for piece, _ in stream.iter_chunks():
        if pieces is not None:
            pieces.append(piece)
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
                if data is None:
                    yield name, None, _UNSENT[length]
                else:
                    yield name, bytes(data), None
            if frames.given == len(names):
                return
    except NETWORK_ERRORS as exc:
        raise BadPack(f"pack stream ended early: {exc}") from None
    frames.finish()
    raise BadPack(f"pack stream ended early: {frames.given} of {len(names)} contents came")
