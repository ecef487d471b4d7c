"""Fixtures for the proxy tests: a real cluster with captures, and a real proxy process."""

import hashlib
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from archive.cluster import ClusterClient, NewCapture
from archive.timestamps import parse_time
from tests.conftest import free_port, wait_until
from tests.master.conftest import Cluster, cluster_factory  # noqa: F401  (a fixture used here)


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


def start_proxy(cluster: Cluster, data: Path, log: Path, *extra: str) -> Proxy:
    """`python -m proxy` on a free port with its `--data` folder (its search index is `search`
    beside it), answering once it does."""
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "proxy",
                "--listen",
                f"127.0.0.1:{port}",
                "--data",
                str(data),
                "-c",
                str(cluster.config_path),
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    proxy = Proxy(process, port, data, log)
    wait_until(proxy.answers, "the proxy to answer")
    return proxy


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
