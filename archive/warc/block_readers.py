"""Readers of a record's block, one concern each, that wrap one another as warcio's LimitReader
and DigestVerifyingReader do: counting the bytes, hashing them, giving back bytes read ahead,
removing chunked encoding. Each reads the one it wraps only when it is read, in the pieces it is
asked for, so a block of any size passes through them in pieces and memory stays flat.
"""

from typing import Protocol

from .dechunk import Dechunker
from .digests import Digest


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class _Empty:
    """A stream at its end."""

    __slots__ = ()

    def read(self, size: int, /) -> bytes:
        return b""


EMPTY = _Empty()


class CountingReader:
    """How many bytes a stream gave, so that a block shorter than its Content-Length is told."""

    __slots__ = ("_stream", "count")

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self.count = 0

    def read(self, size: int, /) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        return data


class DigestingReader:
    """The bytes read through it hashed with the algorithm of the digest declared for them, to
    be checked against it once read."""

    __slots__ = ("_stream", "_digest", "_hash")

    def __init__(self, stream: Readable, digest: Digest) -> None:
        self._stream = stream
        self._digest = digest
        self._hash = digest.hasher()

    def read(self, size: int, /) -> bytes:
        data = self._stream.read(size)
        self._hash.update(data)
        return data

    def matches(self) -> bool:
        """Whether the bytes read have the digest declared."""
        return self._hash.digest() == self._digest.value


def digesting(stream: Readable, digest: Digest | None) -> tuple[Readable, DigestingReader | None]:
    """The stream to read on, hashed for `digest` when one is declared, and the reader whose
    digest to check then (None when none is: nothing is hashed, and no reader added)."""
    if digest is None:
        return stream, None
    reader = DigestingReader(stream, digest)
    return reader, reader


class PrefixedReader:
    """Bytes read ahead of need (what followed an HTTP header block in the piece it ended in)
    given back first, then the rest of the stream."""

    __slots__ = ("_first", "_stream")

    def __init__(self, first: bytes, stream: Readable) -> None:
        self._first = first
        self._stream = stream

    def read(self, size: int, /) -> bytes:
        first = self._first
        if not first:
            return self._stream.read(size)
        if len(first) <= size:
            self._first = b""
            return first
        self._first = first[size:]
        return first[:size]


class DechunkingReader:
    """The stream with its chunked transfer encoding removed (warc/dechunk.py). Every byte of
    the stream is read, those after the last chunk too, so that the readers it wraps see the
    whole block; a piece may come out larger than the one asked for when the stream turns out
    never to have been chunked."""

    __slots__ = ("_stream", "_dechunker", "_ended")

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self._dechunker = Dechunker()
        self._ended = False

    def read(self, size: int, /) -> bytes:
        while not self._ended:
            data = self._stream.read(size)
            if not data:
                self._ended = True
                return self._dechunker.finish()
            decoded = self._dechunker.feed(data)
            if decoded:
                return decoded
        return b""

    @property
    def broken(self) -> bool:
        """Whether the stream, read to its end, stopped in the middle of a chunk."""
        return self._dechunker.broken


def drain(stream: Readable, size: int) -> None:
    """Read `stream` to its end for what reading it does (counting, hashing), keeping nothing."""
    while stream.read(size):
        pass
