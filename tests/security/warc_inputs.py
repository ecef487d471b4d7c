"""Hostile WARC files and header blocks, and what reading one costs.

`python -m tests.security.warc_inputs KIND SIZE FILE [memory]` writes the input KIND of about
SIZE bytes to FILE, reads it as an import does (or parses it, for a header block or a chunked
payload) and prints the CPU seconds the reading took, what was read and, with `memory`, the peak
of memory allocated meanwhile (tracing allocations slows the reading down). The tests run it in a process of its own, so that a reading that never ends is a timeout,
not a stuck test run.
"""

import gzip
import json
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

from archive.header_block import parse_header_block
from archive.warc.dechunk import Dechunker
from archive.warc.reader import Problem, SourceRecord, read_archive

DATE = "2024-05-01T00:00:00Z"


def record(url: str, body: bytes = b"body", length: int | None = None) -> bytes:
    """A resource record, its length that of `body` unless given."""
    size = len(body) if length is None else length
    head = (
        f"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: {url}\r\nWARC-Date: {DATE}\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {size}\r\n\r\n"
    )
    return head.encode() + body + b"\r\n\r\n"


def member(data: bytes) -> bytes:
    return gzip.compress(data, 1)


def inflating_to(prefix: bytes, filler: bytes, size: int) -> bytes:
    """One gzip member of `prefix` then `size` bytes of `filler`, made without holding them."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = filler * (1024 * 1024 // len(filler))
    out = [deflate.compress(prefix)]
    for _ in range(size // len(piece)):
        out.append(deflate.compress(piece))
    return b"".join(out) + deflate.flush()


FIRST, LAST = record("http://first.example/"), record("http://last.example/")


def _nested(size: int) -> bytes:
    """Record headers, each saying its record runs past the end of the file, so that each one
    found after the one before it is damaged holds all the others."""
    head = (
        f"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://nested.example/\r\n"
        f"WARC-Date: {DATE}\r\nContent-Length: 999999999\r\n\r\n"
    ).encode()
    return FIRST + head * (size // len(head))


# The WARC files, by kind: each builds a file of about `size` bytes.
FILES: dict[str, Callable[[int], bytes]] = {
    "nul-run": lambda size: FIRST + b"\0" * size,
    "nul-member": lambda size: member(FIRST) + inflating_to(FIRST, b"\0", size) + member(LAST),
    "gzip-magic-run": lambda size: member(FIRST) + b"\x1f\x8b\x08" * (size // 3) + member(LAST),
    "nested-records": _nested,
    "blank-member": lambda size: member(FIRST) + inflating_to(FIRST, b"\r\n", size) + member(LAST),
}


def read_file(path: Path) -> list[str]:
    items = []
    for item in read_archive(path, 1 << 30, path.parent):
        if isinstance(item, SourceRecord):
            item.body.discard()
            items.append(f"record {item.uri}")
        elif isinstance(item, Problem):
            items.append(f"problem {item.offset} {item.reason}")
    return items


def folded_block(size: int) -> bytes:
    """A header block of one field folded over `size` bytes of continuation lines."""
    return b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n" + b" b\r\n" * (size // 4 - 16) + b"\r\n"


def tiny_chunks(size: int) -> bytes:
    """A chunked payload of one-byte chunks."""
    return b"1\r\nx\r\n" * (size // 6) + b"0\r\n\r\n"


def reading(kind: str, size: int, path: Path) -> Callable[[], list[str]]:
    """What reading the input `kind` is: a WARC file written to `path`, read; a header block
    parsed; a chunked payload decoded in one piece."""
    if kind == "folded-block":
        block = folded_block(size)
        return lambda: [str(len(parse_header_block(block).headers))]
    if kind == "tiny-chunks":
        payload, decoder = tiny_chunks(size), Dechunker()
        return lambda: [str(len(decoder.feed(payload) + decoder.finish()))]
    path.write_bytes(FILES[kind](size))
    return lambda: read_file(path)


def main(kind: str, size: int, path: Path, memory: bool) -> None:
    read = reading(kind, size, path)
    if memory:
        tracemalloc.start()
    started = time.process_time()
    items = read()
    cpu = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1] if memory else None
    print(json.dumps({"cpu": cpu, "peak": peak, "items": items}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:] == ["memory"])
