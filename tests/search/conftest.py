"""The archive the search tests share: a one-node cluster with the pages of pages.py imported,
and their search index built once for the package (the text search, backlinks and similar
pages all read it)."""

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.testing.cluster import Cluster, clusters_in
from search.index import open_index, search

from . import pages

COMMAND_TIMEOUT = 60


def dlweb(*args: str, module: str = "dlweb") -> subprocess.CompletedProcess[str]:
    """Run the dlweb command (or `python -m search`) as a user does."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


@dataclass
class Archive:
    cluster: Cluster
    index: Path

    def rebuild(self) -> str:
        """Rebuild the index with the dlweb command; what it printed."""
        config = str(self.cluster.config_path)
        done = dlweb("search", "rebuild", "-c", config, "--index", str(self.index))
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def query(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """The hits of a query, read in this process (as the CLI reads them)."""
        return [hit.as_json() for hit in search(open_index(self.index), query, limit).hits]


@pytest.fixture(scope="package")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archive]:
    """A one-node cluster with the pages imported, and their search index built."""
    with clusters_in(tmp_path_factory.mktemp("cluster")) as make:
        cluster = make(nodes=1, replicas=1)
        folder = tmp_path_factory.mktemp("search")
        warc = pages.write_warc(folder / "pages.warc.gz")
        done = dlweb("import", "-c", str(cluster.config_path), str(warc))
        assert done.returncode == 0, done.stdout + done.stderr
        built = Archive(cluster, folder / "index")
        summary = built.rebuild()
        # Museum 2019 and 2021 (2020 is unchanged), the French page, the notes, the blog, the
        # essay and its copy, the menu and its copy; the logo is no text, the redirect no page.
        assert "indexed 9 page versions of 10" in summary, summary
        assert "1 not HTML or text" in summary, summary
        yield built
