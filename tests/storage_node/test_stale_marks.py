"""A storage node's stale marks on its structure copies: set for files it holds, kept against a
copy read before the last mark, cleared by a later copy, an append to the active copy or the
file's removal, and set on a copy created without the older records."""

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archive.structure import Capture
from archive.urlkey import structure_name
from storage_node.node import STRUCTURE, Copy, StorageNode

URL = "http://example.org/page"
NAME = structure_name(URL)


def capture(time: int) -> Capture:
    return Capture(time, hashlib.sha256(b"%d" % time).hexdigest(), "0" * 64, 200)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[StorageNode]:
    made = StorageNode(tmp_path / "node", "n1")
    await made.append_captures(NAME, URL, [capture(1)])
    yield made
    made.close()


async def test_only_held_structure_files_are_marked(node: StorageNode) -> None:
    assert node.mark_stale([NAME, structure_name("http://example.org/other")]) == 1
    assert node.is_stale(STRUCTURE, NAME)
    assert not node.is_stale("content", NAME)
    assert node.stale_marked == 1


async def test_a_copy_read_before_the_last_mark_leaves_it(node: StorageNode) -> None:
    node.mark_stale([NAME])
    read_after = node.stale_marked
    node.mark_stale([NAME])  # more records appended while the copy was read
    node.unmark_stale(NAME, read_after)
    assert node.is_stale(STRUCTURE, NAME)
    node.unmark_stale(NAME, node.stale_marked)
    assert not node.is_stale(STRUCTURE, NAME)


async def test_an_append_to_another_copy_leaves_its_mark_as_it_was(node: StorageNode) -> None:
    node.mark_stale([NAME])
    assert await node.append_in_volumes([(NAME, [capture(2)])], Copy.OTHER) == {NAME: 1}
    assert await node.append_captures(NAME, URL, [capture(3)], Copy.PARTIAL) == (1, False)
    assert node.is_stale(STRUCTURE, NAME)


async def test_a_copy_created_without_the_older_records_is_stale(node: StorageNode) -> None:
    other, partial, whole = (structure_name(f"http://example.org/{n}") for n in "abc")
    await node.create_structures([(partial, "http://example.org/b", [capture(1)])], Copy.PARTIAL)
    await node.create_structures([(whole, "http://example.org/c", [capture(1)])], Copy.OTHER)
    await node.append_captures(other, "http://example.org/a", [capture(1)], Copy.PARTIAL)
    assert node.is_stale(STRUCTURE, partial) and node.is_stale(STRUCTURE, other)
    assert not node.is_stale(STRUCTURE, whole)


async def test_an_append_clears_the_mark_even_with_nothing_new(node: StorageNode) -> None:
    node.mark_stale([NAME])
    assert await node.append_captures(NAME, URL, [capture(1)]) == (0, False)
    assert not node.is_stale(STRUCTURE, NAME)
    node.mark_stale([NAME])
    assert await node.append_in_volumes([(NAME, [capture(2)])]) == {NAME: 1}
    assert not node.is_stale(STRUCTURE, NAME)


async def test_removing_the_file_clears_the_mark(node: StorageNode) -> None:
    node.mark_stale([NAME])
    assert await node.delete(STRUCTURE, NAME)
    assert node.stale == {}
    await node.append_captures(NAME, URL, [capture(1)])
    node.mark_stale([NAME])
    assert await node.quarantine(STRUCTURE, NAME)
    assert node.stale == {}
