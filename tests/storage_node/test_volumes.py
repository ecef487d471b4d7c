"""Volumes: small contents appended to shared files, found again after restarts and crashes."""

import hashlib
import os
from pathlib import Path

import pytest

from archive.errors import HashMismatch
from storage_node import volumes as volumes_module
from storage_node.stores import SMALL_CONTENT, VolumeStore, spans_in_store
from storage_node.volumes import Volumes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put(vols: Volumes, data: bytes, sync: bool = True) -> str:
    name = sha(data)
    vols.stage_many([(name, data)])[0].place(sync_dir=sync)
    return name


def reopen(vols: Volumes) -> Volumes:
    vols.close()
    return Volumes(vols.root)


def test_contents_are_read_back_after_a_restart(tmp_path: Path) -> None:
    vols = Volumes(tmp_path)
    payloads = [os.urandom(n) for n in (0, 1, 5000, 300_000)]
    names = [put(vols, data) for data in payloads]
    vols = reopen(vols)
    for name, data in zip(names, payloads, strict=True):
        assert name in vols
        span = vols.span(name)
        assert span is not None and span.read() == data
    assert sorted(vols.names()) == sorted(names)
    more = put(vols, b"after the restart")
    assert len(list(tmp_path.glob("*.vol"))) == 1  # a volume with room is written on
    vols = reopen(vols)
    assert sorted(vols.names()) == sorted([*names, more])
    vols.close()


def test_wrong_bytes_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    vols = Volumes(tmp_path)
    with pytest.raises(HashMismatch, match="hash to"):
        vols.stage_many([(sha(b"promised"), b"delivered")])
    assert sha(b"promised") not in vols
    assert (tmp_path / "00000001.vol").stat().st_size == 0
    vols.close()


def test_bytes_staged_but_never_placed_are_not_held_after_a_crash(tmp_path: Path) -> None:
    vols = Volumes(tmp_path)
    kept = put(vols, b"placed")
    lost = sha(b"staged only")
    vols.stage_many([(lost, b"staged only")])
    assert lost not in vols
    vols = reopen(vols)
    assert kept in vols and lost not in vols
    vols.close()


def test_index_records_past_the_end_or_torn_are_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vols = Volumes(tmp_path)
    first = put(vols, b"first" * 100)
    last = put(vols, b"last" * 100)
    vols.close()
    volume = tmp_path / "00000001.vol"
    with open(volume, "r+b") as stream:
        stream.truncate(volume.stat().st_size - 10)  # the last entry's bytes never reached disk
    with open(tmp_path / "00000001.idx", "ab") as stream:
        stream.write(b"\x01" * 20)  # a record torn in the middle
    vols = Volumes(tmp_path)
    assert first in vols and last not in vols
    assert "1 index records point past its end" in caplog.text
    span = vols.span(first)
    assert span is not None and span.read() == b"first" * 100
    # The torn record is cut off, so records written after it are read whole.
    again = put(vols, b"after the crash")
    vols = reopen(vols)
    assert first in vols and again in vols


def test_a_removal_survives_a_restart_and_a_later_copy_is_kept(tmp_path: Path) -> None:
    vols = Volumes(tmp_path)
    name = put(vols, b"comes and goes")
    other = put(vols, b"stays")
    assert vols.remove(name) is True
    assert vols.remove(name) is False
    vols = reopen(vols)
    assert name not in vols and other in vols
    # Stored again in the next volume: the older volume's tombstone does not hide it.
    vols.close()
    with open(tmp_path / "00000001.vol", "ab") as stream:
        stream.truncate(volumes_module.VOLUME_SIZE)  # full: the next start opens volume 2
    vols = Volumes(tmp_path)
    put(vols, b"comes and goes")
    vols = reopen(vols)
    span = vols.span(name)
    assert span is not None and span.read() == b"comes and goes"
    assert span.path.endswith("00000002.vol")
    vols.close()


@pytest.mark.parametrize("together", [False, True], ids=["one by one", "in one batch"])
def test_full_volumes_roll_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, together: bool
) -> None:
    monkeypatch.setattr(volumes_module, "VOLUME_SIZE", 10_000)
    vols = Volumes(tmp_path)
    payloads = [os.urandom(3000) for _ in range(10)]
    names = [sha(data) for data in payloads]
    if together:
        vols.place_many(vols.stage_many(list(zip(names, payloads, strict=True))), sync=False)
    else:
        for name, data in zip(names, payloads, strict=True):
            vols.stage_many([(name, data)])[0].place(sync_dir=False)
    vols = reopen(vols)
    assert len(list(tmp_path.glob("*.vol"))) == 4
    assert all((tmp_path / f"{n:08d}.vol").stat().st_size <= 10_000 for n in (1, 2, 3))
    for name, data in zip(names, payloads, strict=True):
        span = vols.span(name)
        assert span is not None and span.read() == data
    vols.close()


