"""Fixtures for the crawler tests: the local test web, a real cluster, the real command."""

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.testing.cluster import Cluster
from tests.crawler.sites import Sites, serve_sites
from tests.master.conftest import (  # noqa: F401  (fixtures used here)
    cluster_factory,
    module_cluster_factory,
)
from tests.proxy.conftest import proxy_factory  # noqa: F401  (a fixture used here)

CRAWL_TIMEOUT = 300


@dataclass
class Crawl:
    """One finished `dlweb crawl`: its exit status, output and the reports it wrote."""

    returncode: int
    output: str
    reports: list[dict[str, Any]]

    @property
    def report(self) -> dict[str, Any]:
        assert len(self.reports) == 1, self.output
        return self.reports[0]


@pytest.fixture
def sites(tmp_path: Path) -> Iterator[Sites]:
    with serve_sites(tmp_path) as web:
        yield web


def run_crawler(
    cluster: Cluster, report: Path, work: Path, *args: str, check: bool = True
) -> Crawl:
    """`python -m crawler` into the cluster, its reports written to `report`."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawler",
            "-c",
            str(cluster.config_path),
            "--report",
            str(report),
            "--work",
            str(work),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
    )
    output = done.stdout + done.stderr
    if check:
        assert done.returncode == 0, output
    reports = json.loads(report.read_text())["sites"] if report.exists() else []
    return Crawl(done.returncode, output, reports)


def resolving(sites: Sites) -> list[str]:
    """The crawler's --resolve options that send every test host to the test web."""
    return [arg for host in sites.resolve_args() for arg in ("--resolve", host)]


@pytest.fixture
def crawl(tmp_path: Path, sites: Sites) -> Callable[..., Crawl]:
    """Run `python -m crawler` against the test web, every test host resolved to its address."""
    runs = 0

    def run(cluster: Cluster, *args: str, check: bool = True) -> Crawl:
        nonlocal runs
        runs += 1
        report = tmp_path / f"report-{runs}.json"
        return run_crawler(
            cluster, report, tmp_path / "crawl-work", *resolving(sites), *args, check=check
        )

    return run
