"""Free loopback ports, each test worker's from a slice of its own (why: `deploy/ports.py`)."""

import itertools
import os
import random
import socket
import threading

from deploy.ports import TOOLKIT_PORTS, port_is_free
from deploy.ports import free_port as _free_port

SLICES = 10
SLICE = len(TOOLKIT_PORTS) // SLICES


def _slice() -> range:
    """This process's ports: pytest-xdist worker gwN's slice N, else one of the last two."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) % (SLICES - 2) if worker[2:].isdigit() else SLICES - 2 + os.getpid() % 2
    start = TOOLKIT_PORTS.start + index * SLICE
    return range(start, start + SLICE)


def _in_turn(ports: range) -> "itertools.cycle[int]":
    """The ports over and over, from a random one on, so a worker started anew begins elsewhere."""
    first = random.randrange(len(ports))
    return itertools.cycle(itertools.chain(ports[first:], ports[:first]))


_turn = _in_turn(_slice())
_lock = threading.Lock()


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port of 127.0.0.1 free at this moment, for TCP (or for UDP with `socket.SOCK_DGRAM`),
    none handed out twice in a row of SLICE calls."""
    with _lock:
        return _free_port("127.0.0.1", kind, itertools.islice(_turn, SLICE))


def free_block(size: int) -> int:
    """The first of `size` consecutive ports of 127.0.0.1 free at this moment, for a
    `--port-base`."""
    with _lock:
        for _ in range(SLICE):
            block = list(itertools.islice(_turn, size))
            if block == list(range(block[0], block[0] + size)) and all(
                port_is_free("127.0.0.1", port) for port in block
            ):
                return block[0]
    raise OSError(f"no {size} consecutive free ports in {_slice()}")
