"""The group commit: files of many concurrent writes put in place after shared flushes."""

import asyncio
import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from storage_node.commit import GroupCommitter, place_all
from storage_node.volumes import Volumes


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


def test_volume_entries_are_placed_together_and_each_file_gets_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = Volumes(tmp_path / "good"), Volumes(tmp_path / "bad")
    placings: list[int] = []
    real = Volumes.place_many

    def place_many(volumes: Volumes, entries: list, sync: bool) -> None:
        placings.append(len(entries))
        if volumes is bad:
            raise OSError("disk gone")
        real(volumes, entries, sync)

    monkeypatch.setattr(Volumes, "place_many", place_many)
    datas = [b"one", b"two", b"three"]
    kept = good.stage_many([(hashlib.sha256(d).hexdigest(), d) for d in datas])
    (lost,) = bad.stage_many([(hashlib.sha256(b"four").hexdigest(), b"four")])
    placed: list[str] = []
    files = [kept[0], Renamed(placed, "file"), lost, kept[1], Renamed(placed, "x", fails=True)]
    outcomes = place_all([*files, kept[2]])
    assert sorted(placings) == [1, 3]  # one placing per store
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType",
        "NoneType",
        "OSError",
        "NoneType",
        "OSError",
        "NoneType",
    ]
    assert placed == ["file"]
    assert all(entry.name in good for entry in kept) and lost.name not in bad
    good.close()
    bad.close()
