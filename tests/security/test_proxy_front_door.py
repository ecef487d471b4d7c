"""The proxy fails closed: nothing a client sends reaches an upstream unless the operator allows the
live web and the client turned live or record mode on, and then only a public address, never the
cluster itself; malformed requests, bytes that are not HTTP and errors of the proxy's own are
answered by the proxy. Each test counts the connections a canary server received."""

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from deploy.testing.cluster import Cluster, clusters_in
from deploy.testing.waits import wait_until
from tests.proxy.conftest import Proxy, Version, archive, header_block, put_setting, start_proxy
from tests.security.servers import with_short_timeouts

from .conftest import Canary

ARCHIVED = "http://archived.example/page"
EVIL_HEADERS = "http://archived.example/evil-headers"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with clusters_in(tmp_path_factory.mktemp("cluster")) as make:
        made = make(nodes=1, replicas=1, start=False)
        made.config = with_short_timeouts(made.config_path)  # the proxy's timeouts too
        made.start(1)
        evil = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Split: a\rSet-Cookie: stolen=1\r\nX-Nul: a\x00b\r\nX-Fine: yes\r\n\r\n"
        asyncio.run(
            archive(
                made,
                [
                    Version(
                        ARCHIVED,
                        "2020-01-01T00:00:00Z",
                        200,
                        header_block(200, "OK", ("Content-Type", "text/html")),
                        b"<p>archived</p>",
                    ),
                    Version(EVIL_HEADERS, "2020-01-01T00:00:00Z", 200, evil, b"<p>evil</p>"),
                ],
            )
        )
        yield made


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """A proxy where the operator allows the live web, with the cluster's short timeouts."""
    folder = tmp_path_factory.mktemp("proxy")
    started = start_proxy(cluster, folder / "data", folder / "proxy.log", "--allow-live")
    yield started
    started.stop()


def exchange(port: int, *chunks: bytes, wait: float = 3.0, client: str = "127.0.0.1") -> bytes:
    """What the proxy at `port` answers raw bytes sent in chunks by `client`, until it closes or
    `wait` seconds pass without a byte."""
    with socket.create_connection(("127.0.0.1", port), source_address=(client, 0)) as sock:
        sock.settimeout(wait)
        received = b""
        for chunk in chunks:
            sock.sendall(chunk)
            try:  # the proxy's answer to this chunk, if it has one yet
                sock.settimeout(0.2)
                received += sock.recv(65536)
            except (TimeoutError, ConnectionError):
                pass
            finally:
                sock.settimeout(wait)
        try:
            while data := sock.recv(65536):
                received += data
        except (TimeoutError, ConnectionError):
            pass
        return received


def status_of(answer: bytes) -> int:
    """The status of the last response in raw bytes received."""
    line = answer[answer.rfind(b"HTTP/1.1 ") :].split(b"\r\n", 1)[0]
    return int(line.split()[1])


def setting(proxy: Proxy, client: str, **wanted: Any) -> None:
    """Set a client's harbor setting through the API harbor, as that client, with its token."""
    status, answer = put_setting(proxy, client, **wanted)
    assert status == 200, answer


NOT_HTTP = {
    "a blank line before the request": b"\r\nGET /status HTTP/1.1\r\nHost: %(target)s\r\n\r\n",
    "binary bytes": b"\x00\x01\x02\xff\xfe binary\r\n\r\n",
    "a server greeting": b"SSH-2.0-OpenSSH_9.2\r\n",
    "a run of NUL bytes": b"\x00" * 4096,
    "a broken TLS record": b"\x16\x03\x01\x00\x05hello",
    "an HTTP/2 preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "a lone word": b"STATUS\r\n\r\n",
}


@pytest.mark.parametrize("sent", NOT_HTTP.values(), ids=NOT_HTTP.keys())
def test_bytes_after_connect_that_are_not_http_never_reach_the_target(
    proxy: Proxy, canary: Canary, sent: bytes
) -> None:
    before = canary.connections
    connect = f"CONNECT {canary.address} HTTP/1.1\r\nHost: {canary.address}\r\n\r\n".encode()
    answer = exchange(proxy.port, connect, sent % {b"target": canary.address.encode()})
    assert canary.connections == before
    assert b"the canary was reached" not in answer
    assert answer.startswith(b"HTTP/1.1 200 Connection established")
    after = answer.split(b"\r\n\r\n", 1)[1]
    assert after == b"" or status_of(after) >= 400


