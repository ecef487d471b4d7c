"""Free loopback ports."""

import socket


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port of 127.0.0.1 free at this moment, for TCP (or for UDP with `socket.SOCK_DGRAM`)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
