"""The search indexer does not trust the archive. A payload that inflates to hundreds of
megabytes (in any Content-Encoding it reads) is cut at 5 MB with bounded memory, and a page
whose charset is a codec of bytes is read."""

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import brotlicffi
import pytest
import zstandard

from archive.header_block import parse_header_block
from search.extract import extract

MB = 1024 * 1024
BOMB = 64 * MB  # what each bomb inflates to


def _compressed(coding: str, size: int) -> bytes:
    """`size` zero bytes in a Content-Encoding, compressed a megabyte at a time."""
    if coding == "br":
        brotli = brotlicffi.Compressor(quality=5)
        return b"".join(brotli.process(bytes(MB)) for _ in range(size // MB)) + brotli.finish()
    if coding == "zstd":
        return zstandard.ZstdCompressor().compress(bytes(size))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    return b"".join(deflate.compress(bytes(MB)) for _ in range(size // MB)) + deflate.flush()


# Extracts a payload in a fresh process, and prints why it was left out and how much the
# process's peak memory grew meanwhile.
EXTRACT = """
import resource, sys, json
from archive.header_block import parse_header_block
from search.errors import NotIndexed
from search.extract import extract
coding, path = sys.argv[1], sys.argv[2]
header = parse_header_block(f"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nContent-Encoding: {coding}\\r\\n\\r\\n".encode())
payload = open(path, "rb").read()
plain = parse_header_block(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\n\\r\\n")
extract("http://x.test/", plain, b"<p>the modules and the language model loaded</p>")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    got = extract("http://x.test/", header, payload).text[:40]
except NotIndexed as exc:
    got = exc.reason
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps([got, grown * 1024]))
"""


def test_a_bomb_in_any_coding_is_cut_at_5_mb_in_bounded_memory(tmp_path: Path) -> None:
    for coding in ("br", "gzip", "deflate", "zstd"):
        bomb = tmp_path / f"bomb.{coding}"
        bomb.write_bytes(_compressed(coding, BOMB))
        done = subprocess.run(
            [sys.executable, "-c", EXTRACT, coding, str(bomb)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        reason, grown = json.loads(done.stdout)
        assert reason == "larger than 5 MB", (coding, reason)
        assert grown < 32 * MB, (coding, grown)
        page = b"<p>The keeper's logbook</p>"
        small = tmp_path / f"page.{coding}"
        small.write_bytes(_encoded(coding, page))
        done = subprocess.run(
            [sys.executable, "-c", EXTRACT, coding, str(small)], capture_output=True, text=True
        )
        assert json.loads(done.stdout)[0] == "The keeper's logbook", (coding, done.stdout)


@pytest.mark.parametrize("charset", ["rot13", "base64", "uu", "undefined", "idna", "punycode"])
def test_a_page_whose_charset_is_no_text_codec_is_read_as_utf8(charset: str) -> None:
    html = "<p>Le phare de l’île</p>".encode()
    said = parse_header_block(
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset={charset}\r\n\r\n".encode()
    )
    assert extract("http://x.test/", said, html).text == "Le phare de l’île"
    plain = parse_header_block(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
    meta = f'<meta charset="{charset}">'.encode() + html
    assert extract("http://x.test/", plain, meta).text == "Le phare de l’île"


def _encoded(coding: str, data: bytes) -> bytes:
    if coding == "br":
        return bytes(brotlicffi.compress(data))
    if coding == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    if coding == "gzip":
        return gzip.compress(data)
    return zlib.compress(data)