def test_compaction_reclaims_a_mostly_removed_volume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(volumes_module, "VOLUME_SIZE", 20_000)
    vols = Volumes(tmp_path)
    payloads = {put(vols, data): data for data in (os.urandom(2000) for _ in range(9))}
    names = list(payloads)
    put(vols, os.urandom(5000))  # fills volume 1, so it is no longer the active one
    for name in names[:6]:
        vols.remove(name)
    assert vols.compact() == 1
    assert not (tmp_path / "00000001.vol").exists()
    assert not (tmp_path / "00000001.idx").exists()
    vols = reopen(vols)
    for name in names[6:]:
        span = vols.span(name)
        assert span is not None and span.read() == payloads[name]
    assert not any(name in vols for name in names[:6])
    assert vols.compact() == 0
    vols.close()


def test_a_crash_before_the_old_volume_is_deleted_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(volumes_module, "VOLUME_SIZE", 20_000)
    vols = Volumes(tmp_path)
    kept = put(vols, b"kept" * 1000)
    gone = put(vols, os.urandom(12_000))
    put(vols, os.urandom(5000))
    old = {path.name: path.read_bytes() for path in tmp_path.glob("00000001.*")}
    vols.remove(gone)
    tombstoned = (tmp_path / "00000001.idx").read_bytes()
    assert vols.compact() == 1
    vols.close()
    old["00000001.idx"] = tombstoned
    for file_name, data in old.items():  # as if the process died before the unlink
        (tmp_path / file_name).write_bytes(data)
    vols = Volumes(tmp_path)
    span = vols.span(kept)
    assert span is not None and span.read() == b"kept" * 1000
    assert not span.path.endswith("00000001.vol")
    assert gone not in vols
    vols.close()


def test_the_content_store_keeps_large_contents_as_files(tmp_path: Path) -> None:
    store = VolumeStore(tmp_path, SMALL_CONTENT, mutable=False)
    small, large = os.urandom(1000), os.urandom(SMALL_CONTENT + 1)
    for staged in store.stage_contents([(sha(large), large), (sha(small), small)], fsync=True):
        staged.place()
    assert (tmp_path / sha(large)[:2] / sha(large)[2:4] / sha(large)).exists()
    # (The two names share their first folder once in 256 runs: the small one's own path.)
    assert not (tmp_path / sha(small)[:2] / sha(small)[2:4] / sha(small)).exists()
    assert store.read_small(sha(small))[1] == small
    span, data = store.read_small(sha(large))
    assert data is None and span.size == len(large)
    store.close()
    on_disk = {span.name: span.read() for span in spans_in_store(tmp_path)}
    assert on_disk == {sha(small): small, sha(large): large}


def test_a_new_version_replaces_the_old_in_a_volume_of_changing_files(tmp_path: Path) -> None:
    vols = Volumes(tmp_path, replace=True)
    name = sha(b"a structure file's name")
    for version in (b"first version", b"second, longer version"):
        vols.stage_verified(name, version).place()
    vols.close()
    vols = Volumes(tmp_path, replace=True)
    span = vols.span(name)
    assert span is not None and span.read() == b"second, longer version"
    vols.close()


def test_a_removal_outlives_the_compaction_of_its_volume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older volume still holds a record of the first version; the tombstone written in a
    later volume must survive that volume's compaction, or the old version comes back."""
    monkeypatch.setattr(volumes_module, "VOLUME_SIZE", 10_000)
    vols = Volumes(tmp_path, replace=True)
    name = sha(b"changing file")
    vols.stage_verified(name, b"v1" * 100).place()
    vols.stage_verified(sha(b"filler 1"), os.urandom(9_600)).place()  # volume 1 is full
    vols.stage_verified(name, b"v2" * 100).place()  # in volume 2
    vols.remove(name)  # its tombstone is in volume 2
    vols.stage_verified(sha(b"filler 2"), os.urandom(9_000)).place()  # volume 2 is full
    vols.remove(sha(b"filler 2"))  # and now mostly unused
    vols.stage_verified(sha(b"tail"), os.urandom(2000)).place()  # in volume 3
    assert vols.compact() == 1
    assert not (tmp_path / "00000002.vol").exists()
    vols = reopen(vols)
    assert name not in vols
    assert sha(b"filler 1") in vols
    vols.close()


