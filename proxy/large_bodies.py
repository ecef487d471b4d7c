"""Large bodies go from the storage node to the browser through mitmproxy's streaming.

mitmproxy streams only what comes from a server, so a request for a large capture is sent on to
the storage node that holds its content (`GET /content/<name>`, with the byte range asked for),
and the node's answer is sent back under the archived status and headers as it arrives: the
proxy never holds the body, and never fetches bytes it does not send. A whole body is checked
against its name as it passes, one piece behind (archive.hashing.HeldBackCheck): on a mismatch
the last piece is withheld, the connection cut, and the node asked to check its copy.
"""

from dataclasses import dataclass
from urllib.parse import urlsplit

from mitmproxy import http

from archive.cluster import LargeContent
from archive.errors import HashMismatch
from archive.hashing import VerifyingRelay
from archive.ranges import ByteRange

STREAMED = "dlweb-streamed"


@dataclass
class LargeBody:
    """What a streamed replay sends once the node answers: the archived status and headers,
    and the range asked for (None for the whole body, which is then checked)."""

    url: str  # the URL the browser asked for
    held: LargeContent
    status: int
    fields: list[tuple[bytes, bytes]]
    span: ByteRange | None
    check: VerifyingRelay | None = None  # made once the node answers a whole read
    bad: bool = False

    def __call__(self, piece: bytes) -> bytes:
        """mitmproxy's stream callback: each piece in, the piece to send out (b"" at the end)."""
        assert self.check is not None
        if piece:
            return self.check.feed(piece)
        try:
            return self.check.finish()
        except HashMismatch:
            self.bad = True
            return b""


def send_to_node(flow: http.HTTPFlow, streamed: LargeBody) -> None:
    """Turn the request into a GET of the held content from its node; the browser's own
    headers (cookies...) are not passed on."""
    node = urlsplit(streamed.held.address)
    request = flow.request
    request.method = "GET"
    request.scheme = "http"
    request.host = node.hostname or "127.0.0.1"
    request.port = node.port or 80
    request.path = f"/content/{streamed.held.name}"
    request.headers = http.Headers(host=node.netloc)
    if streamed.span is not None:
        request.headers["Range"] = f"bytes={streamed.span.start}-{streamed.span.end}"
    request.content = b""
    flow.metadata[STREAMED] = streamed


def node_answered(flow: http.HTTPFlow) -> None:
    """The `responseheaders` hook: the node's answer gets the archived status and headers and
    is streamed on, checked when whole. Anything but the answer asked for is left for
    `node_failed` to replace once read."""
    streamed = flow.metadata.get(STREAMED)
    response = flow.response
    if not isinstance(streamed, LargeBody) or response is None:
        return
    expected = 200 if streamed.span is None else 206
    if response.status_code != expected:
        return
    length = response.headers.get("content-length", str(streamed.held.size))
    headers = http.Headers(streamed.fields)
    headers["Accept-Ranges"] = "bytes"
    headers["Content-Length"] = length
    if streamed.span is not None:
        headers["Content-Range"] = streamed.span.content_range(streamed.held.size)
        response.status_code = 206
    else:
        response.status_code = streamed.status
        streamed.check = VerifyingRelay(streamed.held.name)
    response.reason = ""
    response.headers = headers
    response.stream = streamed if streamed.check is not None else True


def node_failed(flow: http.HTTPFlow) -> bool:
    """True when the node did not send what was asked (its answer was read, not streamed)."""
    streamed = flow.metadata.get(STREAMED)
    return (
        isinstance(streamed, LargeBody) and flow.response is not None and not (flow.response.stream)
    )
