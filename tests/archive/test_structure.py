"""Structure files: header and record layout, binary search modes, corruption, appends, merges."""

import os
import random
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from archive.errors import BadName, CorruptFile, DlwebError
from archive.structure import (
    MAX_URL_BYTES,
    RECORD_SIZE,
    REPLAYED_KINDS,
    BadRecord,
    Capture,
    Mode,
    RecordFlag,
    RecordKind,
    StructureFile,
    encode_file,
    encode_header,
)

URL = "https://example.com/page?q=1"
NAME_A = "a" * 64
NAME_B = "b" * 64
FIXED_HEADER_SIZE = 20  # magic 8, version 2, record size 2, header size 4, URL length 4
KIND_OFFSET = 8 + 32 + 32 + 2
SIZES = [0, 1, 2, 3, 7, 64, 150]


def random_name(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def random_capture(rng: random.Random, time: int) -> Capture:
    return Capture(
        time=time,
        content=random_name(rng),
        header=random_name(rng),
        status=rng.choice([200, 301, 404, 0, 999]),
        kind=rng.choice(list(RecordKind)),
        flags=rng.randint(0, 255),
        offset=rng.randint(-(2**63), 2**63 - 1),
    )


def capture_at(time: int, content: str = NAME_A, status: int = 200) -> Capture:
    return Capture(time=time, content=content, header=NAME_B, status=status)


def write_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def reseal_header(data: bytes) -> bytes:
    """Recompute the header checksum after a test changed a header field on purpose."""
    url_length = struct.unpack(">I", data[16:20])[0]
    end = FIXED_HEADER_SIZE + url_length
    crc = struct.pack(">I", zlib.crc32(data[:end]))
    return data[:end] + crc + data[end + 4 :]


def header_size(data: bytes | bytearray) -> int:
    value: int = struct.unpack(">I", data[12:16])[0]
    return value


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


# Brute-force references for the search modes, over times sorted ascending.


def reference_time(mode: Mode, times: Sequence[int], query: int) -> int | None:
    if mode is Mode.EXACT:
        return query if query in times else None
    if mode is Mode.BEFORE:
        return max((t for t in times if t <= query), default=None)
    if mode is Mode.AFTER:
        return min((t for t in times if t >= query), default=None)
    if not times:
        return None
    return min(times, key=lambda t: (abs(t - query), t))


def queries_for(rng: random.Random, times: Sequence[int], count: int) -> list[int]:
    low = (times[0] if times else 0) - 50
    high = (times[-1] if times else 0) + 50
    edges = [low, high]
    for time in times:
        edges.extend((time - 1, time, time + 1))
    return edges + [rng.randint(low, high) for _ in range(count)]


def answers(capture: Capture, captured: set[int]) -> bool:
    """Whether a lookup may answer with this record, given the times of the replayed ones."""
    if capture.kind is RecordKind.PENDING:
        return capture.time not in captured
    return capture.kind in REPLAYED_KINDS


@pytest.mark.parametrize("seed", range(2 * len(SIZES)))
def test_single_answer_modes_agree_with_brute_force(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    size = SIZES[seed // 2]
    spread = (1, 1000)[seed % 2]  # 1 gives many captures sharing a time
    times = [rng.randint(-size * spread, size * spread) for _ in range(size)]
    captures = [random_capture(rng, time) for time in times]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    # Request, metadata and variant records are passed over, and so is a pending revisit when a
    # capture has its time (the revisit written once its original came).
    captured = {c.time for c in captures if c.kind in REPLAYED_KINDS}
    replayed = sorted(c.time for c in captures if answers(c, captured))
    with StructureFile(path) as structure:
        reader = structure.reader
        assert reader.count == size
        for query in queries_for(rng, sorted(times), 200):
            for mode in (Mode.EXACT, Mode.BEFORE, Mode.AFTER, Mode.CLOSEST):
                index = reader.find(mode, query)
                found = None if index is None else reader.record(index)
                assert found is None or answers(found, captured)
                time = None if found is None else found.time
                assert time == reference_time(mode, replayed, query), (mode, query)


@pytest.mark.parametrize("seed", range(len(SIZES)))
def test_range_agrees_with_brute_force(tmp_path: Path, seed: int) -> None:
    rng = random.Random(1000 + seed)
    size = SIZES[seed]
    times = [rng.randint(0, size * 2) for _ in range(size)]
    captures = [random_capture(rng, time) for time in times]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    ordered = sorted(captures, key=lambda c: c.time)
    with StructureFile(path) as structure:
        for _ in range(150):
            start, stop = rng.randint(-3, size * 2 + 3), rng.randint(-3, size * 2 + 3)
            limit = rng.randint(0, size + 2)
            expected = [c for c in ordered if start <= c.time <= stop][:limit]
            assert structure.reader.range(start, stop, limit) == expected, (start, stop, limit)


def test_closest_tie_picks_the_earlier_capture(tmp_path: Path) -> None:
    captures = [capture_at(100, NAME_A), capture_at(200, NAME_B)]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    with StructureFile(path) as structure:
        reader = structure.reader
        for query, expected in [(150, 100), (149, 100), (151, 200), (100, 100), (200, 200)]:
            index = reader.find(Mode.CLOSEST, query)
            assert index is not None
            assert reader.record(index).time == expected, query


def test_modes_at_the_edges(tmp_path: Path) -> None:
    captures = [capture_at(t) for t in (10, 20, 20, 30)]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    with StructureFile(path) as structure:
        reader = structure.reader
        assert reader.find(Mode.BEFORE, 9) is None
        assert reader.find(Mode.AFTER, 31) is None
        assert reader.find(Mode.EXACT, 15) is None
        assert reader.find(Mode.EXACT, 31) is None
        assert reader.find(Mode.CLOSEST, -(2**62)) == 0
        assert reader.find(Mode.CLOSEST, 2**62) == 3
        assert reader.find(Mode.BEFORE, 10**9) == 3
        assert reader.find(Mode.AFTER, -(10**9)) == 0
        exact = reader.find(Mode.EXACT, 20)
        assert exact is not None and reader.time_at(exact) == 20
        with pytest.raises(ValueError, match="range"):
            reader.find(Mode.RANGE, 20)


def test_range_with_a_limit(tmp_path: Path) -> None:
    captures = [capture_at(t) for t in range(0, 100, 10)]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    with StructureFile(path) as structure:
        reader = structure.reader
        assert [c.time for c in reader.range(15, 75, 100)] == [20, 30, 40, 50, 60, 70]
        assert [c.time for c in reader.range(15, 75, 2)] == [20, 30]
        assert [c.time for c in reader.range(20, 20, 5)] == [20]
        assert reader.range(15, 75, 0) == []
        assert reader.range(75, 15, 10) == []
        assert reader.range(91, 1000, 10) == []


@pytest.mark.parametrize("seed", range(4))
def test_records_slices(tmp_path: Path, seed: int) -> None:
    rng = random.Random(2000 + seed)
    captures = [random_capture(rng, rng.randint(0, 50)) for _ in range(rng.randint(0, 30))]
    path = write_file(tmp_path / "s", encode_file(URL, captures))
    ordered = sorted(captures, key=lambda c: c.time)
    with StructureFile(path) as structure:
        reader = structure.reader
        assert reader.records() == ordered
        for _ in range(60):
            start, stop = rng.randint(0, len(ordered) + 3), rng.randint(0, len(ordered) + 3)
            assert reader.records(start, stop) == ordered[start:stop]
            assert reader.records(start) == ordered[start:]


def test_url_and_count(tmp_path: Path) -> None:
    url = "http://exämple.test/ü?x=€"
    path = write_file(tmp_path / "s", encode_file(url, [capture_at(t) for t in (3, 1, 2)]))
    with StructureFile(path) as structure:
        assert structure.reader.url == url
        assert structure.reader.count == 3
        assert [c.time for c in structure.reader.records()] == [1, 2, 3]


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6, 7, 8, 9, 100, MAX_URL_BYTES])
def test_header_is_padded_to_eight_bytes(tmp_path: Path, length: int) -> None:
    url = "u" * length
    header = encode_header(url)
    assert len(header) % 8 == 0
    assert header_size(header) == len(header)
    path = write_file(tmp_path / "s", encode_file(url, [capture_at(5)]))
    assert path.stat().st_size == len(header) + RECORD_SIZE
    with StructureFile(path) as structure:
        assert structure.reader.url == url
        assert structure.reader.records() == [capture_at(5)]


@pytest.mark.parametrize("url", ["", "u" * (MAX_URL_BYTES + 1), "é" * (MAX_URL_BYTES // 2 + 1)])
def test_url_length_is_checked(url: str) -> None:
    with pytest.raises(BadRecord, match="URL of"):
        encode_header(url)


def test_empty_structure_file(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s", encode_file(URL, []))
    with StructureFile(path) as structure:
        reader = structure.reader
        assert reader.count == 0
        assert reader.url == URL
        for mode in (Mode.EXACT, Mode.BEFORE, Mode.AFTER, Mode.CLOSEST):
            assert reader.find(mode, 0) is None
        assert reader.range(-(2**63), 2**63 - 1, 100) == []
        assert reader.records() == []
        reader.check_all()


def test_zero_byte_file_is_corrupt(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s", b"")
    with pytest.raises(CorruptFile, match="truncated header"):
        StructureFile(path)


# Capture records


@pytest.mark.parametrize("seed", range(5))
def test_capture_pack_unpack_round_trip(seed: int) -> None:
    rng = random.Random(3000 + seed)
    for _ in range(50):
        capture = random_capture(rng, rng.randint(-(2**63), 2**63 - 1))
        packed = capture.pack()
        assert len(packed) == RECORD_SIZE == 88
        assert Capture.unpack(packed, "test") == capture
        assert Capture.from_json(capture.to_json()) == capture


def test_capture_defaults_and_json_shape() -> None:
    capture = capture_at(7)
    assert capture.kind is RecordKind.RESPONSE
    assert capture.flags == 0 and capture.offset == 0
    assert capture.to_json() == {
        "time": 7,
        "content": NAME_A,
        "header": NAME_B,
        "status": 200,
        "kind": "response",
        "flags": 0,
        "offset": 0,
    }
    flagged = Capture(1, NAME_A, NAME_B, 200, flags=RecordFlag.TRUNCATED | RecordFlag.IMPORTED)
    assert Capture.unpack(flagged.pack(), "test").flags == 3


def test_record_checksum_detects_a_flipped_byte() -> None:
    packed = bytearray(capture_at(42).pack())
    for position in range(RECORD_SIZE):
        damaged = bytearray(packed)
        damaged[position] ^= 0x01
        with pytest.raises(CorruptFile, match="where-it-is: record checksum mismatch"):
            Capture.unpack(bytes(damaged), "where-it-is")


def test_unknown_kind_with_a_valid_checksum_is_corrupt() -> None:
    raw = bytearray(capture_at(42).pack())
    raw[KIND_OFFSET] = 42
    raw[-4:] = struct.pack(">I", zlib.crc32(bytes(raw[:-4])))
    with pytest.raises(CorruptFile, match="unknown record kind 42"):
        Capture.unpack(bytes(raw), "here")


def test_flipped_byte_in_a_stored_record_names_the_record(tmp_path: Path) -> None:
    captures = [capture_at(t) for t in range(10)]
    data = bytearray(encode_file(URL, captures))
    damaged_index = 6
    data[header_size(data) + damaged_index * RECORD_SIZE + 50] ^= 0xFF
    path = write_file(tmp_path / "s", bytes(data))
    with StructureFile(path) as structure:
        reader = structure.reader
        assert reader.record(5) == captures[5]
        assert reader.records(0, 6) == captures[:6]
        message = f"{path} record {damaged_index}: record checksum mismatch"
        with pytest.raises(CorruptFile) as single:
            reader.record(damaged_index)
        assert str(single.value) == message
        with pytest.raises(CorruptFile) as many:
            reader.records()
        assert str(many.value) == message
        with pytest.raises(CorruptFile, match=f"record {damaged_index}"):
            reader.check_all(batch=4)


def test_a_damaged_time_field_is_caught_when_its_record_is_read(tmp_path: Path) -> None:
    data = bytearray(encode_file(URL, [capture_at(t) for t in (10, 20, 30)]))
    data[header_size(data) + RECORD_SIZE + 7] ^= 0x01
    path = write_file(tmp_path / "s", bytes(data))
    with StructureFile(path) as structure:
        index = structure.reader.find(Mode.EXACT, 21)
        assert index == 1
        with pytest.raises(CorruptFile, match="record 1"):
            structure.reader.record(index)


@pytest.mark.parametrize(
    ("capture", "message"),
    [
        (capture_at(1, status=1000), "HTTP status 1000"),
        (capture_at(1, status=-1), "HTTP status -1"),
        (Capture(1, NAME_A, NAME_B, 200, flags=256), "flags 256"),
        (Capture(1, NAME_A, NAME_B, 200, flags=-1), "flags -1"),
        (capture_at(2**63), "cannot be stored"),
        (capture_at(-(2**63) - 1), "cannot be stored"),
        (Capture(1, NAME_A, NAME_B, 200, offset=2**63), "cannot be stored"),
        (Capture(1, NAME_A, NAME_B, 200, kind=42), "cannot be stored"),  # type: ignore[arg-type]
    ],
)
def test_pack_refuses_out_of_range_fields(capture: Capture, message: str) -> None:
    with pytest.raises(BadRecord, match=message):
        capture.pack()


@pytest.mark.parametrize("field", ["content", "header"])
@pytest.mark.parametrize("bad", ["A" * 64, "a" * 63, "../" + "a" * 61, "z" * 64])
def test_pack_refuses_bad_names(field: str, bad: str) -> None:
    names = {"content": NAME_A, "header": NAME_B, field: bad}
    capture = Capture(1, names["content"], names["header"], 200)
    with pytest.raises(BadName):
        capture.pack()


# Capture.from_json


def good_json() -> dict[str, object]:
    return {"time": 5, "content": NAME_A, "header": NAME_B, "status": 200}


def test_from_json_fills_defaults_and_reads_kinds() -> None:
    assert Capture.from_json(good_json()) == capture_at(5)
    for kind in RecordKind:
        for spelling in (kind.name.lower(), kind.name):
            data = {**good_json(), "kind": spelling, "flags": 1, "offset": -3}
            capture = Capture.from_json(data)
            assert capture.kind is kind
            assert (capture.flags, capture.offset) == (1, -3)


@pytest.mark.parametrize("data", [None, [], "capture", 5])
def test_from_json_refuses_non_objects(data: object) -> None:
    with pytest.raises(BadRecord, match="must be a JSON object"):
        Capture.from_json(data)


@pytest.mark.parametrize("field", ["time", "content", "header", "status"])
def test_from_json_names_a_missing_field(field: str) -> None:
    data = good_json()
    del data[field]
    with pytest.raises(BadRecord, match=f"lacks the field '{field}'"):
        Capture.from_json(data)


@pytest.mark.parametrize("field", ["time", "status", "flags", "offset"])
@pytest.mark.parametrize("value", ["5", 5.0, True, None, [5]])
def test_from_json_names_a_non_integer_field(field: str, value: object) -> None:
    with pytest.raises(BadRecord, match=f"capture field '{field}' must be an integer"):
        Capture.from_json({**good_json(), field: value})


@pytest.mark.parametrize("field", ["content", "header"])
@pytest.mark.parametrize("value", [5, None, ["a" * 64]])
def test_from_json_names_a_non_string_name(field: str, value: object) -> None:
    with pytest.raises(BadRecord, match=f"capture field '{field}' must be 64 lowercase hex digits"):
        Capture.from_json({**good_json(), field: value})


@pytest.mark.parametrize("kind", ["bogus", "", 1, None, "response "])
def test_from_json_refuses_an_unknown_kind(kind: object) -> None:
    expected = "is not one of response, revisit, not_modified, stream_segment"
    with pytest.raises(BadRecord, match=expected):
        Capture.from_json({**good_json(), "kind": kind})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("status", 1000, "HTTP status 1000"),
        ("status", -5, "HTTP status -5"),
        ("flags", 256, "flags 256"),
        ("time", 2**63, "cannot be stored"),
        ("offset", -(2**63) - 1, "cannot be stored"),
    ],
)
def test_from_json_refuses_out_of_range_values(field: str, value: int, message: str) -> None:
    with pytest.raises(BadRecord, match=message):
        Capture.from_json({**good_json(), field: value})


@pytest.mark.parametrize(
    ("field", "value"), [("time", -(2**63)), ("time", 2**63 - 1), ("offset", 2**63 - 1)]
)
def test_from_json_takes_the_extremes_a_record_holds(field: str, value: int) -> None:
    capture = Capture.from_json({**good_json(), field: value})
    assert getattr(Capture.unpack(capture.pack(), "here"), field) == value


@pytest.mark.parametrize("field", ["content", "header"])
def test_from_json_refuses_a_bad_name(field: str) -> None:
    with pytest.raises(DlwebError, match="64 lowercase hex digits"):
        Capture.from_json({**good_json(), field: "A" * 64})


@pytest.mark.parametrize("field", ["content", "header"])
def test_from_json_names_the_field_holding_a_bad_name(field: str) -> None:
    with pytest.raises(BadRecord, match=f"'{field}'"):
        Capture.from_json({**good_json(), field: "A" * 64})


# Header and body corruption


def valid_file(count: int = 3) -> bytes:
    return encode_file(URL, [capture_at(t) for t in range(count)])


def set_field(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    size = struct.calcsize(fmt)
    return data[:offset] + struct.pack(fmt, value) + data[offset + size :]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: b"NOTASTRC" + d[8:], "not a structure file (bad magic b'NOTASTRC')"),
        (lambda d: reseal_header(set_field(d, 8, ">H", 2)), "format version 2 is not supported"),
        (lambda d: set_field(d, 8, ">H", 0), "format version 0 is not supported"),
        (lambda d: reseal_header(set_field(d, 10, ">H", 87)), "record size 87, expected 88"),
        (lambda d: set_field(d, 12, ">I", 8), "header sizes are inconsistent"),
        (lambda d: set_field(d, 16, ">I", MAX_URL_BYTES + 1), "header sizes are inconsistent"),
        (lambda d: d[:20] + b"X" + d[21:], "header checksum mismatch"),
        (lambda d: d[:-4] + bytes([d[-4] ^ 1]) + d[-3:], "record checksum"),
        (lambda d: d[:10], "truncated header (10 bytes)"),
        (lambda d: d[:24], "truncated header"),
        (lambda d: reseal_header(set_field(d, 12, ">I", 10_000)), "truncated header"),
    ],
    ids=[
        "magic",
        "version",
        "version-zero",
        "record-size",
        "header-size",
        "url-length",
        "header-crc",
        "record-crc",
        "short-fixed-header",
        "short-url",
        "header-past-end",
    ],
)
def test_corruption_is_reported_with_the_path(
    tmp_path: Path, damage: Callable[[bytes], bytes], message: str
) -> None:
    path = write_file(tmp_path / "s", damage(valid_file()))
    before = open_files()
    with pytest.raises(CorruptFile) as caught, StructureFile(path) as structure:
        structure.reader.check_all()
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))
    assert open_files() == before