def test_a_structure_file_moves_from_its_volume_to_a_file_as_it_grows(tmp_path: Path) -> None:
    from archive.structure import Capture, encode_file
    from storage_node.stores import SMALL_STRUCTURE

    store = VolumeStore(tmp_path, SMALL_STRUCTURE, mutable=True)
    url = "http://example.org/"
    name = sha(url.encode())

    def captures(count: int) -> list[Capture]:
        return [
            Capture(time=i, content="a" * 64, header="b" * 64, status=200) for i in range(count)
        ]

    store.stage_version(name, encode_file(url, captures(3))).place()
    assert store.in_volume(name) and not (tmp_path / name[:2]).exists()
    with store.open_structure(name) as sfile:
        assert sfile.reader.count == 3 and sfile.reader.url == url
    with pytest.raises(ValueError, match="in a volume"):
        store.open_structure(name, writable=True)

    grown = encode_file(url, captures(SMALL_STRUCTURE // 88 + 5))
    store.stage_version(name, grown).place()
    assert not store.in_volume(name) and name not in store.volumes
    with store.open_structure(name, writable=True) as sfile:
        assert sfile.reader.count == SMALL_STRUCTURE // 88 + 5
    assert [span.name for span in spans_in_store(tmp_path)] == [name]
    store.close()


def test_a_file_wins_over_a_volume_entry_a_crash_left_behind(tmp_path: Path) -> None:
    from storage_node.stores import SMALL_STRUCTURE

    store = VolumeStore(tmp_path, SMALL_STRUCTURE, mutable=True)
    name = sha(b"grown")
    store.stage_version(name, b"old small version").place()
    store.files.stage(name, b"newer version, a file").place()  # the entry was not removed yet
    assert store.read_small(name)[1] == b"newer version, a file"
    assert list(store.names()) == [name]
    assert store.delete(name) is True
    assert not store.exists(name)
    store.close()


def _pwritev_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pieces of each os.pwritev the volumes make, from now on."""
    calls: list[int] = []
    real = os.pwritev

    def counted(fd: int, pieces: list[bytes], offset: int) -> int:
        calls.append(len(pieces))
        return real(fd, pieces, offset)

    monkeypatch.setattr(volumes_module.os, "pwritev", counted)
    return calls


def test_a_batch_is_appended_with_a_write_for_many_files_and_read_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(volumes_module, "_FILES_A_WRITE", 4)
    calls = _pwritev_calls(monkeypatch)
    vols = Volumes(tmp_path)
    payloads = [os.urandom(100 + n) for n in range(10)]
    entries = vols.stage_many([(sha(data), data) for data in payloads])
    assert [entry.name for entry in entries] == [sha(data) for data in payloads]
    assert calls == [8, 8, 4]  # a head and the bytes of each file, 4 files a write
    vols.place_many(entries, sync=True)
    vols = reopen(vols)
    for data in payloads:
        span = vols.span(sha(data))
        assert span is not None and span.read() == data
    vols.close()


def test_a_batch_with_one_wrong_file_writes_none_of_them(tmp_path: Path) -> None:
    vols = Volumes(tmp_path)
    good = b"as promised"
    with pytest.raises(HashMismatch):
        vols.stage_many([(sha(good), good), (sha(b"promised"), b"delivered")])
    assert (tmp_path / "00000001.vol").stat().st_size == 0
    vols.close()


def test_placing_a_batch_keeps_the_first_content_and_the_last_structure_version(
    tmp_path: Path,
) -> None:
    name = sha(b"content")
    contents = Volumes(tmp_path / "contents")
    first, second = contents.stage_many([(name, b"content"), (name, b"content")])
    contents.place_many([first, second], sync=True)
    span = contents.span(name)
    assert span is not None and span.offset == first.offset
    structures = Volumes(tmp_path / "structures", replace=True)
    old, new = structures.stage_many([("ab" * 32, b"old"), ("ab" * 32, b"new")], verified=True)
    structures.place_many([old, new], sync=True)
    structures = reopen(structures)
    span = structures.span("ab" * 32)
    assert span is not None and span.read() == b"new"
    contents.close()
    structures.close()
