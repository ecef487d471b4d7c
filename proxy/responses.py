"""Responses the proxy makes itself, for replayed captures and harbor pages alike."""

from mitmproxy import http


def encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Headers as mitmproxy takes them, encoded once (a replayed answer is kept so)."""
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def made(status: int, fields: list[tuple[bytes, bytes]], body: bytes, length: int) -> http.Response:
    """A response with headers in the order given, repeated names kept (as archived), and the
    body sent raw: as archived, a gzip body stays gzip (its header says so). `length` is the
    whole body's for a HEAD, whose body is not sent."""
    response = http.Response.make(status, b"", http.Headers(fields))
    response.raw_content = body
    response.headers["Content-Length"] = str(length)
    return response
