"""HIP through an HTTP proxy's CONNECT tunnel: the proxy URL, the proxy's answer read and judged,
TLS over a tunnel, and a crawler agent process that reaches its scheduler only through a proxy."""

import argparse
import asyncio
import base64
import datetime
import signal
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from archive.config import parse_config
from archive.errors import ConfigError
from archive.hip import HipError, HipMaster, HipSlave, HttpProxy, Peer, parse_proxy
from archive.hip._tunnel import (
    MAX_HEAD,
    TunnelConnector,
    check_answer,
    connect_request,
    read_answer,
)
from crawler.cli import add_agent_arguments
from deploy.testing.connect_proxy import ConnectProxy, ConnectRequest
from deploy.testing.spawn import end, spawn
from deploy.testing.waits import eventually
from deploy.testing.web_server import WebServer

SECRET = b"cluster secret of the tunnel tests"
PROXY = HttpProxy("proxy.test", 3128)
TARGET = "scheduler.test:8300"


def test_a_proxy_url_gives_its_address_and_credentials() -> None:
    proxy = parse_proxy("http://agent:p%40ss%3Aword@Proxy.Example:3128/")
    assert (proxy.host, proxy.port, proxy.user, proxy.password) == (
        "proxy.example",
        3128,
        "agent",
        "p@ss:word",
    )
    assert str(proxy) == "http://proxy.example:3128" and "p@ss" not in repr(proxy)
    assert parse_proxy(proxy.url) == proxy
    assert proxy.authorization == "Basic " + base64.b64encode(b"agent:p@ss:word").decode()
    assert str(parse_proxy("http://[::1]:8080")) == "http://[::1]:8080"
    assert parse_proxy("http://[::1]:8080").authorization is None


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://proxy:443", "must be http://"),
        ("proxy:3128", "must be http://"),
        ("http://proxy", "give the proxy's port"),
        ("http://agent:secret@proxy", "give the proxy's port"),
        ("http://proxy:3128/path?q", "host:port alone"),
        ("http://proxy:99999", "not a proxy URL"),
        ("http://:3128", "has no host"),
    ],
)
def test_a_proxy_url_that_is_not_http_host_port_is_refused_without_its_password(
    url: str, said: str
) -> None:
    with pytest.raises(ValueError) as refused:
        parse_proxy(url)
    assert said in str(refused.value) and "secret" not in str(refused.value)


def test_the_configuration_names_a_bad_hip_proxy_and_reads_a_good_one() -> None:
    base: dict[str, Any] = {"cluster": {"secret": SECRET.decode()}}
    config = parse_config({**base, "hip_proxy": "http://a:b@proxy:3128"}, "dlweb.yaml")
    assert config.hip_proxy == HttpProxy("proxy", 3128, "a", "b")
    with pytest.raises(ConfigError, match=r"dlweb.yaml: hip_proxy: .*give the proxy's port"):
        parse_config({**base, "hip_proxy": "http://proxy"}, "dlweb.yaml")


def test_a_bad_hip_proxy_option_is_a_usage_error_saying_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_agent_arguments(parser)
    assert parser.parse_args(["--hip-proxy", "http://a:b@proxy:3128"]).hip_proxy == HttpProxy(
        "proxy", 3128, "a", "b"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--hip-proxy", "https://a:b@proxy:443"])
    assert "argument --hip-proxy: 'https://***@proxy:443': the proxy's URL must be" in (
        capsys.readouterr().err
    )


def test_connect_names_the_target_and_sends_basic_credentials_when_given() -> None:
    assert connect_request(PROXY, TARGET) == (
        b"CONNECT scheduler.test:8300 HTTP/1.1\r\nHost: scheduler.test:8300\r\n\r\n"
    )
    with_credentials = connect_request(HttpProxy("proxy.test", 3128, "agent", "pw"), "[::1]:443")
    assert with_credentials == (
        b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n"
        b"Proxy-Authorization: Basic YWdlbnQ6cHc=\r\n\r\n"
    )


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 Connection established\r\n\r\n",
        b"HTTP/1.0 200\n\n",
        b"HTTP/1.1 204 No Content\r\nProxy-Agent: squid\r\nVia: 1.1 proxy\r\n\r\n",
    ],
)
def test_a_2xx_answer_opens_the_tunnel(head: bytes) -> None:
    check_answer(head, PROXY, TARGET)


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n",
            "refused the tunnel to scheduler.test:8300: 407 Proxy Authentication Required"
            " (give them in the proxy URL",
        ),
        (b"HTTP/1.1 403 Forbidden\r\n\r\n", "refused the tunnel to scheduler.test:8300: 403"),
        (b"HTTP/1.0 502 Bad Gateway\r\n\r\n", "refused the tunnel to scheduler.test:8300: 502"),
        (b"HTTP/1.1 301 Moved\r\nLocation: /\r\n\r\n", "refused the tunnel"),
        (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "gave no HTTP answer to CONNECT scheduler.test:8300"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "gave no HTTP answer"),
        (b"HTTP/2 200\r\n\r\n", "gave no HTTP answer"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line: 'no colon here'"),
        (b"HTTP/1.1 403 \x1b[31mred\r\n\r\n", "403 ?[31mred"),
    ],
)
def test_any_other_answer_is_one_error_naming_the_proxy_and_what_it_said(
    head: bytes, said: str
) -> None:
    with pytest.raises(HipError) as refused:
        check_answer(head, PROXY, TARGET)
    assert str(refused.value).startswith("proxy http://proxy.test:3128 ")
    assert said in str(refused.value)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """Our end of a connection to a proxy, non-blocking, and the proxy's end."""
    ours, proxy = socket.socketpair()
    ours.setblocking(False)
    yield ours, proxy
    ours.close()
    proxy.close()


