"""Ports for our own servers, chosen below the kernel's ephemeral range.

A port found by binding port 0 comes from the ephemeral range (`net.ipv4.ip_local_port_range`,
32768-60999 on Linux), the range every outgoing connection on the machine draws its local port
from too. Handed to a server that binds it a moment later, or recorded for the next start of a
cluster, such a port can be taken in between by any client connection, and the server then fails
with "address already in use". So ports are chosen from 10000-32767 instead and checked free by
binding them: `dlweb up` draws from 20000-32767 at random, the test toolkit from 10000-19999,
each test worker from a slice of its own.
"""

import random
import socket
from collections.abc import Iterable

PRODUCT_PORTS = range(20000, 32768)
TOOLKIT_PORTS = range(10000, 20000)


def port_is_free(host: str, port: int, kind: int = socket.SOCK_STREAM) -> bool:
    """Whether `port` of `host` can be bound now (by TCP, or UDP with `socket.SOCK_DGRAM`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, kind) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(
    host: str = "127.0.0.1", kind: int = socket.SOCK_STREAM, candidates: Iterable[int] = ()
) -> int:
    """The first free port of `host` among `candidates`, else one drawn from PRODUCT_PORTS."""
    for port in candidates:
        if port_is_free(host, port, kind):
            return port
    for _ in range(1000):
        port = random.choice(PRODUCT_PORTS)
        if port_is_free(host, port, kind):
            return port
    raise OSError(f"no free port of {host or 'any address'} in {PRODUCT_PORTS}")
