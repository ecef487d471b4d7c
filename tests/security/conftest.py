"""What the attack tests share: a canary server that counts every connection made to it, so that a
test can prove that nothing reached an upstream."""

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.proxy.conftest import proxy_factory, sessions  # noqa: F401  (fixtures used here)


@dataclass
class Canary:
    """A TCP server on loopback that answers any request with a page saying so, and keeps what
    each connection sent."""

    port: int
    received: list[bytes] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len(self.received)


BODY = b"the canary was reached"
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    server = socket.create_server(("127.0.0.1", 0))
    found = Canary(server.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    found.received.append(connection.recv(65536))
                    connection.sendall(ANSWER)
                except OSError:
                    found.received.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield found
    server.close()
    thread.join(timeout=5)
