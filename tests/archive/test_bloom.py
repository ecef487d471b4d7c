"""NameFilter: no false negatives, the promised false-positive rate, deletions, rebuilds, and a
save format that survives crashes and reports damage."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest

from archive.bloom import MIN_REBUILD_CAPACITY, NameFilter
from archive.errors import BadName, CorruptFile, NotFound


def random_names(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.randbytes(32).hex() for _ in range(count)]


@pytest.fixture(scope="module")
def full_filter() -> tuple[NameFilter, list[str]]:
    """A filter sized for 100k names (k=10: sliced words plus double hashing), filled to capacity."""
    names = random_names(100_000, seed=1)
    name_filter = NameFilter(len(names), error_rate=0.001)
    for name in names:
        name_filter.add(name)
    return name_filter, names


def test_every_added_name_is_found(full_filter: tuple[NameFilter, list[str]]) -> None:
    name_filter, names = full_filter
    assert all(name_filter.might_hold(name) for name in names)


def test_false_positive_rate_at_capacity_is_near_error_rate(
    full_filter: tuple[NameFilter, list[str]],
) -> None:
    name_filter, _ = full_filter
    absent = random_names(100_000, seed=2)
    rate = sum(name_filter.might_hold(name) for name in absent) / len(absent)
    assert name_filter.error_rate / 2 <= rate <= name_filter.error_rate * 2


def test_false_positive_rate_when_every_index_is_sliced_from_the_digest() -> None:
    names = random_names(5_000, seed=3)
    name_filter = NameFilter(len(names), error_rate=0.01)
    for name in names:
        name_filter.add(name)
    assert all(name_filter.might_hold(name) for name in names)
    absent = random_names(50_000, seed=4)
    rate = sum(name_filter.might_hold(name) for name in absent) / len(absent)
    assert 0.005 <= rate <= 0.02


def test_filter_wider_than_two_to_the_24_bits_finds_every_name() -> None:
    name_filter = NameFilter(600_000, error_rate=1e-6)
    assert name_filter.bit_count > 1 << 24
    names = random_names(10_000, seed=5)
    for name in names:
        name_filter.add(name)
    assert all(name_filter.might_hold(name) for name in names)
    assert not any(name_filter.might_hold(name) for name in random_names(10_000, seed=6))


@pytest.mark.parametrize(
    ("capacity", "error_rate"),
    [(1000, 0.001), (100_000, 0.001), (600_000, 1e-6), (1000, 1e-12)],
    ids=["sliced-and-hashed", "larger", "wider-than-2**24-bits", "many-hashed-indexes"],
)
def test_batch_adds_and_lookups_set_and_test_the_bits_one_at_a_time_would(
    capacity: int, error_rate: float
) -> None:
    one_by_one, batched = NameFilter(capacity, error_rate), NameFilter(capacity, error_rate)
    names = random_names(capacity // 2, seed=20)
    for name in names:
        one_by_one.add(name)
    batched.add_many(names)
    batched.add_many([])
    assert batched._bits == one_by_one._bits
    assert batched.count == one_by_one.count
    others = random_names(5_000, seed=21)
    assert batched.might_hold_many(names[:500] + others) == [
        one_by_one.might_hold(name) for name in names[:500] + others
    ]
    assert batched.might_hold_many([]) == []


@pytest.mark.parametrize("others", [0, 40], ids=["a-few-names", "arrays"])
def test_a_batch_counts_each_name_once_and_brings_back_discarded_ones(others: int) -> None:
    name_filter = NameFilter(1000)
    kept, dropped, *rest = random_names(2 + others, seed=22)
    name_filter.add_many([kept, dropped, kept, *rest])
    assert name_filter.count == 2 + others
    name_filter.discard(dropped)
    assert name_filter.might_hold_many([kept, dropped, *rest]) == [True, False] + [True] * others
    name_filter.add_many([dropped, *rest])
    assert name_filter.might_hold_many([kept, dropped]) == [True, True]
    assert (name_filter.count, name_filter.deletion_count) == (2 + others, 0)


def test_count_skips_names_whose_bits_were_all_set_already(
    full_filter: tuple[NameFilter, list[str]],
) -> None:
    name_filter, names = full_filter
    # Only the names that were false positives when added go uncounted: far below 0.1%.
    assert len(names) * 0.999 <= name_filter.count <= len(names)


def test_adding_a_name_twice_counts_it_once() -> None:
    name_filter = NameFilter(1000)
    name = random_names(1, seed=7)[0]
    name_filter.add(name)
    name_filter.add(name)
    assert name_filter.count == 1


def test_discard_makes_might_hold_false_and_re_add_makes_it_true() -> None:
    name_filter = NameFilter(1000)
    kept, dropped = random_names(2, seed=8)
    name_filter.add(kept)
    name_filter.add(dropped)
    name_filter.discard(dropped)
    assert not name_filter.might_hold(dropped)
    assert name_filter.might_hold(kept)
    assert name_filter.deletion_count == 1
    name_filter.add(dropped)
    assert name_filter.might_hold(dropped)
    assert name_filter.deletion_count == 0


def test_discarding_a_name_the_bits_reject_records_nothing() -> None:
    name_filter = NameFilter(1000)
    name_filter.discard(random_names(1, seed=9)[0])
    assert name_filter.deletion_count == 0


def test_needs_rebuild_once_deletion_set_reaches_its_limit() -> None:
    name_filter = NameFilter(1000, deletion_limit=5)
    names = random_names(5, seed=10)
    for name in names:
        name_filter.add(name)
    for name in names[:4]:
        name_filter.discard(name)
    assert not name_filter.needs_rebuild()
    name_filter.discard(names[4])
    assert name_filter.needs_rebuild()


def test_needs_rebuild_once_count_exceeds_capacity() -> None:
    name_filter = NameFilter(100)
    names = random_names(101, seed=11)
    for name in names[:100]:
        name_filter.add(name)
    assert name_filter.count == 100
    assert not name_filter.needs_rebuild()
    name_filter.add(names[100])
    assert name_filter.needs_rebuild()


def test_rebuilt_holds_the_listed_names_with_room_to_grow() -> None:
    names = random_names(3_000, seed=12)
    gone = random_names(1, seed=13)[0]
    fresh = NameFilter.rebuilt(iter(names), error_rate=0.01, deletion_limit=7)
    assert fresh.capacity == 6_000
    assert fresh.count == len(names)
    assert fresh.error_rate == 0.01
    assert fresh.deletion_limit == 7
    assert all(fresh.might_hold(name) for name in names)
    assert not fresh.might_hold(gone)
    assert not fresh.needs_rebuild()
    assert NameFilter.rebuilt([]).capacity == MIN_REBUILD_CAPACITY


def save_sample(path: Path, seq: int = 42) -> tuple[NameFilter, list[str]]:
    names = random_names(2_000, seed=14)
    name_filter = NameFilter(3_000, error_rate=0.01, deletion_limit=50)
    for name in names:
        name_filter.add(name)
    for name in names[:10]:
        name_filter.discard(name)
    name_filter.save(path, seq)
    return name_filter, names


def test_save_load_round_trip_keeps_answers_deletions_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    saved, names = save_sample(path, seq=42)
    loaded, seq = NameFilter.load(path)
    assert seq == 42
    assert (loaded.count, loaded.capacity, loaded.error_rate, loaded.deletion_limit) == (
        saved.count,
        saved.capacity,
        saved.error_rate,
        saved.deletion_limit,
    )
    assert loaded.deletion_count == 10
    assert not any(loaded.might_hold(name) for name in names[:10])
    assert all(loaded.might_hold(name) for name in names[10:])
    absent = random_names(20_000, seed=15)
    assert [loaded.might_hold(name) for name in absent] == [saved.might_hold(n) for n in absent]
    loaded.save(tmp_path / "again.bloom", 42)
    assert (tmp_path / "again.bloom").read_bytes() == path.read_bytes()


def test_save_replaces_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path, seq=1)
    NameFilter(10).save(path, 2)
    loaded, seq = NameFilter.load(path)
    assert (seq, loaded.count, loaded.capacity) == (2, 0, 10)
    assert sorted(os.listdir(tmp_path)) == ["names.bloom"]


def damaged_file_error(path: Path) -> str:
    with pytest.raises(CorruptFile) as caught:
        NameFilter.load(path)
    message = str(caught.value)
    assert str(path) in message
    return message


def test_truncated_file_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path)
    path.write_bytes(path.read_bytes()[:-100])
    assert "truncated" in damaged_file_error(path)
    path.write_bytes(b"DLWB")
    assert "truncated" in damaged_file_error(path)


def test_flipped_byte_is_a_checksum_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(data)
    assert "checksum mismatch" in damaged_file_error(path)


def test_wrong_magic_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path)
    path.write_bytes(b"NOTBLOOM" + path.read_bytes()[8:])
    assert "bad magic" in damaged_file_error(path)


def test_unknown_version_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<H", data, 8, 99)
    path.write_bytes(data)
    assert "unsupported version 99" in damaged_file_error(path)


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        NameFilter.load(tmp_path / "absent.bloom")


def test_failed_save_keeps_previous_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "names.bloom"
    save_sample(path, seq=1)
    before = path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("simulated crash between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        NameFilter(10).save(path, 2)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["names.bloom"]
    assert NameFilter.load(path)[1] == 1


BAD_NAMES = [
    "A" * 64,
    "a" * 63,
    "a" * 65,
    "",
    "0x" + "a" * 62,
    " " + "a" * 64,
    "ab " * 21 + "a",
    "g" * 64,
    "é" * 64,
]


@pytest.mark.parametrize("bad", BAD_NAMES + [b"a" * 64, 7, None])
def test_bad_names_raise_bad_name(bad: object) -> None:
    name_filter = NameFilter(10)
    for call in (name_filter.add, name_filter.discard, name_filter.might_hold):
        with pytest.raises(BadName):
            call(bad)  # type: ignore[arg-type]
    good = random_names(1, seed=23)
    for many in (name_filter.add_many, name_filter.might_hold_many):
        with pytest.raises(BadName):
            many([*good, bad])  # type: ignore[list-item]
    assert not name_filter.might_hold(good[0])


def test_sizing_out_of_range_is_refused() -> None:
    for capacity, error_rate, deletion_limit in ((0, 0.001, 1), (10, 0.0, 1), (10, 0.01, 0)):
        with pytest.raises(ValueError):
            NameFilter(capacity, error_rate, deletion_limit)


def test_a_copy_is_saved_as_it_was_while_the_original_changes(tmp_path: Path) -> None:
    names = [os.urandom(32).hex() for _ in range(3)]
    original = NameFilter(1000)
    original.add(names[0])
    original.add(names[1])
    copy = original.copy()
    original.add(names[2])
    original.discard(names[0])
    copy.save(tmp_path / "copy.bloom", 2)
    loaded, seq = NameFilter.load(tmp_path / "copy.bloom")
    assert seq == 2
    assert [loaded.might_hold(n) for n in names] == [True, True, False]
    assert [original.might_hold(n) for n in names] == [False, True, True]
