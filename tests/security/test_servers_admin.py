"""Admin work against admin reads, on a real cluster: every request that starts or changes work
(a deep fsck, a scrub, a rebalance, a node's state, a write) needs the cluster token whatever
its method, while reads that only report stay open; the CLI sends the token. The cluster's
servers run on short HTTP timeouts, which its HIP connections outlive."""

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from deploy.testing.cluster import Cluster, clusters_in
from tests.deploy.run_dlweb import dlweb_json
from tests.security.servers import (
    BAD_AUTHORIZATIONS,
    IDLE_TIMEOUT,
    READ_TIMEOUT,
    body_of,
    exchange,
    status_of,
    with_short_timeouts,
)

NAME = "0" * 64
# (server, method, path, JSON body) of every route that starts or changes work.
WORK: list[tuple[str, str, str, object]] = [
    ("master", "GET", "/admin/fsck?deep=1", None),
    ("master", "POST", "/admin/scrub", {}),
    ("master", "POST", "/admin/scrub", {"node": "node1"}),
    ("master", "POST", "/admin/rebalance", {"apply": True}),
    ("master", "POST", "/admin/rebalance", {"stop": True}),
    ("master", "POST", "/admin/nodes/node1/state", {"state": "draining"}),
    ("master", "POST", "/admin/nodes/node1/state", {"state": "read-only"}),
    ("master", "POST", "/admin/nodes/node1/state", {"state": "alive"}),
    ("node", "POST", "/scrub", None),
    ("node", "PUT", f"/content/{NAME}", None),
    ("node", "DELETE", f"/content/{NAME}", None),
    ("node", "POST", f"/content/{NAME}/check", None),
    ("node", "POST", "/contents", None),
    ("node", "POST", "/contents/pack", {"names": [NAME]}),
    ("node", "PUT", f"/structure/{NAME}", None),
    ("node", "POST", f"/structure/{NAME}", {}),
    ("node", "DELETE", f"/structure/{NAME}", None),
    ("node", "POST", "/structures", {"files": []}),
]
# Reads that only report, open to anyone who reaches the server.
REPORTS: list[tuple[str, str]] = [
    ("master", "/status"),
    ("master", "/admin/fsck"),
    ("master", "/admin/fsck?deep=0"),
    ("master", "/admin/rebalance"),
    ("master", f"/locate/content/{NAME}"),
    ("master", "/structures"),
    ("node", "/status"),
    ("node", "/metrics"),
    ("node", "/inventory"),
    ("index", "/status"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with clusters_in(tmp_path_factory.mktemp("admin")) as make:
        made = make(nodes=1, replicas=1, start=False)
        made.config = with_short_timeouts(made.config_path)
        yield made.start(nodes=1)


def base(cluster: Cluster, server: str) -> str:
    service = {"master": cluster.master, "index": cluster.index}.get(server)
    return service.url if service is not None else cluster.nodes["node1"].url


def status(url: str, method: str, body: object = None, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=READ_TIMEOUT) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_every_route_that_starts_work_needs_the_token_and_reports_stay_open(
    cluster: Cluster,
) -> None:
    unguarded = [
        (server, method, path, code)
        for server, method, path, body in WORK
        for token in (None, "0" * 64)
        if (code := status(base(cluster, server) + path, method, body, token)) not in (401, 403)
    ]
    assert unguarded == []
    closed = [
        (server, path, code)
        for server, path in REPORTS
        if (code := status(base(cluster, server) + path, "GET")) != 200
    ]
    assert closed == []
    assert [node["state"] for node in cluster.status()["nodes"]] == ["alive"]


def test_a_deep_fsck_from_the_cli_sends_the_token(cluster: Cluster) -> None:
    report = dlweb_json("admin", "fsck", "--deep", "-c", str(cluster.config_path))
    assert report["ok"] is True and report["orphans"] == 0


@pytest.mark.parametrize(
    "request_line", [b"GET /admin/fsck?deep=1", b"POST /admin/scrub"], ids=["fsck", "scrub"]
)
def test_authorization_bytes_that_are_no_token_get_401_from_the_master(
    cluster: Cluster, request_line: bytes
) -> None:
    assert cluster.master is not None
    for value in BAD_AUTHORIZATIONS:
        answer = exchange(
            cluster.master.port,
            request_line + b" HTTP/1.1\r\nHost: master\r\nAuthorization: " + value + b"\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n",
        )
        assert status_of(answer) == 401, (value, answer[:300])
        assert "cluster token" in json.loads(body_of(answer))["error"]
    assert "Traceback" not in cluster.master.log()


def test_hip_connections_outlive_the_idle_timeout(cluster: Cluster) -> None:
    assert cluster.master is not None
    time.sleep(IDLE_TIMEOUT * 3)  # three idle timeouts with no HTTP request on the connections
    log = cluster.master.log()
    assert log.count(" connected from ") == 2, log  # the storage node and the index node
    assert " disconnected" not in log
    assert [node["state"] for node in cluster.status()["nodes"]] == ["alive"]
