"""The fixture of the scheduler tests that run a campaign on the scheduler's test web."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.testing.cluster import Cluster
from tests.crawler.scheduler.test_campaign import WebCampaign
from tests.crawler.scheduler.web import serve_web


@pytest.fixture
def campaign(cluster_factory: Callable[..., Cluster], tmp_path: Path) -> Iterator[WebCampaign]:
    cluster = cluster_factory(nodes=1, replicas=1)
    with serve_web(tmp_path) as web:
        running = WebCampaign(cluster, tmp_path, web.resolve_args(), web=web)
        try:
            yield running
        finally:
            running.stop()