def test_a_slow_request_head_is_answered_408_and_closed(proxy: Proxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(b"GET http://archived.example/page HTTP/1.1\r\nHost: archived.exa")
        sock.settimeout(10)
        started = time.monotonic()
        answer = b""
        while data := sock.recv(65536):
            answer += data
    assert status_of(answer) == 408
    assert time.monotonic() - started < 8  # the head timeout is 0.5 s here; 10 s by default


def test_an_idle_kept_alive_connection_is_closed(proxy: Proxy) -> None:
    request = f"GET {ARCHIVED} HTTP/1.1\r\nHost: archived.example\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(request)
        sock.settimeout(10)
        answer = b""
        while data := sock.recv(65536):  # ends when the proxy closes the idle connection
            answer += data
    assert status_of(answer) == 200 and answer.endswith(b"<p>archived</p>")


HEADS = {
    "a request line past the longest URL": (
        b"GET http://archived.example/" + b"a" * 9000,
        414,
    ),
    "a head past 64 KiB": (
        b"GET http://archived.example/ HTTP/1.1\r\nX-Big: " + b"b" * 70_000,
        431,
    ),
    "more than 100 header fields": (
        b"GET http://archived.example/ HTTP/1.1\r\n" + b"X-Many: 1\r\n" * 150,
        431,
    ),
    "a whole URL past the longest URL": (
        b"GET http://archived.example/"
        + b"a" * 8200
        + b" HTTP/1.1\r\nHost: archived.example\r\n\r\n",
        414,
    ),
}


@pytest.mark.parametrize(("sent", "status"), HEADS.values(), ids=HEADS.keys())
def test_an_oversized_request_head_is_refused(proxy: Proxy, sent: bytes, status: int) -> None:
    assert status_of(exchange(proxy.port, sent)) == status


def test_a_request_body_past_32_mib_is_refused_413(proxy: Proxy) -> None:
    size = 33 * 1024 * 1024
    head = (
        f"POST {ARCHIVED} HTTP/1.1\r\nHost: archived.example\r\nContent-Length: {size}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(head)
        sock.settimeout(10)
        with contextlib.suppress(ConnectionError):  # the proxy may close before the end
            sock.sendall(b"x" * size)
        answer = b""
        try:
            while data := sock.recv(65536):
                answer += data
        except ConnectionError:
            pass
    assert status_of(answer) == 413


def malformed(canary: Canary) -> dict[str, bytes]:
    target = canary.address
    return {
        "a Host that is not an authority": (
            f"GET http://{target}/status HTTP/1.1\r\nHost: [\r\n\r\n".encode()
        ),
        "a Host naming another site": (
            f"GET http://{target}/ HTTP/1.1\r\nHost: bank.example\r\n\r\n".encode()
        ),
        "two Host fields": (
            f"GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\nHost: {target}\r\n\r\n".encode()
        ),
        "a Host with a port past 65535": (
            f"GET http://{target}/ HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n\r\n".encode()
        ),
        "a Host with another port": (
            f"GET http://{target}/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n".encode()
        ),
        "an address never captured": (
            f"GET http://{target}/admin HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
        ),
    }


def test_malformed_requests_are_answered_by_the_proxy_and_reach_nothing(
    proxy: Proxy, canary: Canary
) -> None:
    before = canary.connections
    for name, sent in malformed(canary).items():
        answer = exchange(proxy.port, sent)
        assert 400 <= status_of(answer) < 600, name
        assert b"the canary was reached" not in answer, name
    assert canary.connections == before


def test_a_request_inside_a_tunnel_whose_host_differs_from_the_tunnel_is_refused(
    proxy: Proxy, canary: Canary
) -> None:
    before = canary.connections
    connect = f"CONNECT {canary.address} HTTP/1.1\r\n\r\n".encode()
    inside = b"GET /status HTTP/1.1\r\nHost: bank.example\r\n\r\n"
    answer = exchange(proxy.port, connect, inside).split(b"\r\n\r\n", 1)[1]
    assert status_of(answer) == 400 and b"another authority" in answer
    assert canary.connections == before


def test_an_error_inside_the_addon_is_a_fault_page_never_the_upstream(
    cluster: Cluster,
    proxy_factory: Callable[..., Proxy],
    canary: Canary,
    tmp_path: Path,
) -> None:
    proxy = proxy_factory(cluster, "--allow-live", data=tmp_path / "data")
    setting(proxy, "127.0.0.9", live=True)
    # The settings file turns unreadable under the running proxy: every request's date fails.
    (tmp_path / "data" / "client-settings.json").write_text('{"127.0.0.9": ')
    before = canary.connections
    request = f"GET http://{canary.address}/ HTTP/1.1\r\nHost: {canary.address}\r\n\r\n"
    answers: list[bytes] = []

    def failed() -> bool:  # the proxy reads the file again within a second of its change
        answers.append(exchange(proxy.port, request.encode(), client="127.0.0.9"))
        return status_of(answers[-1]) != 502

    wait_until(failed, "the proxy to read the settings file again")
    assert status_of(answers[-1]) == 500 and b"an error of ours" in answers[-1]
    assert canary.connections == before

    def logged_errors() -> list[str]:
        return [line for line in proxy.log.read_text().splitlines() if "error of the proxy" in line]

    # The line reaches the file through mitmproxy's log, which may write it after the answer.
    wait_until(lambda: logged_errors(), "the proxy to log its error")
    logged = logged_errors()
    assert all(len(line) < 2000 for line in logged)
    assert "ConfigError" in logged[0] and "client-settings.json" in logged[0]


LOCAL_TARGETS = {
    "loopback": "http://127.0.0.1:{port}/",
    "a name of loopback": "http://localhost:{port}/",
    "loopback inside IPv6": "http://[::ffff:127.0.0.1]:{port}/",
    "the unspecified address": "http://0.0.0.0:{port}/",
    "link-local (cloud metadata)": "http://169.254.169.254/latest/meta-data/",
    "a private network": "http://10.255.255.1:{port}/",
}


@pytest.mark.parametrize("target", LOCAL_TARGETS.values(), ids=LOCAL_TARGETS.keys())
async def test_live_mode_never_reaches_a_local_or_private_address(
    proxy: Proxy, canary: Canary, target: str
) -> None:
    client = "127.0.0.10"
    setting(proxy, client, live=True, record=False)
    before = canary.connections
    connector = aiohttp.TCPConnector(local_addr=(client, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(target.format(port=canary.port), proxy=proxy.url) as answer,
    ):
        body = await answer.read()
    assert answer.status >= 500 and b"the canary was reached" not in body
    assert canary.connections == before
    assert "is not a public address" in proxy.log.read_text()


async def test_record_mode_cannot_store_one_address_under_another_name(
    proxy: Proxy, canary: Canary
) -> None:
    client = "127.0.0.11"
    setting(proxy, client, record=True)
    before = canary.connections
    request = f"GET http://{canary.address}/ HTTP/1.1\r\nHost: bank.example\r\n\r\n"
    with socket.create_connection(("127.0.0.1", proxy.port), source_address=(client, 0)) as sock:
        sock.sendall(request.encode())
        sock.settimeout(5)
        answer = sock.recv(65536)
    assert status_of(answer) == 400
    assert canary.connections == before
    setting(proxy, client, record=False)
    connector = aiohttp.TCPConnector(local_addr=(client, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(
            "http://api.dlweb/captures", params={"url": "http://bank.example/"}, proxy=proxy.url
        ) as listed,
    ):
        assert listed.status == 404 or json.loads(await listed.read())["captures"] == []


async def test_an_intranet_the_operator_allows_is_reached_but_never_the_cluster_or_the_proxy(
    cluster: Cluster, proxy_factory: Callable[..., Proxy], canary: Canary
) -> None:
    proxy = proxy_factory(cluster, "--allow-live", "--live-network", "127.0.0.0/8")
    client = "127.0.0.12"
    setting(proxy, client, live=True)
    assert cluster.master is not None
    node = next(iter(cluster.nodes.values()))
    connector = aiohttp.TCPConnector(local_addr=(client, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"http://{canary.address}/intranet", proxy=proxy.url) as answer:
            assert answer.status == 200 and await answer.read() == b"the canary was reached"
        for member in (
            f"{cluster.master.url}/admin/fsck?deep=1",
            f"{node.url}/status",
            f"{proxy.url}/",
        ):
            async with session.get(member, proxy=proxy.url) as answer:
                body = await answer.read()
                assert answer.status >= 500, member
                assert b"cluster" not in body.lower() or b"dlweb" in body, member
    log = proxy.log.read_text()
    assert "is a member of this cluster" in log and "is this proxy" in log


async def test_archived_header_fields_that_are_not_http_are_left_out_of_the_replay(
    proxy: Proxy,
) -> None:
    request = f"GET {EVIL_HEADERS} HTTP/1.1\r\nHost: archived.example\r\n\r\n"
    answer = exchange(proxy.port, request.encode(), wait=1.0)
    head = answer.split(b"\r\n\r\n", 1)[0]
    assert status_of(answer) == 200
    assert b"Set-Cookie" not in head and b"\x00" not in head and b"X-Nul" not in head
    assert b"X-Fine: yes" in head
    assert "archived header fields not valid HTTP, left out" in proxy.log.read_text()