@pytest.mark.parametrize(
    ("answer", "close", "said"),
    [
        (b"", False, "did not answer CONNECT scheduler.test:8300 within 0.3 s"),
        (b"", True, "closed the connection before answering to CONNECT"),
        (b"HTTP/1.1 200 OK\r\n", True, "closed the connection in the middle of its answer"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 1400, False, f"head over {MAX_HEAD} bytes"),
        (b"SSH-2.0-OpenSSH_9.2\r\n", False, "gave no HTTP answer"),
        (b"HTTP/1.1 200 OK\r\n\r\nhello", False, "sent 5 bytes after opening the tunnel"),
    ],
)
async def test_the_answer_is_read_within_its_size_and_time_bounds(
    pair: tuple[socket.socket, socket.socket], answer: bytes, close: bool, said: str
) -> None:
    ours, proxy = pair
    proxy.sendall(answer)
    if close:
        proxy.close()
    with pytest.raises(HipError, match=said):
        await read_answer(ours, PROXY, TARGET, timeout=0.3)


async def test_an_answer_arriving_in_pieces_opens_the_tunnel(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, proxy = pair
    proxy.sendall(b"HTTP/1.1 200 Connection")
    asyncio.get_running_loop().call_later(0.05, proxy.sendall, b" established\r\n\r")
    asyncio.get_running_loop().call_later(0.1, proxy.sendall, b"\n")
    await read_answer(ours, PROXY, TARGET, timeout=5)


@dataclass
class Master:
    hip: HipMaster
    port: int
    joined: asyncio.Event


@pytest.fixture
async def master() -> AsyncIterator[Master]:
    """A HIP master in this event loop, on loopback; `joined` is set once a slave connects."""
    joined = asyncio.Event()

    async def on_connect(peer: Peer) -> None:
        joined.set()

    hip = HipMaster(SECRET, "scheduler", {}, on_connect=on_connect)
    app = web.Application()
    hip.add_routes(app)
    server = WebServer(app)
    await server.start_here()
    yield Master(hip, server.port, joined)
    await server.stop_here()


async def test_a_refusing_proxy_fails_each_attempt_with_one_clear_error_and_is_tried_again(
    master: Master,
) -> None:
    port = master.port
    async with ConnectProxy(credentials="agent:pw") as proxy:

        async def tried_again() -> bool:
            return len(proxy.requests) >= 2

        slave = HipSlave(
            f"ws://127.0.0.1:{port}/hip", SECRET, "agent", {}, proxy=parse_proxy(proxy.url)
        )
        await slave.start()
        try:
            await eventually(tried_again, "a second CONNECT", 10)
            with pytest.raises(HipError) as refused:
                await slave.wait_connected(0.01)
        finally:
            await slave.stop()
    assert f"last error: proxy {proxy.url} refused the tunnel to 127.0.0.1:{port}: 407" in str(
        refused.value
    )
    assert proxy.tunnels == []


def self_signed(host: str, folder: Path) -> tuple[Path, Path]:
    """A certificate for `host` signed by its own key, and the key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


async def test_tls_to_the_master_runs_over_the_tunnel_checked_against_its_name(
    tmp_path: Path,
) -> None:
    host = "tls.hip.test"
    cert_file, key_file = self_signed(host, tmp_path)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert_file, key_file)

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=f"over TLS: {request.secure}")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving)
    await site.start()
    port = runner.addresses[0][1]
    trusting = ssl.create_default_context(cafile=str(cert_file))
    try:
        async with ConnectProxy(resolve={host: "127.0.0.1"}) as proxy:
            connector = TunnelConnector(parse_proxy(proxy.url), tls=trusting)
            async with aiohttp.ClientSession(connector=connector) as session:
                async with session.get(f"https://{host}:{port}/") as answer:
                    assert await answer.text() == "over TLS: True"
                with pytest.raises(aiohttp.ClientConnectorCertificateError):
                    await session.get(f"https://127.0.0.1:{port}/")
    finally:
        await runner.cleanup()
    assert proxy.tunnels == [f"{host}:{port}", f"127.0.0.1:{port}"]


async def test_an_agent_reaches_its_scheduler_only_through_the_proxy_with_its_credentials(
    master: Master, tmp_path: Path
) -> None:
    config = tmp_path / "dlweb.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": {"secret": SECRET.decode()},
                "lookup": "master",
                "master": "http://127.0.0.1:9",
                "discovery": False,
            }
        )
    )
    target = f"scheduler.hip.test:{master.port}"
    refused = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"
    async with ConnectProxy(
        credentials="agent:s3cret", resolve={"scheduler.hip.test": "127.0.0.1"}, answers=[refused]
    ) as proxy:
        log = tmp_path / "agent.log"
        agent = spawn(
            [
                sys.executable,
                "-m",
                "crawler.agent",
                "--scheduler",
                f"http://{target}",
                "--hip-proxy",
                proxy.url.replace("//", "//agent:s3cret@"),
                "--name",
                "agent-1",
                "--work",
                str(tmp_path / "work"),
                "-c",
                str(config),
            ],
            log,
        )
        try:
            await asyncio.wait_for(master.joined.wait(), 30)
            assert await master.hip.slaves["agent-1"].call("stop") == {"stopping": "agent-1"}
            assert await asyncio.to_thread(agent.wait, 10) == 0
        finally:
            end(agent, signal.SIGTERM, log=log)
    credentials = "Basic " + base64.b64encode(b"agent:s3cret").decode()
    assert proxy.requests == [ConnectRequest(target, credentials)] * 2
    assert proxy.tunnels == [target]
    output = log.read_text()
    assert f"proxy {proxy.url} refused the tunnel to {target}: 502 Bad Gateway" in output
    assert "Traceback" not in output and "s3cret" not in output
