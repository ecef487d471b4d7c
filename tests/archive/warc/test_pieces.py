"""The small parts of WARC reading: chunked decoding, digest fields, kept fields."""

import base64
import hashlib

import pytest

from archive.warc.dechunk import Dechunker
from archive.warc.digests import Digest, parse_digest
from archive.warc.reader import kept_fields, split_kept

CHUNKED = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"


def decode(data: bytes, step: int) -> tuple[bytes, Dechunker]:
    dechunker = Dechunker()
    pieces = [dechunker.feed(data[i : i + step]) for i in range(0, len(data), step)]
    return b"".join(pieces) + dechunker.finish(), dechunker


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_chunked_payloads_decode_however_they_arrive(step: int):
    decoded, dechunker = decode(CHUNKED, step)
    assert decoded == b"hello, world"
    assert dechunker.raw is False and not dechunker.broken


def test_a_payload_that_was_never_chunked_passes_unchanged():
    body = b"<html>not chunked at all</html>\n" * 3
    decoded, dechunker = decode(body, 5)
    assert decoded == body and dechunker.raw


def test_a_chunked_payload_cut_short_is_kept_and_marked_broken():
    decoded, dechunker = decode(CHUNKED[:12], 4)
    assert decoded == b"hello"
    assert dechunker.broken


def test_digest_fields_in_every_spelling():
    raw = hashlib.sha1(b"payload").digest()
    b32 = base64.b32encode(raw).decode()
    expected = Digest("sha1", raw)
    assert parse_digest(f"sha1:{b32}") == expected
    assert parse_digest(f"SHA-1:{b32.lower().rstrip('=')}") == expected
    assert parse_digest(f"sha1:{raw.hex()}") == expected
    assert parse_digest(f"sha1:{base64.b64encode(raw).decode()}") == expected
    sha256 = hashlib.sha256(b"payload").digest()
    assert parse_digest(f"sha256:{sha256.hex()}") == Digest("sha256", sha256)
    assert parse_digest("whirlpool:abc") is None and parse_digest(None) is None
    with pytest.raises(ValueError, match="not a sha1 value"):
        parse_digest("sha1:not-a-digest")


def test_the_common_sha1_spelling_reads_as_every_other():
    for seed in range(200):
        raw = hashlib.sha1(seed.to_bytes(2, "big")).digest()
        b32 = base64.b32encode(raw).decode()
        assert (
            parse_digest(f"sha1:{b32}")
            == parse_digest(f" SHA1:{b32.lower()}")
            == Digest("sha1", raw)
        )


def test_kept_fields_drop_what_an_export_recomputes():
    fields = [
        ("WARC-Type", "request"),
        ("WARC-Record-ID", "<urn:uuid:1>"),
        ("Content-Length", "12"),
        ("WARC-IP-Address", "192.0.2.1"),
    ]
    stored = kept_fields(fields) + b"GET / HTTP/1.1\r\n\r\n"
    kept, block = split_kept(stored)
    assert kept == [("WARC-Type", "request"), ("WARC-IP-Address", "192.0.2.1")]
    assert block == b"GET / HTTP/1.1\r\n\r\n"
    assert split_kept(kept_fields([]) + b"block") == ([], b"block")
