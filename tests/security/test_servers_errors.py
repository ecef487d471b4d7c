"""A storage node's refusals are clear and tell nothing of the server: bytes in Authorization
that are no token get a 401, not a traceback; an error, or a reason a file is bad, never names
a path of the node's disk (the node's log does)."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from archive.urlkey import structure_name
from deploy.testing.cluster import NodeProcess
from deploy.testing.disk import damage
from deploy.testing.waits import wait_until
from tests.security.servers import (
    BAD_AUTHORIZATIONS,
    Node,
    auth,
    body_of,
    call,
    connect,
    exchange,
    running_node,
    sha,
    status_of,
)

NAME = "0" * 64


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    yield from running_node(tmp_path_factory, "errors")


@pytest.mark.parametrize(
    "request_line",
    [b"PUT /content/" + b"0" * 64, b"DELETE /structure/" + b"0" * 64, b"POST /scrub"],
)
def test_authorization_bytes_that_are_no_token_get_401_and_no_traceback(
    node: Node, request_line: bytes
) -> None:
    started = node[0]
    for value in BAD_AUTHORIZATIONS:
        answer = exchange(
            started.port,
            request_line + b" HTTP/1.1\r\nHost: node\r\nAuthorization: " + value + b"\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n",
        )
        assert status_of(answer) == 401, (value, answer[:300])
        assert "cluster token" in json.loads(body_of(answer))["error"]
    assert "Traceback" not in started.log()


def records(*years: int) -> list[dict[str, Any]]:
    return [
        {
            "time": (year - 1970) * 365 * 86_400 * 1_000_000,
            "content": sha(b"%d" % year),
            "header": sha(b"HTTP/1.1 200 OK\r\n\r\n"),
            "status": 200,
        }
        for year in years
    ]


def names_no_path(node: NodeProcess, answer: object) -> None:
    text = json.dumps(answer)
    assert str(node.root) not in text and "/tmp" not in text and ".part" not in text, text


def test_a_damaged_structure_file_sent_is_refused_without_the_nodes_paths(node: Node) -> None:
    started, config = node
    name = structure_name("http://example.org/sent")
    garbage = b"no structure file at all"
    answer = exchange(
        started.port,
        f"PUT /structure/{name} HTTP/1.1\r\nHost: node\r\n{auth(config)}"
        f"Content-Length: {len(garbage)}\r\nConnection: close\r\n\r\n".encode()
        + garbage,
    )
    assert status_of(answer) == 400
    error = json.loads(body_of(answer))["error"]
    assert error.startswith("the structure file sent is damaged: not a structure file")
    names_no_path(started, error)


def test_a_damaged_stored_structure_file_is_reported_without_the_nodes_paths(
    node: Node,
) -> None:
    started, config = node
    url = "http://example.org/damaged"
    name = structure_name(url)
    body = {"url": url, "records": records(2001, 2002)}
    assert call(started.url, "POST", f"/structure/{name}", body, config.write_token)[0] == 200
    damage(started.root, name, at=-3, kind="structure")  # in its last record
    before = len(started.log())

    query = f"/structure/{name}?mode=range&from=1990&to=2020"
    status, answer = call(started.url, "GET", query)
    assert status == 500 and answer["error"] == "on the storage node: record checksum mismatch"
    names_no_path(started, answer)
    assert str(started.root) in started.log()[before:]  # the operator is told where

    status, report = call(started.url, "POST", "/scrub", None, config.write_token)
    assert status == 200
    assert [(bad["name"], bad["reason"]) for bad in report["bad"]] == [
        (name, "record checksum mismatch")
    ]
    assert "Traceback" not in started.log()


@pytest.mark.parametrize("size", [100_000, 3 * 1024 * 1024], ids=["read whole", "streamed"])
def test_a_client_that_leaves_mid_upload_is_logged_in_one_line_without_a_traceback(
    node: Node, size: int
) -> None:
    started, config = node
    before = len(started.log())
    head = (
        f"PUT /content/{NAME} HTTP/1.1\r\nHost: node\r\n{auth(config)}"
        f"Content-Length: {size}\r\n\r\n"
    ).encode()
    with connect(started.port) as sock:
        sock.sendall(head + b"x" * (size // 2))
    wait_until(lambda: "did not arrive whole" in started.log()[before:], "the node to log it")
    logged = started.log()[before:]
    assert "Traceback" not in logged and len(logged.splitlines()) == 1, logged
