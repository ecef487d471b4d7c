"""HIP through an HTTP proxy: a TCP connection to the proxy turned into a tunnel to the master by
CONNECT, over which aiohttp then speaks (TLS included) exactly as over a direct connection.

The proxy is sent `CONNECT host:port HTTP/1.1` with Host (and Proxy-Authorization when the proxy
URL has credentials); its answer's head is read, bounded in size and time, and must be 2xx. Any
other answer fails the connection attempt with a HipError naming the proxy and what it said, and
the slave tries again with its usual backoff.
"""

import asyncio
import re
import socket
import ssl

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.tracing import Trace

from archive.hip._errors import HipError
from archive.hip._proxy import HttpProxy
from archive.network import CONNECT_TIMEOUT

# A proxy's answer to CONNECT is a status line and a few headers: one whose head runs longer is
# not a proxy we can talk to, and is not read further.
MAX_HEAD = 8 * 1024
# The proxy answers once it has reached the master itself, which takes it as long as a connection
# of ours to a cut host (network.CONNECT_TIMEOUT); a proxy still silent after that is given up.
ANSWER_TIMEOUT = 10.0
# What a tunnel adds, at most, to the bound on a slave's connection attempt: reaching the proxy
# (CONNECT_TIMEOUT, as any connection of ours), then its answer.
TUNNEL_TIMEOUT = CONNECT_TIMEOUT + ANSWER_TIMEOUT

_END_OF_HEAD = re.compile(rb"\r?\n\r?\n")
_STATUS_LINE = re.compile(r"HTTP/1\.[01] ([0-9]{3})(?: (.*))?")
_HEADER_LINE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:.*")
_LINE_BREAK = re.compile(r"\r?\n")


def authority(host: str, port: int) -> str:
    """host:port as CONNECT and Host name it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect_request(proxy: HttpProxy, target: str) -> bytes:
    """The CONNECT request asking `proxy` for a tunnel to `target` (host:port)."""
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if proxy.authorization is not None:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def end_of_head(data: bytes | bytearray) -> int:
    """Where the head of an HTTP answer ends (after its blank line) in `data`; -1 if not yet."""
    found = _END_OF_HEAD.search(data)
    return -1 if found is None else found.end()


def _shown(text: str, limit: int = 100) -> str:
    """Text from the proxy, cut short, with no control character to garble a log line."""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


def _status(line: str, proxy: HttpProxy, target: str) -> re.Match[str]:
    """The status line of the proxy's answer, parsed; HipError when it is not one."""
    status = _STATUS_LINE.fullmatch(line)
    if status is None:
        raise HipError(f"proxy {proxy} gave no HTTP answer to CONNECT {target}: {_shown(line)!r}")
    return status


def check_answer(head: bytes, proxy: HttpProxy, target: str) -> None:
    """Accept the head of the proxy's answer to CONNECT when it opens the tunnel (2xx); HipError
    naming the proxy and its answer otherwise."""
    status_line, *headers = _LINE_BREAK.split(head.decode("latin-1").rstrip("\r\n"))
    status = _status(status_line, proxy, target)
    for line in headers:
        if not _HEADER_LINE.fullmatch(line):
            raise HipError(
                f"proxy {proxy} answered CONNECT {target} with a malformed header line:"
                f" {_shown(line)!r}"
            )
    code = int(status[1])
    if not 200 <= code < 300:
        said = f"{code} {_shown(status[2] or '')}".rstrip()
        hint = ""
        if code == 407:
            hint = (
                " (the credentials given were refused)"
                if proxy.user is not None
                else " (give them in the proxy URL: http://user:password@host:port)"
            )
        raise HipError(f"proxy {proxy} refused the tunnel to {target}: {said}{hint}")


