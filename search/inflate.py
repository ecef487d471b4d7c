"""A payload's Content-Encoding undone with a cap on what it gives: a few hundred bytes of Brotli,
or a few kilobytes of gzip or zstd, inflate to gigabytes (a "bomb"). Each decoder is run with a
bound on its output, so a payload that inflates past the cap is never made whole: it stops there.
"""

import zlib

import brotlicffi
import zstandard

from .errors import NotIndexed

# A zstd frame names the window its decoder must keep; HTTP's zstd coding keeps it to 8 MiB
# (RFC 9659), and a frame that asks for more is refused rather than given the memory.
ZSTD_MAX_WINDOW = 8 * 1024 * 1024
CODINGS = ("gzip", "x-gzip", "deflate", "br", "zstd")


class TooLarge(Exception):
    """A payload that inflates past the cap."""


def inflate(coding: str, payload: bytes, cap: int) -> bytes:
    """`payload` without its Content-Encoding `coding` (lowercased; identity or empty for none),
    at most `cap` bytes of it: TooLarge when it inflates past, NotIndexed when it is damaged or
    in a coding not read."""
    if coding in ("identity", "") or not payload:  # an empty body says nothing in any coding
        return payload
    if coding not in CODINGS:
        raise NotIndexed("unknown Content-Encoding", coding[:40])
    try:
        if coding == "br":
            inflated = _brotli(payload, cap)
        elif coding == "zstd":
            inflated = _zstd(payload, cap)
        elif coding == "deflate":
            try:  # as sent by most servers: zlib's wrapper
                inflated = zlib.decompressobj().decompress(payload, cap + 1)
            except zlib.error:  # as some send it: the raw stream
                inflated = zlib.decompressobj(-zlib.MAX_WBITS).decompress(payload, cap + 1)
        else:
            inflated = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(payload, cap + 1)
    except (zlib.error, brotlicffi.error, zstandard.ZstdError) as exc:
        raise NotIndexed("undecodable Content-Encoding", f"{coding}: {exc}"[:200]) from None
    if len(inflated) > cap:
        raise TooLarge(f"inflates past {cap:,} bytes")
    return inflated


def _brotli(payload: bytes, cap: int) -> bytes:
    decoder = brotlicffi.Decompressor()
    inflated: bytes = decoder.process(payload, output_buffer_limit=cap + 1)
    if len(inflated) <= cap and not decoder.is_finished():
        raise brotlicffi.error("the stream ends before its last block")
    return inflated


def _zstd(payload: bytes, cap: int) -> bytes:
    decoder = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    reader = decoder.stream_reader(payload, read_across_frames=True)
    parts: list[bytes] = []
    size = 0
    while size <= cap:
        part = reader.read(cap + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)
