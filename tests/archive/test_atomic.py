"""Atomic files: a state file is the old one or the new one after any failure, never a part."""

import stat
from pathlib import Path

import pytest

from archive.atomic import AtomicFile, atomic_file, atomic_write


class Interrupted(Exception):
    pass


def test_the_new_bytes_take_the_place_of_the_old(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    with atomic_file(path) as out:
        out.write(b"new, ")
        out.write(b"in two writes")
    assert path.read_bytes() == b"new, in two writes"
    assert list(tmp_path.iterdir()) == [path]


def test_a_failure_midway_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    with pytest.raises(Interrupted), atomic_file(path) as out:
        out.write(b"half of the new")
        raise Interrupted
    assert path.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [path]


def test_a_failure_before_the_first_write_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with pytest.raises(Interrupted), atomic_file(path):
        raise Interrupted
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_must_not_replace_one_is_refused_whole(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    atomic_write(path, b"secret: first\n", replace=False)
    with pytest.raises(FileExistsError):
        atomic_write(path, b"secret: second\n", replace=False)
    assert path.read_bytes() == b"secret: first\n"
    assert list(tmp_path.iterdir()) == [path]


def test_files_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    """A configuration holds the cluster secret: it must never be readable by others."""
    path = tmp_path / "dlweb.yaml"
    atomic_write(path, b"secret: x\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_written_over_time_appears_only_when_committed(tmp_path: Path) -> None:
    kept, dropped = tmp_path / "kept.log", tmp_path / "dropped.log"
    pending, abandoned = AtomicFile(kept), AtomicFile(dropped)
    for data in (b"one\n", b"two\n"):
        pending.write(data)
        abandoned.write(data)
    assert not kept.exists() and not dropped.exists()
    pending.commit()
    abandoned.abandon()
    assert kept.read_bytes() == b"one\ntwo\n"
    assert list(tmp_path.iterdir()) == [kept]
