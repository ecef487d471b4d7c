"""FileStore and PendingFile: SHA-256 names, fan-out layout, atomic writes, refusal of bad names."""

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archive.errors import BadName, HashMismatch
from archive.store import TMP_DIR, FileStore

BAD_NAMES: list[Any] = [
    "../x",
    "../" + "a" * 61,
    "a" * 63,
    "a" * 65,
    "A" * 64,
    "ab" * 31 + "AB",
    "g" * 64,
    "a" * 63 + "\0",
    "a" * 63 + "/",
    "a" * 64 + "\n",
    " " + "a" * 63,
    "",
    b"a" * 64,
]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "store")


def temporaries(store: FileStore) -> list[str]:
    return sorted(os.listdir(store.tmp_root))


def test_put_bytes_round_trip_and_fan_out_path(store: FileStore) -> None:
    data = b"hello, archive\n" * 100
    name = store.put_bytes(data)
    assert name == sha(data)
    expected_path = store.root / name[:2] / name[2:4] / name
    assert store.path_for(name) == expected_path
    assert expected_path.read_bytes() == data
    assert store.read_bytes(name) == data
    assert store.exists(name)
    assert store.size(name) == len(data)
    assert temporaries(store) == []


def test_put_bytes_with_the_right_expected_hash(store: FileStore) -> None:
    data = b"\x00\xff" * 1000
    assert store.put_bytes(data, expected=sha(data)) == sha(data)
    assert store.read_bytes(sha(data)) == data


def test_put_bytes_twice_keeps_one_file(store: FileStore) -> None:
    first = store.put_bytes(b"same")
    second = store.put_bytes(b"same")
    assert first == second
    assert list(store.names()) == [first]
    assert temporaries(store) == []


def test_empty_content_is_stored(store: FileStore) -> None:
    name = store.put_bytes(b"")
    assert name == sha(b"")
    assert store.read_bytes(name) == b""
    assert store.size(name) == 0


def test_writer_streams_chunks(store: FileStore) -> None:
    chunks = [os.urandom(n) for n in (0, 1, 4096, 70_000, 3)]
    with store.writer() as pending:
        for chunk in chunks:
            pending.write(chunk)
        assert pending.size == sum(map(len, chunks))
        name = pending.commit()
    assert name == sha(b"".join(chunks))
    assert store.read_bytes(name) == b"".join(chunks)
    assert temporaries(store) == []


def test_file_is_invisible_until_commit(store: FileStore) -> None:
    data = b"not yet"
    with store.writer() as pending:
        pending.write(data)
        assert pending.temp_path.parent == store.tmp_root
        assert pending.temp_path.exists()
        assert not store.exists(sha(data))
        assert list(store.names()) == []
        pending.commit()
    assert store.exists(sha(data))


def test_wrong_expected_hash_raises_and_leaves_nothing(store: FileStore) -> None:
    data = b"the real bytes"
    claimed = sha(b"other bytes")
    with pytest.raises(HashMismatch) as caught, store.writer(expected=claimed) as pending:
        pending.write(data)
        pending.commit()
    assert claimed in str(caught.value)
    assert sha(data) in str(caught.value)
    assert not store.exists(claimed)
    assert not store.exists(sha(data))
    assert list(store.names()) == []
    assert temporaries(store) == []


def test_put_bytes_with_wrong_expected_hash_leaves_nothing(store: FileStore) -> None:
    claimed = sha(b"b")
    with pytest.raises(HashMismatch):
        store.put_bytes(b"a", expected=claimed)
    assert not store.exists(claimed)
    assert not store.exists(sha(b"a"))
    assert temporaries(store) == []


def test_exception_inside_writer_leaves_nothing(store: FileStore) -> None:
    with pytest.raises(RuntimeError, match="connection lost"), store.writer() as pending:
        pending.write(b"half a file")
        raise RuntimeError("connection lost")
    assert list(store.names()) == []
    assert temporaries(store) == []


def test_abort_removes_the_temporary(store: FileStore) -> None:
    pending = store.writer()
    pending.write(b"abandoned")
    assert pending.temp_path.exists()
    pending.abort()
    assert not pending.temp_path.exists()
    assert temporaries(store) == []


