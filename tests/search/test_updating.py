"""Updates of an index cut short at their one unsafe moment: after tantivy committed and before
the catalog recorded what it holds (the indexer killed there). The next update must redo those
files whole, whatever changed in the archive meanwhile, so that the index holds each version of
the archive once and no other."""

import dataclasses
import gc
from pathlib import Path

import pytest
import tantivy

from archive.cluster import ClusterClient
from archive.structure import Capture
from archive.structure_walk import walk_structures
from archive.timestamps import to_micros
from search.catalog import Catalog
from search.index import create, mark_built, open_index
from search.updating import FileState, Updater, page_versions

from . import pages
from .conftest import Archive


class Cut(Exception):
    """The indexer dying between tantivy's commit and the catalog's."""


async def archived_files(client: ClusterClient) -> list[FileState]:
    files: list[FileState] = []

    def keep(name: str, url: str | None, captures: list[Capture]) -> None:
        files.append(FileState(name, url, captures))

    await walk_structures(client, keep)
    return sorted(files, key=lambda state: state.name)


def cut_after_tantivy(updater: Updater) -> None:
    """Make the updater's next commit stop once tantivy has committed."""

    def record(*_: object) -> None:
        raise Cut

    updater.catalog.record = record  # type: ignore[method-assign]


def close(updater: Updater) -> None:
    """Close an updater as a killed process leaves it: its writer's lock let go, nothing more."""
    updater.close()
    del updater.writer
    gc.collect()


def moved_earlier(state: FileState) -> FileState:
    """The file as it reads once an older capture of each version is imported: every version
    begins a second earlier (and has another term in the index)."""
    captures = [dataclasses.replace(c, time=c.time - 1_000_000) for c in state.captures]
    return FileState(state.name, state.url, captures)


def documents(folder: Path) -> list[tuple[str, int]]:
    """The URL and time of every document of an index."""
    searcher = open_index(folder).searcher()
    found = searcher.search(tantivy.Query.all_query(), limit=10_000).hits
    return sorted(
        (searcher.doc(address)["url"][0], to_micros(searcher.doc(address)["time"][0]))
        for _, address in found
    )


def versions_of(files: list[FileState]) -> list[tuple[str, int]]:
    """The URL and time of every version the index keeps (the logo is no text)."""
    return sorted(
        (v.url, v.capture.time)
        for state in files
        for v in page_versions(state)
        if v.url != pages.LOGO
    )


async def test_an_update_cut_between_tantivy_and_the_catalog_is_redone_whole(
    archive: Archive, tmp_path: Path
) -> None:
    folder = tmp_path / "index"
    create(folder)
    mark_built(folder, {})
    async with ClusterClient(archive.cluster.config) as client:
        files = await archived_files(client)
        half = len(files) // 2
        updater = Updater(open_index(folder), folder, client)
        await updater.apply(files[:half])
        updater.commit((None, 1))
        # The next update adds the other half and finds the first unchanged; it is cut.
        await updater.apply(files)
        cut_after_tantivy(updater)
        with pytest.raises(Cut):
            updater.commit((None, 2))
        close(updater)
        # tantivy holds the second half; the catalog lists every page of the update as pending.
        assert documents(folder) == versions_of(files)
        pending = Catalog(folder).pending_of(state.name for state in files)
        assert set(pending) == {state.name for state in files if page_versions(state)}
        # Meanwhile the second half's versions moved earlier: the update made again must drop
        # the documents the cut one added, which the catalog never recorded.
        now = files[:half] + [moved_earlier(state) for state in files[half:]]
        updater = Updater(open_index(folder), folder, client)
        try:
            await updater.apply(now)
            updater.commit((None, 2))
        finally:
            close(updater)
    assert documents(folder) == versions_of(now) != versions_of(files)
    catalog = Catalog(folder)
    assert catalog.pending_of(state.name for state in files) == {}
    assert catalog.position() == (None, 2)
