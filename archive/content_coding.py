"""A payload's Content-Encoding undone with a cap on what it gives.

A few hundred bytes of Brotli, or a few kilobytes of gzip or zstd, inflate to gigabytes (a
"bomb"), and archived payloads are kept as their servers sent them, coding and all. Every reader
of a payload's text (the harbors' text and links, the banner, the search indexer) undoes the
coding here, each decoder run with a bound on its output, so a payload that inflates past the
cap is never made whole: it stops there.
"""

import zlib

import brotlicffi
import zstandard

from .errors import DlwebError

# A zstd frame names the window its decoder must keep; HTTP's zstd coding keeps it to 8 MiB
# (RFC 9659), and a frame that asks for more is refused rather than given the memory.
ZSTD_MAX_WINDOW = 8 * 1024 * 1024
CODINGS = ("gzip", "x-gzip", "deflate", "br", "zstd")


class BadCoding(DlwebError):
    """A payload whose coding is damaged, or is one not read here."""


class TooLarge(DlwebError):
    """A payload that inflates past the cap."""


def inflate(coding: str, payload: bytes, cap: int, whole: bool = True, cut: bool = False) -> bytes:
    """`payload` without its Content-Encoding `coding` (identity or empty for none), at most
    `cap` bytes of it: TooLarge when it inflates past (with `cut`, its first `cap` bytes
    instead: a crawler reads that much of a page for its links), BadCoding when it is damaged,
    cut short (unless not `whole`: what it gives is then taken) or in a coding not read."""
    coding = coding.strip().lower()
    if coding in ("identity", ""):
        if len(payload) > cap and not cut:
            raise TooLarge(f"the payload is larger than {cap:,} bytes")
        return payload[:cap]
    if coding not in CODINGS:
        raise BadCoding(f"the payload is {coding[:40]}-encoded, which is not read here")
    try:
        if coding == "br":
            inflated, ended = _brotli(payload, cap)
        elif coding == "zstd":
            inflated = _zstd(payload, cap)
            ended = bool(inflated) or not payload
        else:
            inflated, ended = _zlib(coding, payload, cap)
    except (zlib.error, brotlicffi.error, zstandard.ZstdError) as exc:
        raise BadCoding(f"the payload is not valid {coding}: {str(exc)[:200]}") from None
    if len(inflated) > cap:
        if cut:
            return inflated[:cap]
        raise TooLarge(f"the payload inflates past {cap:,} bytes")
    if whole and not ended:
        raise BadCoding(f"the payload is not valid {coding}: it ends before its stream does")
    return inflated


def _zlib(coding: str, payload: bytes, cap: int) -> tuple[bytes, bool]:
    """gzip, or deflate in zlib's wrapper as most servers send it, else raw as some do; and
    whether its stream ended."""
    if coding == "deflate":
        try:
            decoder = zlib.decompressobj()
            return decoder.decompress(payload, cap + 1), decoder.eof
        except zlib.error:
            decoder = zlib.decompressobj(-zlib.MAX_WBITS)
    else:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    return decoder.decompress(payload, cap + 1), decoder.eof


def _brotli(payload: bytes, cap: int) -> tuple[bytes, bool]:
    decoder = brotlicffi.Decompressor()
    inflated: bytes = decoder.process(payload, output_buffer_limit=cap + 1)
    return inflated, decoder.is_finished()


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
