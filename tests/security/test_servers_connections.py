"""A server's connections are bounded (archive/connections.py): a request's head must arrive
within the head timeout of its first byte, a kept-alive connection with no request under way is
closed after the idle timeout, and heads beyond the size limits get a clear status and a short
log line. A body or a download that lasts longer than both timeouts goes on."""

import hashlib
import json
import os
import select
import socket
import time
from collections.abc import Iterator

import pytest

from archive.config import parse_config
from archive.connections import MAX_FIELD, MAX_HEADERS, MAX_URL
from archive.errors import ConfigError
from deploy.testing.cluster import NodeProcess
from tests.security.servers import (
    HEAD_TIMEOUT,
    IDLE_TIMEOUT,
    READ_TIMEOUT,
    Node,
    auth,
    body_of,
    connect,
    exchange,
    read_until_closed,
    running_node,
    sha,
    status_of,
)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    yield from running_node(tmp_path_factory, "connections")


def trickle(sock: socket.socket, head: bytes) -> bytes:
    """Send `head`, then one more byte of it every tenth of a second, as a slowloris does (so
    the connection is never silent), until the server answers; what it sent before closing."""
    sock.sendall(head)
    deadline = time.monotonic() + READ_TIMEOUT
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.1)
        if readable:
            return read_until_closed(sock)
        sock.sendall(b"a")
    raise AssertionError(f"the server still waits for the head after {READ_TIMEOUT} s")


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer (its head and its Content-Length of body) from a kept-alive connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


PARTIAL_HEADS = {
    "request line": b"GET /sta",
    "no blank line": b"GET /status HTTP/1.1\r\nHost: node\r\n",
    "field value": b"GET /status HTTP/1.1\r\nHost: node\r\nX-Slow: ab",
    "write": b"PUT /content/" + b"0" * 64 + b" HTTP/1.1\r\nContent-Le",
}


@pytest.mark.parametrize("head", PARTIAL_HEADS.values(), ids=list(PARTIAL_HEADS))
def test_a_head_trickled_byte_by_byte_gets_408_after_the_head_timeout(
    node: Node, head: bytes
) -> None:
    with connect(node[0].port) as sock:
        answer = trickle(sock, head)
    assert status_of(answer) == 408
    assert f"within {HEAD_TIMEOUT:g} s".encode() in body_of(answer)


def test_a_second_head_on_a_kept_alive_connection_is_timed_too(node: Node) -> None:
    with connect(node[0].port) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nHost: node\r\n\r\n")
        assert status_of(read_answer(sock)) == 200
        assert status_of(trickle(sock, b"GET /status HTTP/1.1\r\nHo")) == 408


def test_a_kept_alive_connection_with_no_request_is_closed_after_the_idle_timeout(
    node: Node,
) -> None:
    with connect(node[0].port) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nHost: node\r\n\r\n")
        assert status_of(read_answer(sock)) == 200
        assert read_until_closed(sock) == b""


def test_a_connection_that_never_sends_a_byte_is_closed_after_the_idle_timeout(
    node: Node,
) -> None:
    with connect(node[0].port) as sock:
        assert read_until_closed(sock) == b""


def answered_in_one_short_log_line(node: NodeProcess, request: bytes, status: int) -> str:
    """Send `request`, check its status, and that the node logged it in one line of bounded
    size (not the request, not a traceback); the answer's error."""
    before = len(node.log())
    answer = exchange(node.port, request)
    assert status_of(answer) == status
    logged = node.log()[before:]
    assert "Traceback" not in logged
    assert len(logged.splitlines()) <= 1 and len(logged) < 500, logged[:1000]
    error: str = json.loads(body_of(answer))["error"]
    return error