def test_writer_refuses_a_bad_expected_name_before_creating_a_temporary(
    store: FileStore,
) -> None:
    with pytest.raises(BadName):
        store.writer(expected="../" + "a" * 61)
    assert temporaries(store) == []


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_bad_names_are_refused_before_touching_the_filesystem(
    store: FileStore, name: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def untouchable(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"filesystem touched with {args!r}")

    operations: list[Callable[[], object]] = [
        lambda: store.path_for(name),
        lambda: store.exists(name),
        lambda: store.delete(name),
        lambda: store.size(name),
        lambda: store.read_bytes(name),
        lambda: store.write_named(name, b"x"),
    ]
    with monkeypatch.context() as patched:
        for function in ("stat", "unlink", "open", "rename", "replace", "scandir", "fsync"):
            patched.setattr(os, function, untouchable)
        patched.setattr(os.path, "exists", untouchable)
        for operation in operations:
            with pytest.raises(BadName, match="64 lowercase hex digits"):
                operation()


def test_delete_with_a_traversal_name_leaves_the_outside_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    outside = tmp_path / "x"
    outside.write_bytes(b"keep me")
    with pytest.raises(BadName):
        store.delete("../x")
    assert outside.read_bytes() == b"keep me"


def test_delete(store: FileStore) -> None:
    name = store.put_bytes(b"short-lived")
    assert store.delete(name) is True
    assert not store.exists(name)
    assert not store.path_for(name).exists()
    assert store.delete(name) is False


def test_delete_of_a_name_never_stored_returns_false(store: FileStore) -> None:
    assert store.delete("f" * 64) is False
    assert not store.exists("f" * 64)


def test_names_lists_exactly_what_was_stored(store: FileStore) -> None:
    stored = {store.put_bytes(os.urandom(32)) for _ in range(20)}
    named = "0" * 64
    store.write_named(named, b"a structure file")
    pending = store.writer()
    pending.write(b"still being written")
    (store.tmp_root / ("a" * 64)).write_bytes(b"stray temporary with a valid-looking name")
    (store.root / "README").write_text("not a folder of files")
    some = store.path_for(next(iter(stored))).parent
    (some / "notes.txt").write_text("not a name")
    (some / "subfolder").mkdir()
    try:
        names = list(store.names())
    finally:
        pending.abort()
    assert sorted(names) == sorted(stored | {named})
    assert len(names) == len(set(names))


def test_names_of_an_empty_store(store: FileStore) -> None:
    assert list(store.names()) == []


def test_clean_temporaries_removes_leftovers(store: FileStore) -> None:
    kept = store.put_bytes(b"committed")
    for index in range(3):
        (store.tmp_root / f"left{index}.part").write_bytes(b"interrupted")
    assert store.clean_temporaries() == 3
    assert temporaries(store) == []
    assert store.tmp_root.is_dir()
    assert store.read_bytes(kept) == b"committed"
    assert store.clean_temporaries() == 0


def test_a_new_store_creates_its_temporary_folder(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "deep" / "root")
    assert store.tmp_root == tmp_path / "deep" / "root" / TMP_DIR
    assert store.tmp_root.is_dir()


def test_write_named_creates_and_replaces(store: FileStore) -> None:
    name = "ab" * 32
    store.write_named(name, b"first")
    assert store.path_for(name) == store.root / "ab" / "ab" / name
    assert store.read_bytes(name) == b"first"
    store.write_named(name, b"second version")
    assert store.read_bytes(name) == b"second version"
    assert temporaries(store) == []


def test_write_named_keeps_the_old_file_when_the_rename_fails(
    store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "cd" * 32
    store.write_named(name, b"old content")

    def failing_replace(source: object, target: object) -> None:
        raise OSError("disk went away")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", failing_replace)
        with pytest.raises(OSError, match="disk went away"):
            store.write_named(name, b"new content")
    assert store.read_bytes(name) == b"old content"
    assert temporaries(store) == []
