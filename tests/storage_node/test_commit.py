"""The group commit: files of many concurrent writes put in place after shared flushes."""

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from storage_node.commit import GroupCommitter


class Renamed:
    """A staged file that records its placing, or fails it."""

    def __init__(self, placed: list[str], name: str, fails: bool = False) -> None:
        self.placed = placed
        self.name = name
        self.fails = fails

    def place(self, sync_dir: bool = True) -> None:
        if self.fails:
            raise OSError(f"cannot rename {self.name}")
        self.placed.append(self.name)


@pytest.fixture
def committer(tmp_path: Path) -> Iterator[GroupCommitter]:
    with ThreadPoolExecutor(2) as executor:
        committer = GroupCommitter(tmp_path, executor)
        yield committer
        committer.close()


async def test_concurrent_calls_share_flushes_and_each_gets_its_own_outcome(
    committer: GroupCommitter,
) -> None:
    placed: list[str] = []
    calls = [[Renamed(placed, f"{call}-{i}") for i in range(50)] for call in range(20)]
    bad = [Renamed(placed, "good-before"), Renamed(placed, "bad", fails=True)]
    bad.append(Renamed(placed, "good-after"))
    outcomes = await asyncio.gather(
        *(committer.place_all(files) for files in [*calls, bad]), return_exceptions=True
    )
    assert outcomes[:-1] == [None] * len(calls)
    assert isinstance(outcomes[-1], OSError) and "bad" in str(outcomes[-1])
    # The files of the failed call other than the bad one are in place all the same.
    assert sorted(placed) == sorted(
        [f.name for files in calls for f in files] + ["good-before", "good-after"]
    )
    assert committer.files == 20 * 50 + 3
    assert committer.batches < len(calls)


async def test_a_call_with_no_files_returns_at_once(committer: GroupCommitter) -> None:
    await committer.place_all([])
    assert committer.batches == 0
    await committer.flush()
    assert committer.batches == 1