def test_a_url_over_the_limit_gets_414(node: Node) -> None:
    long_url = b"/status?" + b"a" * 20_000
    request = b"GET " + long_url + b" HTTP/1.1\r\nHost: node\r\n\r\n"
    error = answered_in_one_short_log_line(node[0], request, 414)
    assert error == f"the URL is longer than {MAX_URL} bytes"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (b"X-Long: " + b"a" * 20_000 + b"\r\n", f"a header field is longer than {MAX_FIELD}"),
        (b"X-" + b"a" * 20_000 + b": 1\r\n", f"a header field is longer than {MAX_FIELD}"),
        (b"".join(b"X-%d: 1\r\n" % i for i in range(500)), f"more than {MAX_HEADERS} header"),
    ],
    ids=["long value", "long name", "too many"],
)
def test_header_fields_over_the_limits_get_431(node: Node, fields: bytes, error: str) -> None:
    request = b"GET /status HTTP/1.1\r\nHost: node\r\n" + fields + b"\r\n"
    assert error in answered_in_one_short_log_line(node[0], request, 431)


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET /status HTTP/1.1\r\nHost node\r\n\r\n",
        b"GET /status HTTP/9.9\r\n\r\n",
        b"GET /status HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"GET /status HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        b"GET /stat\x00us HTTP/1.1\r\n\r\n",
    ],
    ids=["no colon", "version", "two lengths", "length and chunked", "nul in url"],
)
def test_a_malformed_head_gets_400_with_its_reason_in_json(node: Node, request_head: bytes) -> None:
    error = answered_in_one_short_log_line(node[0], request_head, 400)
    assert error.startswith("malformed request head: ")


def test_an_upload_slower_than_both_timeouts_is_stored(node: Node) -> None:
    started, config = node
    data = os.urandom(2 * 1024 * 1024)  # over 1 MiB: streamed to disk as it arrives
    pieces = [data[i : i + len(data) // 6] for i in range(0, len(data), len(data) // 6)]
    head = (
        f"PUT /content/{sha(data)} HTTP/1.1\r\nHost: node\r\n{auth(config)}"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with connect(started.port) as sock:
        sock.sendall(head)
        for piece in pieces:
            # A pause longer than the head timeout between pieces, longer than the idle one
            # in all: a body is not a head, and its request is under way.
            time.sleep(HEAD_TIMEOUT * 0.6)
            sock.sendall(piece)
        answer = read_until_closed(sock)
    assert len(pieces) * HEAD_TIMEOUT * 0.6 > IDLE_TIMEOUT
    assert status_of(answer) == 201, answer[:500]


def test_a_reader_slower_than_both_timeouts_gets_a_large_content_whole(node: Node) -> None:
    started, config = node
    data = os.urandom(16 * 1024 * 1024)
    name = sha(data)
    head = (
        f"PUT /content/{name} HTTP/1.1\r\nHost: node\r\n{auth(config)}"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with connect(started.port) as sock:
        sock.sendall(head + data)
        assert status_of(read_until_closed(sock)) == 201
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # so the server must wait
    sock.settimeout(READ_TIMEOUT)
    with sock:
        sock.connect(("127.0.0.1", started.port))
        sock.sendall(f"GET /content/{name} HTTP/1.1\r\nHost: node\r\n\r\n".encode())
        # Nothing read for longer than the idle timeout, while the answer is being sent.
        time.sleep(IDLE_TIMEOUT * 2)
        answer = read_answer(sock)
    assert status_of(answer) == 200
    assert hashlib.sha256(body_of(answer)).hexdigest() == name


@pytest.mark.parametrize(
    ("http", "error"),
    [
        (
            {"head_timeout": 0},
            "http.head_timeout: must be more than 0 and at most 86400 seconds, not 0",
        ),
        ({"idle_timeout": "long"}, "http.idle_timeout: must be float, not str"),
        ({"header_timeout": 5}, "http.header_timeout: unknown key"),
    ],
)
def test_a_bad_timeout_in_the_configuration_is_refused_naming_its_key(
    http: dict[str, object], error: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"cluster": {"secret": "s" * 16}, "http": http}, "dlweb.yaml")
    assert str(refused.value) == f"dlweb.yaml: {error}"
