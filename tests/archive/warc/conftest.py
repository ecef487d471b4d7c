"""Fixtures for the WARC tests: the real cluster, the loopback test site, the dlweb command."""

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.master.conftest import cluster_factory  # noqa: F401  (a fixture used by these tests)

from .site import TestSite

COMMAND_TIMEOUT = 120


def dlweb(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the dlweb command as a user does."""
    return subprocess.run(
        [sys.executable, "-m", "archive", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


@pytest.fixture(scope="module")
def site() -> Iterator[TestSite]:
    with TestSite() as running:
        yield running
