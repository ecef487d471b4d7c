"""Responses the proxy makes itself, for replayed captures and harbor pages alike."""

from mitmproxy import http

from archive.header_block import valid_field


class BadField(ValueError):
    """A header field of ours that HTTP does not allow: a bug, never sent."""


def field_bytes(value: str) -> bytes:
    """A header value as sent: Latin-1 as HTTP reads it, else the UTF-8 it was decoded from."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace")


def encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Headers as mitmproxy takes them, encoded once (a replayed answer is kept so); BadField
    when one would end a field or the head early (its value holds CR, LF or NUL)."""
    for name, value in headers:
        if not valid_field(name, value):
            raise BadField(f"header field {name[:60]!r}: {value[:60]!r} is not valid HTTP")
    return [(k.encode("ascii"), field_bytes(v)) for k, v in headers]


def made(status: int, fields: list[tuple[bytes, bytes]], body: bytes, length: int) -> http.Response:
    """A response with headers in the order given, repeated names kept (as archived), and the
    body sent raw: as archived, a gzip body stays gzip (its header says so). `length` is the
    whole body's for a HEAD, whose body is not sent."""
    response = http.Response.make(status, b"", http.Headers(fields))
    response.raw_content = body
    response.headers["Content-Length"] = str(length)
    return response
