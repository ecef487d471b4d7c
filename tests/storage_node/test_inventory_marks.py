"""The inventory log read from a saved mark instead of its first line, and entries found in a long
log by halving it."""

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from storage_node.inventory import InventoryLog, Mark

ENTRIES = 3_000  # about 450 KB of log: several halvings before the last bytes are read


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(1) as pool:
        yield pool


def names(count: int, start: int = 0) -> list[tuple[str, int]]:
    return [(f"{i:064x}", i) for i in range(start, start + count)]


def test_a_log_opened_at_its_mark_reads_only_what_follows(tmp_path: Path, executor) -> None:
    path = tmp_path / "inventory.log"
    first = InventoryLog(path, executor)
    first.append_many("add", "content", names(ENTRIES))
    mark = first.mark
    first.append_many("remove", "content", names(5))
    first.close()

    again = InventoryLog(path, executor, mark)
    assert again.began == mark
    assert (again.seq, again.mark.offset) == (ENTRIES + 5, path.stat().st_size)
    again.append("add", "structure", "f" * 64, 7)
    assert [(e.seq, e.op, e.name) for e in again.read_since(ENTRIES + 4, 10)] == [
        (ENTRIES + 5, "remove", f"{4:064x}"),
        (ENTRIES + 6, "add", "f" * 64),
    ]
    again.close()


@pytest.mark.parametrize(
    "wrong",
    [Mark(10, 1), Mark(11, 0), Mark(99, 10**9)],
    ids=["inside a line", "wrong entry", "past the end"],
)
def test_a_mark_the_log_does_not_hold_is_not_trusted(tmp_path: Path, executor, wrong: Mark) -> None:
    path = tmp_path / "inventory.log"
    first = InventoryLog(path, executor)
    first.append_many("add", "content", names(20))
    first.close()
    if wrong.offset == 1:
        wrong = Mark(11, first.mark.offset // 2)
    again = InventoryLog(path, executor, wrong)
    assert (again.began, again.seq) == (Mark(0, 0), 20)
    again.close()


def test_a_torn_line_after_the_mark_is_cut_off(tmp_path: Path, executor) -> None:
    path = tmp_path / "inventory.log"
    first = InventoryLog(path, executor)
    first.append_many("add", "content", names(10))
    mark = first.mark
    first.close()
    with open(path, "ab") as log:
        log.write(b'{"seq":11,"op":"add","kind":"con')
    again = InventoryLog(path, executor, mark)
    assert (again.began, again.seq, path.stat().st_size) == (mark, 10, mark.offset)
    again.close()


def test_entries_are_found_by_halving_a_long_log_whatever_their_spelling(
    tmp_path: Path, executor
) -> None:
    path = tmp_path / "inventory.log"
    log = InventoryLog(path, executor)
    log.append_many("add", "content", names(ENTRIES))
    log.close()
    # A line spelt by another JSON writer is read as well; a damaged last line is cut off.
    with open(path, "a") as out:
        entry = {"seq": ENTRIES + 1, "op": "add", "kind": "content", "name": "e" * 64, "size": 1}
        out.write(json.dumps({**entry, "time": 1}) + "\n")
        out.write("not json\n")
    log = InventoryLog(path, executor)
    assert log.seq == ENTRIES + 1
    for since in (0, 1, 777, ENTRIES - 1, ENTRIES):
        expected = [
            (seq, f"{seq - 1:064x}" if seq <= ENTRIES else "e" * 64)
            for seq in range(since + 1, min(since + 3, ENTRIES + 2))
        ]
        assert [(e.seq, e.name) for e in log.read_since(since, 2)] == expected
    assert list(log.read_since(ENTRIES + 1, 5)) == []
    cursor = log.cursor(2_500)
    assert [e.seq for e in cursor.read(3)] == [2_501, 2_502, 2_503]
    assert [e.seq for e in cursor.read(3)] == [2_504, 2_505, 2_506]
    log.close()
