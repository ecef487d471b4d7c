"""The master's HTTP interface refuses bad requests with a clear JSON error, never a traceback."""

import json
import urllib.error
import urllib.request

import pytest

from deploy.testing.cluster import Cluster


def request(
    cluster: Cluster, method: str, path: str, body: bytes | None = None, token: str | None = None
) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(
        f"http://127.0.0.1:{cluster.master_port}{path}", data=body, headers=headers, method=method
    )
    try:
        with urllib.request.urlopen(req) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


@pytest.fixture
def cluster(cluster_factory) -> Cluster:
    return cluster_factory(nodes=1, replicas=1)


@pytest.mark.parametrize(
    ("method", "path", "body", "with_token", "status", "message"),
    [
        ("POST", "/admin/scrub", b"{}", False, 401, "need the cluster token"),
        ("POST", "/admin/nodes/node1/state", b"{}", False, 401, "need the cluster token"),
        ("POST", "/admin/nodes/node1/state", b"{nope", True, 400, "not valid JSON"),
        ("POST", "/admin/nodes/node1/state", b"[1]", True, 400, "must be a JSON object"),
        ("POST", "/admin/nodes/node1/state", b'{"state": "dead"}', True, 400, "must be one of"),
        ("POST", "/admin/nodes/node9/state", b'{"state": "alive"}', True, 404, "no node 'node9'"),
        ("POST", "/admin/rebalance", b'{"apply": "yes"}', True, 400, '{"apply": true}'),
        (
            "POST",
            "/admin/rebalance",
            b'{"apply": true, "files_per_s": -1}',
            True,
            400,
            "files_per_s",
        ),
        ("GET", "/locate/video/" + "a" * 64, None, False, 400, "kind must be content or structure"),
        ("GET", "/locate/content/../../etc", None, False, 404, "Not Found"),
        ("GET", "/locate/content/" + "A" * 64, None, False, 400, "64 lowercase hex"),
    ],
)
def test_bad_requests_are_refused_clearly(
    cluster: Cluster,
    method: str,
    path: str,
    body: bytes | None,
    with_token: bool,
    status: int,
    message: str,
) -> None:
    token = cluster.config.write_token if with_token else None
    code, answer = request(cluster, method, path, body, token)
    assert code == status
    assert message in answer["error"]


def test_a_wrong_token_is_refused(cluster: Cluster) -> None:
    code, answer = request(cluster, "POST", "/admin/scrub", b"{}", "0" * 64)
    assert (code, answer["error"]) == (403, "wrong cluster token")


def test_status_page_for_a_browser(cluster: Cluster) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{cluster.master_port}/status", headers={"Accept": "text/html"}
    )
    with urllib.request.urlopen(req) as answer:
        page = answer.read().decode()
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "<table>" in page and "node1" in page
