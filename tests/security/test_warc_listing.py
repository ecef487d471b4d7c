"""A capture of any date a structure file holds is listed wherever captures are listed: by
`dlweb captures`, the captures harbor (JSON and calendar) and the CDX API.

Structure files written before imports refused dates outside 1970 to 2999 may hold a capture of
year 1 (a WARC dated 0001-01-01); the lists asked the storage node for the captures from the year
1000 on, and missed it. Such a record is made here as it was then: appended through the storage
node with the cluster token (the index node now refuses it).
"""

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from archive.cluster import ClusterClient
from archive.timestamps import MIN_TIME
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster
from tests.exchange.conftest import dlweb
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.proxy.conftest import Proxy, Version, archive, header_block, start_proxy

URL = "http://old.example/page"
LATER = Version(URL, "2020-05-01T00:00:00Z", 200, header_block(200, "OK"), b"a page")


@pytest.fixture(scope="module")
def cluster(module_cluster_factory: Callable[..., Cluster]) -> Cluster:  # noqa: F811
    """A cluster holding a capture of URL in 2020, and one of year 1 beside it."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, [LATER]))

    async def stored() -> dict[str, object]:
        async with ClusterClient(cluster.config) as client:
            (capture,) = await client.captures(URL)
        return {**capture.to_json(), "time": MIN_TIME}

    body = {"url": URL, "records": [asyncio.run(stored())]}
    (node,) = cluster.nodes.values()
    request = urllib.request.Request(
        f"{node.url}/structure/{structure_name(URL)}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {cluster.config.write_token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert json.load(answer)["added"] == 1
    return cluster


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    work = tmp_path_factory.mktemp("proxy")
    started = start_proxy(cluster, work / "data", work / "proxy.log")
    yield started
    started.stop()


def through(proxy: Proxy, url: str) -> tuple[int, str]:
    """The status and text of a GET through the proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    try:
        with opener.open(url, timeout=30) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_dlweb_captures_lists_a_capture_of_year_1(cluster: Cluster) -> None:
    done = dlweb("captures", "-c", str(cluster.config_path), URL)
    assert done.returncode == 0, done.stderr
    dates = [line.split()[0] for line in done.stdout.splitlines()]
    assert dates == ["0001-01-01T00:00:00Z", "2020-05-01T00:00:00Z"]


def test_the_captures_harbor_and_the_cdx_api_list_a_capture_of_year_1(proxy: Proxy) -> None:
    status, text = through(proxy, f"http://captures.dlweb/?url={quote(URL, safe='')}&format=json")
    assert status == 200
    listed = [capture["date"] for capture in json.loads(text)["captures"]]
    assert listed == ["0001-01-01T00:00:00Z", "2020-05-01T00:00:00Z"]
    status, text = through(proxy, f"http://api.dlweb/cdx?url={quote(URL, safe='')}")
    assert status == 200
    assert [line.split()[1] for line in text.splitlines()] == ["00010101000000", "20200501000000"]
    # The calendar counts it, and shows its year.
    status, text = through(proxy, f"http://captures.dlweb/?url={quote(URL, safe='')}&year=0001")
    assert status == 200, text
    assert "2 captures on 2 days" in text and 'data-year="1"' in text
