"""Header blocks: encoding, parsing raw blocks as servers send them, and refusing garbage."""

import pytest

from archive.errors import CorruptFile
from archive.header_block import (
    HeaderBlock,
    declares_chunked,
    encode_header_block,
    parse_header_block,
    status_of,
)

HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Set-Cookie", "a=1; Path=/"),
    ("Location", "https://example.com/next?x=1"),
    ("Set-Cookie", "b=2"),
    ("X-Empty", ""),
]


@pytest.mark.parametrize(
    ("status", "reason", "protocol"),
    [
        (200, "OK", "HTTP/1.1"),
        (301, "Moved Permanently", "HTTP/1.0"),
        (404, "Not Found", "HTTP/1.1"),
        (204, "", "HTTP/2"),
        (599, "Custom Reason With Spaces", "HTTP/3"),
    ],
)
def test_encode_then_parse(status: int, reason: str, protocol: str) -> None:
    data = encode_header_block(status, reason, HEADERS, protocol)
    assert data.endswith(b"\r\n\r\n")
    assert data.count(b"\r\n") == len(HEADERS) + 2
    block = parse_header_block(data)
    assert block == HeaderBlock(protocol, status, reason, HEADERS)


def test_encoded_bytes() -> None:
    data = encode_header_block(302, "Found", [("Location", "/x"), ("X-L", "café")])
    assert data == b"HTTP/1.1 302 Found\r\nLocation: /x\r\nX-L: caf\xe9\r\n\r\n"
    assert encode_header_block(200, "", []) == b"HTTP/1.1 200\r\n\r\n"


def test_characters_outside_latin1_are_replaced() -> None:
    data = encode_header_block(200, "OK", [("X-Price", "5 €")])
    assert b"X-Price: 5 ?\r\n" in data


def test_parse_a_raw_block_with_odd_spacing_and_latin1_bytes() -> None:
    raw = (
        b"HTTP/1.1  200   OK  \r\n"
        b"Content-Type:text/html\r\n"
        b"X-Spaced:    value with spaces   \r\n"
        b"X-Folded: first\r\n"
        b"\tsecond\r\n"
        b"X-Latin: caf\xe9 cr\xe8me\r\n"
        b"Server : old\r\n"
        b"\r\n"
        b"body bytes are not part of the block"
    )
    block = parse_header_block(raw)
    assert block.protocol == "HTTP/1.1"
    assert block.status == 200
    assert block.reason.strip() == "OK"
    assert block.get("content-type") == "text/html"
    assert block.get("x-spaced") == "value with spaces"
    assert block.get("x-folded") == "first\tsecond"
    assert block.get("x-latin") == "café crème"
    assert block.get("server") == "old"
    assert [name for name, _ in block.headers] == [
        "Content-Type",
        "X-Spaced",
        "X-Folded",
        "X-Latin",
        "Server",
    ]


def test_parse_accepts_bare_line_feeds_and_a_missing_end() -> None:
    block = parse_header_block(b"HTTP/1.0 404 Not Found\nContent-Length: 0\n")
    assert (block.protocol, block.status, block.reason) == ("HTTP/1.0", 404, "Not Found")
    assert block.headers == [("Content-Length", "0")]


def test_get_is_case_insensitive_and_returns_the_first_value() -> None:
    block = parse_header_block(encode_header_block(200, "OK", HEADERS))
    assert block.get("CONTENT-TYPE") == "text/html; charset=utf-8"
    assert block.get("content-type") == "text/html; charset=utf-8"
    assert block.get("set-cookie") == "a=1; Path=/"
    assert block.get("x-empty") == ""
    assert block.get("X-Missing") is None


@pytest.mark.parametrize(
    "data",
    [
        b"garbage",
        b"\x00\x01\x02\xff",
        b"\r\n\r\n",
        b"HTTP/1.1\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/9.9 200 OK\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
        b"<html><body>not headers</body></html>",
    ],
)
def test_garbage_is_a_corrupt_file(data: bytes) -> None:
    with pytest.raises(CorruptFile, match="^stored block abc: not an HTTP status line"):
        parse_header_block(data, where="stored block abc")
    with pytest.raises(CorruptFile, match="^stored block abc: not an HTTP status line"):
        status_of(data, where="stored block abc")


def test_the_status_alone_is_the_status_of_the_whole_parse() -> None:
    for protocol in ("HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/2", "http/1.1"):
        for status, reason in ((200, "OK"), (404, ""), (302, "Found it"), (599, "Caf\u00e9")):
            data = encode_header_block(status, reason, HEADERS, protocol)
            assert status_of(data) == parse_header_block(data).status == status


def test_an_empty_block_is_a_corrupt_file() -> None:
    with pytest.raises(CorruptFile, match="header block"):
        parse_header_block(b"")


def test_http_2_0_status_line() -> None:
    block = parse_header_block(encode_header_block(200, "OK", [], "HTTP/2.0"))
    assert (block.protocol, block.status, block.reason) == ("HTTP/2.0", 200, "OK")


@pytest.mark.parametrize("status", [b"-5", b"20000", b"+200"])
def test_a_status_code_that_is_not_three_digits_is_corrupt(status: bytes) -> None:
    with pytest.raises(CorruptFile):
        parse_header_block(b"HTTP/1.1 " + status + b" OK\r\n\r\n")


@pytest.mark.parametrize(
    ("block", "chunked"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding:  gzip, CHUNKED\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\nTRANSFER-ENCODING: Chunked\n\n", True),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nX-Note: chunked\r\n\r\n", False),
        (b"HTTP/1.1 200 chunked\r\nContent-Length: 5\r\n\r\n", False),
    ],
)
def test_declares_chunked_reads_the_transfer_encoding_field(block: bytes, chunked: bool) -> None:
    assert declares_chunked(block) is chunked
