"""A structure copy sent by the master (a refresh, a repair copy) replacing the one a storage node
holds: records only accumulate, so what the held copy has and the sent one lacks is kept, unless
the held copy is bad."""

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from archive.structure import Capture, encode_file
from archive.urlkey import structure_name
from storage_node.node import STRUCTURE, StorageNode

URL = "http://example.org/page"
NAME = structure_name(URL)


def capture(time: int) -> Capture:
    return Capture(time, hashlib.sha256(b"%d" % time).hexdigest(), "0" * 64, 200)


async def body(data: bytes) -> AsyncIterator[bytes]:
    yield data


def times(node: StorageNode) -> list[int]:
    with node.open_structure(NAME) as sfile:
        return [c.time for c in sfile.reader.records()]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[StorageNode]:
    made = StorageNode(tmp_path / "node", "n1")
    yield made
    made.close()


async def test_a_copy_sent_keeps_the_records_only_the_held_copy_has(node: StorageNode) -> None:
    """An index node appended 3 here (a copy the master did not know of yet, or one it had made
    active meanwhile); a copy of an older one, holding 1 and 2, arrives: 3 stays."""
    await node.append_captures(NAME, URL, [capture(1), capture(3)])
    assert not await node.put_structure(NAME, body(encode_file(URL, [capture(1), capture(2)])))
    assert times(node) == [1, 2, 3]
    # A copy holding everything the held one has replaces it as it is.
    sent = encode_file(URL, [capture(t) for t in (1, 2, 3, 4)])
    assert not await node.put_structure(NAME, body(sent))
    assert times(node) == [1, 2, 3, 4]
    assert node.counts.bytes[STRUCTURE] == len(sent)


async def test_a_bad_held_copy_is_replaced_not_merged(node: StorageNode) -> None:
    await node.append_captures(NAME, URL, [capture(1), capture(3)])
    with node.open_structure(NAME) as sfile:
        path, where = sfile.path, sfile.reader.base
    with open(path, "r+b") as damaged:  # a byte of record 0 flipped
        damaged.seek(where + 20)
        byte = damaged.read(1)
        damaged.seek(where + 20)
        damaged.write(bytes([byte[0] ^ 0xFF]))
    assert not await node.put_structure(NAME, body(encode_file(URL, [capture(2)])))
    assert times(node) == [2]