@pytest.mark.parametrize("cut", [1, 40, RECORD_SIZE - 1])
def test_partial_record_is_reported_as_truncated(tmp_path: Path, cut: int) -> None:
    path = write_file(tmp_path / "s", valid_file(3)[:-cut])
    with pytest.raises(CorruptFile, match="truncated") as caught:
        StructureFile(path)
    assert str(path) in str(caught.value)
    assert f"{RECORD_SIZE - cut} trailing bytes after 2 whole records" in str(caught.value)


def test_check_all_detects_records_out_of_order(tmp_path: Path) -> None:
    times = [1, 2, 3, 4, 5, 3, 6]
    data = encode_header(URL) + b"".join(capture_at(t).pack() for t in times)
    path = write_file(tmp_path / "s", data)
    with StructureFile(path) as structure:
        for batch in (1, 2, 5, 4096):
            with pytest.raises(CorruptFile, match="out of time order"):
                structure.reader.check_all(batch=batch)


def test_check_all_accepts_sorted_records_with_duplicates(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s", encode_file(URL, [capture_at(t) for t in (5, 1, 5, 3)]))
    with StructureFile(path) as structure:
        for batch in (1, 2, 3, 4096):
            structure.reader.check_all(batch=batch)


# Appends and merges


def test_plan_append_skips_duplicates_and_says_in_order(tmp_path: Path) -> None:
    stored = [capture_at(t) for t in (10, 20, 30)]
    path = write_file(tmp_path / "s", encode_file(URL, stored))
    with StructureFile(path) as structure:
        fresh, in_order = structure.plan_append(
            [capture_at(50), capture_at(20), capture_at(40), capture_at(40), stored[2]]
        )
        assert fresh == [capture_at(40), capture_at(50)]
        assert in_order is True

        fresh, in_order = structure.plan_append([capture_at(40), capture_at(15)])
        assert fresh == [capture_at(15), capture_at(40)]
        assert in_order is False

        same_time = capture_at(30, content="c" * 64)
        assert structure.plan_append([same_time]) == ([same_time], True)

        other_status = capture_at(20, status=404)
        assert structure.plan_append([other_status]) == ([other_status], False)

        assert structure.plan_append(stored + stored) == ([], True)
        assert structure.plan_append([]) == ([], True)


@pytest.mark.parametrize(
    ("records", "looked_for"),
    [(50, 30), (5_000, 3), (5_000, 2_000)],
    ids=["small file", "few captures spread over a large file", "a batch imported again"],
)
def test_plan_append_agrees_with_brute_force(tmp_path: Path, records: int, looked_for: int) -> None:
    """Stored, new, repeated, tied and later captures: the plan is what a scan of the whole
    file gives, whether the records spanned are read at once or each capture searched for."""
    rng = random.Random(records + looked_for)
    times = sorted(rng.randrange(0, records * 10, 10) for _ in range(records))
    stored = [capture_at(t, content=random_name(rng)) for t in times]
    path = write_file(tmp_path / "s", encode_file(URL, stored))
    batch = rng.sample(stored, looked_for)  # already there
    batch += [
        capture_at(rng.randrange(records * 10 + 20), content=random_name(rng))
        for _ in range(looked_for)
    ]
    batch += [capture_at(t, content=random_name(rng)) for t in rng.sample(times, 3)]  # ties
    batch += batch[:5]  # repeated within the batch
    rng.shuffle(batch)
    expected = sorted(dict.fromkeys(c for c in batch if c not in set(stored)), key=lambda c: c.time)
    with StructureFile(path) as structure:
        fresh, in_order = structure.plan_append(batch)
    assert fresh == expected
    assert in_order == (not expected or expected[0].time >= times[-1])


def test_plan_append_on_an_empty_file(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s", encode_file(URL, []))
    with StructureFile(path) as structure:
        fresh, in_order = structure.plan_append([capture_at(9), capture_at(3), capture_at(9)])
        assert fresh == [capture_at(3), capture_at(9)]
        assert in_order is True


def test_append_in_order_then_reopen(tmp_path: Path) -> None:
    stored = [capture_at(t) for t in (10, 20)]
    path = write_file(tmp_path / "s", encode_file(URL, stored))
    with StructureFile(path, writable=True) as structure:
        fresh, in_order = structure.plan_append([capture_at(20), capture_at(25), capture_at(30)])
        assert in_order
        structure.append_in_order(fresh)
        assert structure.reader.count == 4
        assert structure.reader.find(Mode.EXACT, 30) == 3
        structure.append_in_order([capture_at(40)])
        assert structure.reader.count == 5
    with StructureFile(path) as reopened:
        reader = reopened.reader
        assert reader.count == 5
        assert reader.url == URL
        assert [c.time for c in reader.records()] == [10, 20, 25, 30, 40]
        reader.check_all()
    assert path.stat().st_size == len(encode_header(URL)) + 5 * RECORD_SIZE


def test_append_is_refused_on_a_read_only_file(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s", encode_file(URL, [capture_at(1)]))
    with StructureFile(path) as structure, pytest.raises(OSError):
        structure.append_in_order([capture_at(2)])
    assert path.read_bytes() == encode_file(URL, [capture_at(1)])


def test_merged_bytes_inserts_a_belated_capture_in_order(tmp_path: Path) -> None:
    stored = [capture_at(t) for t in (10, 20, 30)]
    path = write_file(tmp_path / "s", encode_file(URL, stored))
    belated = [capture_at(15, content="c" * 64), capture_at(5)]
    with StructureFile(path) as structure:
        fresh, in_order = structure.plan_append(belated)
        assert not in_order
        merged = structure.merged_bytes(fresh)
    assert merged == encode_file(URL, stored + belated)
    write_file(path, merged)
    with StructureFile(path) as reopened:
        reader = reopened.reader
        assert [c.time for c in reader.records()] == [5, 10, 15, 20, 30]
        assert reader.records()[2] == belated[0]
        assert reader.url == URL
        reader.check_all()


def test_merged_bytes_of_later_captures_equal_the_file_encoded_again(tmp_path: Path) -> None:
    stored = [capture_at(t) for t in (10, 20, 20, 30)]
    path = write_file(tmp_path / "s", encode_file(URL, stored))
    later = [capture_at(30, content="c" * 64), capture_at(40)]
    with StructureFile(path) as structure:
        assert structure.merged_bytes(later) == encode_file(URL, stored + later)
        assert structure.merged_bytes(later[::-1]) == encode_file(URL, stored + later)


def test_merged_bytes_sorts_stored_records_that_are_out_of_order(tmp_path: Path) -> None:
    stored = [capture_at(t) for t in (10, 30, 20)]
    data = encode_header(URL) + b"".join(c.pack() for c in stored)
    path = write_file(tmp_path / "s", data)
    with StructureFile(path) as structure:
        assert structure.merged_bytes([capture_at(40)]) == encode_file(
            URL, [*stored, capture_at(40)]
        )


def flip_a_content_bit(record: bytes) -> bytes:
    return record[:40] + bytes([record[40] ^ 1]) + record[41:]


def unknown_kind_resealed(record: bytes) -> bytes:
    changed = record[:KIND_OFFSET] + bytes([42]) + record[KIND_OFFSET + 1 : -4]
    return changed + struct.pack(">I", zlib.crc32(changed))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (flip_a_content_bit, "record checksum mismatch"),
        (unknown_kind_resealed, "unknown record kind 42"),
    ],
)
def test_merged_bytes_refuses_a_damaged_stored_record(
    tmp_path: Path, damage: Callable[[bytes], bytes], message: str
) -> None:
    records = [capture_at(t).pack() for t in (10, 20, 30)]
    records[1] = damage(records[1])
    path = write_file(tmp_path / "s", encode_header(URL) + b"".join(records))
    with StructureFile(path) as structure, pytest.raises(CorruptFile, match=f"record 1: {message}"):
        structure.merged_bytes([capture_at(40)])


def test_a_pending_revisit_is_found_until_a_capture_at_its_time_replaces_it(
    tmp_path: Path,
) -> None:
    pending = Capture(200, NAME_B, NAME_B, 200, RecordKind.PENDING)
    resolved = Capture(200, NAME_A, NAME_B, 200, RecordKind.REVISIT)
    path = write_file(tmp_path / "s", encode_file(URL, [capture_at(100), pending]))
    with StructureFile(path) as structure:
        for mode in (Mode.EXACT, Mode.CLOSEST, Mode.AFTER):
            index = structure.reader.find(mode, 200)
            assert index is not None and structure.reader.record(index) == pending, mode
    # The resolved revisit is written after the pending one, or (a belated merge) before it.
    for order in ([pending, resolved], [resolved, pending]):
        path = write_file(
            tmp_path / "s", encode_file(URL, [capture_at(100), *order, capture_at(300)])
        )
        with StructureFile(path) as structure:
            reader = structure.reader
            for mode, query in [
                (Mode.EXACT, 200),
                (Mode.CLOSEST, 200),
                (Mode.CLOSEST, 199),
                (Mode.AFTER, 150),
                (Mode.BEFORE, 250),
            ]:
                index = reader.find(mode, query)
                assert index is not None and reader.record(index) == resolved, (order, mode)
            # The first, last, previous and next captures sent with an answer pass over it too.
            kept = [i for i in range(reader.count) if reader.replayed_from(i, 1) == i]
            assert [reader.record(i).kind for i in kept] == [
                RecordKind.RESPONSE,
                RecordKind.REVISIT,
                RecordKind.RESPONSE,
            ]
