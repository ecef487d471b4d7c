"""Raw bytes of request heads, made up by hypothesis, sent on sockets to a real storage node and
a real master: each gets a well-formed HTTP answer below 500, or a closed connection; the server
logs no traceback, stays small, and answers a good request afterwards."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from deploy.testing.cluster import Cluster, clusters_in
from tests.security.heads import CLUSTER_TARGETS, heads
from tests.security.servers import HEAD_TIMEOUT, connect, with_short_timeouts

# Each answer comes within this many seconds (a cut head within the head timeout), or it hangs.
ANSWER_TIMEOUT = HEAD_TIMEOUT + 2.5
MAX_GROWTH = 64 * 1024 * 1024  # bytes of memory a server may gain over the whole run


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A master and a storage node, on short HTTP timeouts."""
    with clusters_in(tmp_path_factory.mktemp("fuzz")) as make:
        made = make(nodes=1, replicas=1, start=False)
        made.config = with_short_timeouts(made.config_path)
        made.start_master()
        made.add_node("node1")
        yield made


def answer_to(port: int, data: bytes) -> bytes:
    """The head of the server's answer to `data`, or b"" if it closed the connection without
    one; fails if neither comes in time."""
    with connect(port) as sock:
        sock.settimeout(ANSWER_TIMEOUT)
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return b""  # refused before all of it was sent
        received = b""
        try:
            while b"\r\n\r\n" not in received and (chunk := sock.recv(65536)):
                received += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            raise AssertionError(
                f"no answer, and the connection still open: {data[:300]!r}"
            ) from None
    return received.partition(b"\r\n\r\n")[0]


def check_answer(data: bytes, head: bytes) -> None:
    if not head:
        return
    assert head.startswith(b"HTTP/") and head[5:6].isdigit(), (data[:300], head[:300])
    status = int(head.split(b" ", 2)[1])
    assert 100 <= status < 500, (data[:300], head[:300])


def rss(pid: int) -> int:
    """The resident memory of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def well_after(port: int) -> bool:
    """Whether the server still answers a good request with 200."""
    head = answer_to(port, b"GET /status HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n")
    return head.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("server", ["node", "master"])
def test_made_up_heads_get_a_4xx_or_a_close_never_a_500_nor_a_traceback(
    cluster: Cluster, server: str
) -> None:
    service = cluster.master if server == "master" else cluster.nodes["node1"]
    assert service is not None and service.process is not None
    port, pid = service.port, service.process.pid
    memory_before = rss(pid)

    @settings(
        max_examples=300,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(heads(CLUSTER_TARGETS))
    def answered(data: bytes) -> None:
        check_answer(data, answer_to(port, data))

    answered()
    assert well_after(port)
    log = service.log()
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    assert rss(pid) - memory_before < MAX_GROWTH
