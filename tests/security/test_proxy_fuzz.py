"""Raw bytes of request heads, made up by hypothesis, sent on sockets to a real proxy where the
operator allows the live web: each gets a well-formed answer below 500 or a closed connection,
nothing reaches the canary server the heads name, the proxy logs no error of its own, stays small
and replays an archived page afterwards."""

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deploy.testing.cluster import Cluster, clusters_in
from tests.proxy.conftest import Proxy, Version, archive, header_block, start_proxy
from tests.security.conftest import Canary
from tests.security.heads import heads
from tests.security.servers import with_short_timeouts
from tests.security.test_servers_fuzz import answer_to, check_answer, rss

PAGE = "http://archived.example/page"
MAX_GROWTH = 64 * 1024 * 1024  # bytes of memory the proxy may gain over the whole run


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    folder = tmp_path_factory.mktemp("fuzz")
    with clusters_in(folder) as make:
        cluster: Cluster = make(nodes=1, replicas=1, start=False)
        cluster.config = with_short_timeouts(cluster.config_path)
        cluster.start(1)
        page = Version(
            PAGE, "2020-01-01", 200, header_block(200, "OK", ("Content-Type", "text/html")), b"ok"
        )
        asyncio.run(archive(cluster, [page]))
        started = start_proxy(cluster, folder / "proxy", folder / "proxy.log", "--allow-live")
        yield started
        started.stop()


def proxy_targets(canary: Canary) -> st.SearchStrategy[bytes]:
    """Request targets for a proxy: the canary in every form, the harbors, the archived page."""
    at = canary.address.encode()
    return st.one_of(
        st.sampled_from(
            [
                b"http://" + at + b"/",
                b"http://" + at + b"/admin?x=\xff",
                at,
                b"https://" + at + b"/",
                b"http://[::ffff:127.0.0.1]:" + str(canary.port).encode() + b"/",
                PAGE.encode(),
                b"http://api.dlweb/date",
                b"http://date.dlweb/set?at=2001&back=http%3A%2F%2F" + at + b"%0d%0aX:1",
                b"http://search.dlweb/?q=" + b"(" * 300,
                b"http://api.dlweb/cdx?url=a&filter=~url:(a|a)*b",
                b"http://captures.dlweb/?url=http://" + at + b"&format=link",
                b"http://cert.dlweb/",
                b"/status",
                b"*",
            ]
        ),
        st.binary(max_size=120).map(lambda raw: b"http://" + at + b"/" + raw),
    )


def test_made_up_heads_get_a_4xx_or_a_close_and_reach_nothing(proxy: Proxy, canary: Canary) -> None:
    memory_before = rss(proxy.process.pid)
    before = canary.connections

    @settings(
        max_examples=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(heads(proxy_targets(canary)))
    def answered(data: bytes) -> None:
        check_answer(data, answer_to(proxy.port, data))

    answered()
    assert canary.connections == before
    good = f"GET {PAGE} HTTP/1.1\r\nHost: archived.example\r\nConnection: close\r\n\r\n"
    assert answer_to(proxy.port, good.encode()).startswith(b"HTTP/1.1 200")
    log = proxy.log.read_text()
    assert "error of the proxy" not in log and "Traceback" not in log, log[-3000:]
    assert rss(proxy.process.pid) - memory_before < MAX_GROWTH
