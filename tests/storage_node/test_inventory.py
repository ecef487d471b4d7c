"""The inventory log: followed from memory while it can be, from the file after."""

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from storage_node import inventory
from storage_node.inventory import InventoryLog

NAMES = [f"{i:064x}" for i in range(40)]


@pytest.fixture
def log(tmp_path: Path) -> Iterator[InventoryLog]:
    with ThreadPoolExecutor(1) as executor:
        inventory_log = InventoryLog(tmp_path / "inventory.log", executor)
        yield inventory_log
        inventory_log.close()


def test_a_follower_reads_new_entries_from_memory_as_the_file_holds_them(
    log: InventoryLog,
) -> None:
    log.append("add", "content", NAMES[0], 1)
    log.append_many("add", "structure", [(name, 2) for name in NAMES[1:10]])
    cursor = log.cursor(0)
    from_memory = cursor.read_recent(4, upto=6)
    assert from_memory is not None
    assert [e.seq for e in from_memory] == [1, 2, 3, 4]
    assert [e.seq for e in cursor.read_recent(100, upto=6) or []] == [5, 6]
    log.append("remove", "content", NAMES[0], 1)
    # The file, read from where memory left off, gives the same entries.
    from_file = log.cursor(0)
    assert from_file.read(100) == [*from_memory, *log.cursor(4).read(2)] + log.cursor(6).read(5)
    assert cursor.read(100) == log.cursor(6).read(100)
    assert [(e.seq, e.op) for e in log.cursor(9).read(10)] == [(10, "add"), (11, "remove")]


def test_a_follower_behind_what_memory_keeps_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inventory, "RECENT", 5)
    with ThreadPoolExecutor(1) as executor:
        _follow_a_small_log(InventoryLog(tmp_path / "inventory.log", executor))


def _follow_a_small_log(small: InventoryLog) -> None:
    small.append_many("add", "content", [(name, 3) for name in NAMES[:12]])
    behind = small.cursor(2)
    assert behind.read_recent(10) is None
    assert [e.seq for e in behind.read(3)] == [3, 4, 5]
    assert behind.read_recent(10) is None  # entry 6 is gone from memory too
    assert [e.seq for e in behind.read(2)] == [6, 7]
    assert [e.seq for e in behind.read_recent(10) or []] == [8, 9, 10, 11, 12]
    small.append("add", "content", NAMES[20], 4)
    assert [e.name for e in behind.read(10)] == [NAMES[20]]
    small.close()


def test_a_reopened_log_is_followed_from_the_file_then_from_memory(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as executor:
        first = InventoryLog(tmp_path / "inventory.log", executor)
        first.append_many("add", "content", [(name, 5) for name in NAMES[:3]])
        first.close()
        again = InventoryLog(tmp_path / "inventory.log", executor)
        cursor = again.cursor(0)
        assert cursor.read_recent(10) is None
        assert [e.seq for e in cursor.read(10)] == [1, 2, 3]
        again.append("add", "structure", NAMES[3], 6)
        assert [e.seq for e in cursor.read_recent(10) or []] == [4]
        again.append("add", "structure", NAMES[4], 7)
        assert [e.seq for e in cursor.read(10)] == [5]
        again.close()
