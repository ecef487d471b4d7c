"""Helpers of the servers' security tests: a storage node on short HTTP timeouts, and requests
sent as raw bytes on a socket, as a hostile client would send them."""

import hashlib
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archive.config import ClusterConfig, load_config
from deploy.testing.cluster import NodeProcess, write_cluster_config
from deploy.testing.ports import free_port

HEAD_TIMEOUT = 0.5  # seconds; short, so that a test waits for the close, not for minutes
IDLE_TIMEOUT = 1.0
# Longer than every timeout above: a socket read that takes this long means nobody closed.
READ_TIMEOUT = 10.0

# Authorization values that hold no token: bytes that are not ASCII, alone or among others.
BAD_AUTHORIZATIONS = [
    b"Bearer \xff\xfe",
    b"Bearer \x80",
    b"bEaReR \xc3\x28",
    b"Bearer " + b"0" * 30 + b"\xfe" + b"0" * 33,
    b"Bearer \xc3\xa9t\xc3\xa9",  # UTF-8, but not a token's ASCII
]


def with_short_timeouts(path: Path) -> ClusterConfig:
    """The cluster configuration at `path`, its servers set to time heads and idle connections
    out quickly."""
    with open(path, "a") as out:
        out.write(f"http:\n  head_timeout: {HEAD_TIMEOUT}\n  idle_timeout: {IDLE_TIMEOUT}\n")
    return load_config(path)


Node = tuple[NodeProcess, ClusterConfig]


def start_node(root: Path) -> Node:
    """A storage node alone (no master), on a configuration of short timeouts."""
    write_cluster_config(root / "dlweb.yaml")
    config = with_short_timeouts(root / "dlweb.yaml")
    node = NodeProcess(root / "node", root / "dlweb.yaml", free_port(), root / "node.log")
    return node.start(), config


def running_node(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Node]:
    """A module fixture's `start_node` in a fresh folder, stopped when the module is done."""
    started, config = start_node(tmp_path_factory.mktemp(name))
    yield started, config
    started.stop()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(READ_TIMEOUT)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket.timeout if it never
    does)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def exchange(port: int, data: bytes) -> bytes:
    """The server's whole answer to `data` sent on a fresh connection, which the server must
    close after it (a refusal closes it; a good request says `Connection: close`)."""
    with connect(port) as sock:
        sock.sendall(data)
        return read_until_closed(sock)


def status_of(answer: bytes) -> int:
    """The status of a raw HTTP answer."""
    line = answer.split(b"\r\n", 1)[0]
    assert line.startswith(b"HTTP/1."), f"not an HTTP answer: {answer[:200]!r}"
    return int(line.split()[1])


def body_of(answer: bytes) -> bytes:
    return answer.partition(b"\r\n\r\n")[2]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def auth(config: ClusterConfig) -> str:
    return f"Authorization: Bearer {config.write_token}\r\n"


def call(
    base: str, method: str, path: str, body: object = None, token: str | None = None
) -> tuple[int, Any]:
    """A JSON request to a server: its status and JSON answer, whatever the status."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=READ_TIMEOUT) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)
