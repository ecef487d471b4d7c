"""Fixtures for the proxy tests: a real cluster with captures, and a real proxy process."""

import hashlib
import http.client
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import pytest

from archive.cluster import ClusterClient, NewCapture
from archive.timestamps import parse_time
from deploy.testing.cluster import Cluster
from deploy.testing.ports import free_port
from deploy.testing.waits import wait_until
from tests.master.conftest import cluster_factory  # noqa: F401  (a fixture used here)


@dataclass
class Proxy:
    process: subprocess.Popen[bytes]
    port: int
    data: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the proxy exited: {self.log.read_text()}")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": self.url}))
        try:
            with opener.open("http://api.dlweb/date", timeout=2) as answer:
                return bool(answer.status == 200)
        except urllib.error.HTTPError:
            return True  # it answers, if only to refuse this client
        except OSError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def proxy_command(config: Path, data: Path, port: int, *extra: str) -> list[str]:
    """`python -m proxy` on a port of loopback with its `--data` folder and cluster."""
    return [
        sys.executable,
        "-m",
        "proxy",
        "--listen",
        f"127.0.0.1:{port}",
        "--data",
        str(data),
        "-c",
        str(config),
        *extra,
    ]


def start_proxy(cluster: Cluster, data: Path, log: Path, *extra: str) -> Proxy:
    """`python -m proxy` on a free port with its `--data` folder (its search index is `search`
    beside it), answering once it does."""
    port = free_port()
    command = proxy_command(cluster.config_path, data, port, *extra)
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    proxy = Proxy(process, port, data, log)
    wait_until(proxy.answers, "the proxy to answer")
    return proxy


def run_proxy_to_its_end(
    config: Path, data: Path, *extra: str
) -> "subprocess.CompletedProcess[str]":
    """A proxy that is expected to stop at its start: its exit status and what it printed."""
    return subprocess.run(
        proxy_command(config, data, free_port(), *extra), capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def proxy_factory(tmp_path: Path) -> Iterator[Callable[..., Proxy]]:
    started: list[Proxy] = []

    def start(cluster: Cluster, *extra: str, data: Path | None = None) -> Proxy:
        log = tmp_path / f"proxy-{len(started)}.log"
        started.append(proxy := start_proxy(cluster, data or tmp_path / "proxy", log, *extra))
        return proxy

    yield start
    for proxy in started:
        if proxy.process.poll() is None:
            proxy.stop()


def through(
    proxy: Proxy,
    method: str,
    url: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    client: str = "127.0.0.1",
) -> tuple[int, dict[str, str], bytes]:
    """One request through the proxy from the loopback address `client`, a redirect not
    followed: the status, the headers (names in lower case) and the body answered."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", proxy.port, timeout=30, source_address=(client, 0)
    )
    try:
        connection.request(method, url, body, {"Host": urlsplit(url).netloc, **(headers or {})})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def setting_of(proxy: Proxy, client: str = "127.0.0.1") -> dict[str, Any]:
    """A client's setting and token, as `GET http://api.dlweb/date` tells them to it alone."""
    status, _, body = through(proxy, "GET", "http://api.dlweb/date", client=client)
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body)
    return answer


def put_setting(proxy: Proxy, client: str = "127.0.0.1", **setting: Any) -> tuple[int, Any]:
    """Change a client's setting as a program does: `PUT http://api.dlweb/date` with the token
    read from `GET` first. The status and the JSON answered."""
    token = setting_of(proxy, client)["token"]
    status, _, body = through(
        proxy,
        "PUT",
        "http://api.dlweb/date",
        json.dumps(setting).encode(),
        {"Content-Type": "application/json", "X-Dlweb-Token": token},
        client,
    )
    return status, json.loads(body)


def post_set(
    proxy: Proxy, client: str = "127.0.0.1", **fields: str
) -> tuple[int, dict[str, str], bytes]:
    """What the date page's forms send: `POST http://date.dlweb/set` with the fields and the
    client's token."""
    form = urlencode({**fields, "token": setting_of(proxy, client)["token"]}).encode()
    kind = {"Content-Type": "application/x-www-form-urlencoded"}
    return through(proxy, "POST", "http://date.dlweb/set", form, kind, client)


@dataclass(frozen=True)
class Version:
    url: str
    date: str
    status: int
    header: bytes
    body: bytes


def header_block(status: int, reason: str, *headers: tuple[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def archive(cluster: Cluster, versions: list[Version]) -> None:
    """Insert the versions as captures, with their contents and header blocks."""
    bodies: dict[str, bytes] = {}
    captures = []
    for v in versions:
        content, header = hashlib.sha256(v.body).hexdigest(), hashlib.sha256(v.header).hexdigest()
        bodies[content], bodies[header] = v.body, v.header
        captures.append(
            NewCapture(
                v.url, parse_time(v.date), content, header, v.status, len(v.body), len(v.header)
            )
        )
    async with ClusterClient(cluster.config) as client:
        await client.insert(captures, bodies.__getitem__)


# An HTTP client through which requests come from a loopback address of its own.
Client = Callable[..., aiohttp.ClientSession]


@pytest.fixture
async def sessions() -> AsyncIterator[Client]:
    """HTTP clients, each from a loopback address of its own if asked, reading bodies as sent."""
    made: list[aiohttp.ClientSession] = []

    def make(source: str = "127.0.0.1") -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(local_addr=(source, 0))
        session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        made.append(session)
        return session

    yield make
    for session in made:
        await session.close()
