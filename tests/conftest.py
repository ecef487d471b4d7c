"""Fixtures that start real dlweb processes on loopback and wait until they answer (the starters
themselves are in deploy/testing, which the benchmarks use as well)."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from archive.config import ClusterConfig
from deploy.testing.cluster import NodeProcess, write_cluster_config
from deploy.testing.ports import free_port

if TYPE_CHECKING:
    from deploy.testing.postgres import PostgresServer
    from tests.stream_recording import Recorded


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[Path, ClusterConfig]:
    path = tmp_path / "dlweb.yaml"
    return path, write_cluster_config(path)


@pytest.fixture
def node_factory(tmp_path: Path, cluster: tuple[Path, ClusterConfig]) -> Iterator[object]:
    started: list[NodeProcess] = []

    def make(name: str = "n1", config_path: Path | None = None, *args: str) -> NodeProcess:
        node = NodeProcess(
            tmp_path / name,
            config_path or cluster[0],
            free_port(),
            tmp_path / f"{name}.log",
            extra_args=list(args),
        )
        started.append(node)
        return node.start()

    yield make
    for node in started:
        if node.process is not None:
            node.stop()


# The longest groups (1.5 to 4 minutes each on a loaded 2-core machine), started first under xdist
# (with --no-loadscope-reorder, which keeps this order): a long group left for the end would keep
# one worker busy while the others wait.
LONG_GROUPS = (
    "tests/crawler/scheduler/test_campaign.py",
    "tests/crawler/test_crawl.py",
    "tests/proxy/test_proxy.py",
    "tests/exchange/test_export.py",
    "tests/exchange/test_import.py",
    "stream_recording",
    "tests/master/test_cluster.py",
    "tests/crawler/test_browser_crawl.py",
    "tests/test_soak.py",
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's `--dist loadgroup` (pyproject.toml runs the tests on several
    workers): a test marked `xdist_group` keeps its group; one that reads `stream_recording` goes
    with the others that do, so that a single worker records the streams, once; any other test
    goes with the rest of its module, whose module fixtures (a cluster, a test web) then start
    once, on one worker, as they do without xdist."""
    groups: dict[pytest.Item, str] = {}
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker:
            groups[item] = str(marker.args[0] if marker.args else marker.kwargs.get("name"))
            continue
        if "stream_recording" in getattr(item, "fixturenames", ()):
            groups[item] = "stream_recording"
        else:
            groups[item] = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(groups[item]))
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike
        last = len(LONG_GROUPS)
        items.sort(key=lambda i: LONG_GROUPS.index(groups[i]) if groups[i] in LONG_GROUPS else last)


@pytest.fixture(scope="session")
def stream_recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator["Recorded"]:
    """Live streams recorded for a minute (tests/stream_recording.py), for every test that
    reads them back."""
    from tests.stream_recording import record_streams

    with record_streams(tmp_path_factory.mktemp("streams")) as recorded:
        yield recorded


@pytest.fixture(scope="session")
def postgres() -> Iterator["PostgresServer"]:
    """This worker's PostgreSQL server (deploy/testing/postgres.py), started at its first use and
    removed at the end of the session."""
    from deploy.testing.postgres import PostgresServer

    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.remove()


@pytest.fixture
def postgres_url(postgres: "PostgresServer") -> str:
    """A new empty database on this worker's server; its URL. The server is started again if an
    earlier test left it stopped."""
    return postgres.start().create_database()
