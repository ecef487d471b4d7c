"""The search indexer: a follower of the master's change feed that keeps the index current, and
answers as a rebuild from the structure files does."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.testing.cluster import Cluster, clusters_in

from . import pages
from .conftest import dlweb
from .indexing import SEARCHABLE_WITHIN, Indexer, answers, hits


def import_warc(cluster: Cluster, warc: Path) -> float:
    """Import with the dlweb command; when it ended (time.monotonic)."""
    done = dlweb("import", "-c", str(cluster.config_path), str(warc))
    assert done.returncode == 0, done.stdout + done.stderr
    return time.monotonic()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    (tmp_path / "cluster").mkdir()
    with clusters_in(tmp_path / "cluster") as make:
        yield make(nodes=1, replicas=1)


def test_an_import_is_searchable_within_10_s_and_a_killed_indexer_resumes_where_it_stopped(
    cluster: Cluster, tmp_path: Path
) -> None:
    museum_2019, *later = pages.CAPTURES
    first = pages.write_warc(tmp_path / "first.warc.gz", later)
    second = pages.write_warc(tmp_path / "second.warc.gz", [museum_2019])
    folder = tmp_path / "index"
    indexer = Indexer(cluster, folder).start()
    try:
        sentence = f'"{pages.SENTENCE}"'
        ended = import_warc(cluster, first)
        indexer.wait_until(lambda: bool(hits(folder, sentence)), "hit for the sentence")
        assert time.monotonic() - ended < SEARCHABLE_WITHIN
        # Unchanged since 2020 as far as the archive knows: one version, from 2020.
        assert hits(folder, sentence) == [(pages.MUSEUM, "2020-02-01T10:00:00Z")]

        indexer.kill()
        # An older capture of the same text, imported while no indexer runs: the version now
        # begins in 2019, and its document of 2020 must go.
        import_warc(cluster, second)
        indexer.start()
        moved = [(pages.MUSEUM, "2019-03-01T10:00:00Z")]
        indexer.wait_until(lambda: hits(folder, sentence) == moved, "version moved to 2019")
    finally:
        indexer.stop()
    rebuilt = tmp_path / "rebuilt"
    done = dlweb("search", "rebuild", "-c", str(cluster.config_path), "--index", str(rebuilt))
    assert done.returncode == 0, done.stdout + done.stderr
    incremental, whole = answers(folder), answers(rebuilt)
    assert incremental == whole
    assert whole["documents"] == 9 and whole["backlinks"] and whole["similar"]["similar"]
    assert len(whole["urls"]) == 10  # every URL captured, the logo and the redirect too


def test_a_new_capture_replaces_nothing_but_adds_its_version(
    cluster: Cluster, tmp_path: Path
) -> None:
    *earlier, menu_copy = pages.CAPTURES
    folder = tmp_path / "index"
    import_warc(cluster, pages.write_warc(tmp_path / "first.warc.gz", earlier))
    indexer = Indexer(cluster, folder).start()  # built from the archive at its start
    try:
        assert hits(folder, '"grilled sardines"') == [(pages.MENU, "2020-03-03T12:00:00Z")]
        import_warc(cluster, pages.write_warc(tmp_path / "second.warc.gz", [menu_copy]))
        both = {(pages.MENU, "2020-03-03T12:00:00Z"), (pages.MENU_COPY, "2020-03-04T12:00:00Z")}
        indexer.wait_until(lambda: set(hits(folder, '"grilled sardines"')) == both, "the copy")
    finally:
        indexer.stop()
    assert "Traceback" not in indexer.log()