async def read_answer(
    sock: socket.socket, proxy: HttpProxy, target: str, timeout: float = ANSWER_TIMEOUT
) -> None:
    """Read the proxy's answer to CONNECT from `sock`, up to MAX_HEAD bytes and `timeout`
    seconds, and check it opens the tunnel; nothing of the tunnel is read past it."""
    loop = asyncio.get_running_loop()
    data = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while (end := end_of_head(data)) < 0 and len(data) < MAX_HEAD:
                chunk = await loop.sock_recv(sock, MAX_HEAD - len(data))
                if not chunk:
                    said = "before answering" if not data else "in the middle of its answer"
                    raise HipError(
                        f"proxy {proxy} closed the connection {said} to CONNECT {target}"
                    )
                data += chunk
                if b"\n" in data:  # not HTTP at all: said at once, not after the timeout
                    _status(data.split(b"\n", 1)[0].decode("latin-1").rstrip("\r"), proxy, target)
    except TimeoutError:
        raise HipError(
            f"proxy {proxy} did not answer CONNECT {target} within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise HipError(f"proxy {proxy} dropped the connection to CONNECT {target}: {exc}") from None
    if end < 0:
        raise HipError(f"proxy {proxy} answered CONNECT {target} with a head over {MAX_HEAD} bytes")
    check_answer(bytes(data[:end]), proxy, target)
    if len(data) > end:
        raise HipError(
            f"proxy {proxy} sent {len(data) - end} bytes after opening the tunnel to {target},"
            " before it was used"
        )


async def _connect(proxy: HttpProxy) -> socket.socket:
    """A TCP connection to the proxy, trying each of its addresses in turn."""
    loop = asyncio.get_running_loop()
    addresses = await loop.getaddrinfo(proxy.host, proxy.port, type=socket.SOCK_STREAM)
    error: OSError = OSError(f"{proxy.host} has no address")
    for family, kind, protocol, _, address in addresses:
        sock = socket.socket(family, kind, protocol)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
        except BaseException:
            sock.close()
            raise
    raise error


async def open_tunnel(proxy: HttpProxy, host: str, port: int) -> socket.socket:
    """A socket connected through `proxy` to host:port (which only the proxy need resolve)."""
    target = authority(host, port)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            sock = await _connect(proxy)
    except TimeoutError:
        raise HipError(f"cannot reach proxy {proxy}: no answer in {CONNECT_TIMEOUT:g} s") from None
    except OSError as exc:
        raise HipError(f"cannot reach proxy {proxy}: {exc}") from None
    try:
        await asyncio.get_running_loop().sock_sendall(sock, connect_request(proxy, target))
        await read_answer(sock, proxy, target)
    except OSError as exc:
        sock.close()
        raise HipError(f"proxy {proxy} dropped the connection to CONNECT {target}: {exc}") from None
    except BaseException:
        sock.close()
        raise
    return sock


class TunnelConnector(aiohttp.TCPConnector):
    """An aiohttp connector whose every connection is a tunnel through `proxy`: TLS, for an
    https:// or wss:// URL, is then negotiated with the master over it."""

    def __init__(self, proxy: HttpProxy, *, tls: ssl.SSLContext | bool = True) -> None:
        super().__init__(ssl=tls)
        self.proxy = proxy

    async def _create_connection(
        self, req: aiohttp.ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> ResponseHandler:
        host, port = req.url.raw_host, req.port
        assert host is not None and port is not None
        sock = await open_tunnel(self.proxy, host, port)
        tls = self._get_ssl_context(req)
        try:
            _, protocol = await self._loop.create_connection(
                self._factory, sock=sock, ssl=tls, server_hostname=host.rstrip(".") if tls else None
            )
        except ssl.CertificateError as exc:
            sock.close()
            raise aiohttp.ClientConnectorCertificateError(req.connection_key, exc) from exc
        except ssl.SSLError as exc:
            sock.close()
            raise aiohttp.ClientConnectorSSLError(req.connection_key, exc) from exc
        except BaseException:
            sock.close()
            raise
        return protocol
