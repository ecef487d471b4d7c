"""Many small contents in one HTTP exchange, for copies between nodes.

A node copying thousands of 4 KB files from another would spend most of its time on HTTP
requests. Instead it POSTs a list of names to `/contents/pack` and reads back one stream of
frames: the 32-byte SHA-256 of a content, its length as 8 bytes big-endian, then its bytes. A name
the node does not hold comes back with the length MISSING and no bytes; one larger than
MAX_PACKED with TOO_LARGE (the copier fetches it alone). The receiver verifies every hash.
"""

import os
import struct
from collections.abc import AsyncIterator

import aiohttp

from archive.errors import DlwebError

MAX_NAMES = 1_000
MAX_PACKED = 1024 * 1024
MISSING = 2**64 - 1
TOO_LARGE = 2**64 - 2
_HEAD = struct.Struct(">32sQ")
FLUSH_AT = 256 * 1024


class BadPack(DlwebError):
    """A pack stream that ends early or announces an impossible length."""


def frame(name: str, location: str) -> bytes:
    """The frame of one content held at location (or MISSING, TOO_LARGE)."""
    digest = bytes.fromhex(name)
    try:
        fd = os.open(location, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return _HEAD.pack(digest, MISSING)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_PACKED:
            return _HEAD.pack(digest, TOO_LARGE)
        data = os.read(fd, size)
    finally:
        os.close(fd)
    return _HEAD.pack(digest, len(data)) + data


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
