"""Fixtures for the import and export tests: the real cluster, the loopback test site, the dlweb
command."""

import subprocess
import sys

from tests.archive.warc.conftest import site  # noqa: F401  (a fixture used by these tests)
from tests.master.conftest import cluster_factory  # noqa: F401  (a fixture used by these tests)

COMMAND_TIMEOUT = 120


def dlweb(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the dlweb command as a user does."""
    return subprocess.run(
        [sys.executable, "-m", "dlweb", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
