"""Capture times: the spellings parse_time reads, the two output spellings, epoch conversions."""

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from archive.errors import DlwebError
from archive.timestamps import (
    MAX_TIME,
    BadTime,
    format_digits,
    format_iso,
    from_micros,
    parse_time,
    to_micros,
)


def micros(*fields: int, tz: timezone = UTC) -> int:
    return to_micros(datetime(*fields, tzinfo=tz))  # type: ignore[arg-type, misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2020", micros(2020, 1, 1)),
        ("202003", micros(2020, 3, 1)),
        ("20200315", micros(2020, 3, 15)),
        ("2020031512", micros(2020, 3, 15, 12)),
        ("202003151234", micros(2020, 3, 15, 12, 34)),
        ("20200315123456", micros(2020, 3, 15, 12, 34, 56)),
        ("19691231235959", -1_000_000),
        ("19700101000000", 0),
        ("99991231235959", MAX_TIME - 999_999),
        ("  20200315  ", micros(2020, 3, 15)),
    ],
)
def test_wayback_digits(text: str, expected: int) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2020-03-15T12:34:56Z", micros(2020, 3, 15, 12, 34, 56)),
        ("2020-03-15T12:34:56+00:00", micros(2020, 3, 15, 12, 34, 56)),
        ("2020-03-15T12:34:56+02:00", micros(2020, 3, 15, 10, 34, 56)),
        ("2020-03-15T12:34:56-05:30", micros(2020, 3, 15, 18, 4, 56)),
        ("2020-03-15T00:30:00+01:00", micros(2020, 3, 14, 23, 30)),
        ("2020-03-15T12:34:56", micros(2020, 3, 15, 12, 34, 56)),
        ("2020-03-15 12:34:56", micros(2020, 3, 15, 12, 34, 56)),
        ("2020-03-15", micros(2020, 3, 15)),
        ("2020-03-15T12:34:56.123456Z", micros(2020, 3, 15, 12, 34, 56, 123456)),
        ("2020-03-15T12:34:56.5Z", micros(2020, 3, 15, 12, 34, 56, 500000)),
        ("1969-12-31T23:59:59.999999Z", -1),
        ("1900-01-01T00:00:00Z", -2_208_988_800_000_000),
        ("9999-12-31T23:59:59.999999Z", MAX_TIME),
    ],
)
def test_iso_8601(text: str, expected: int) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("000000000000000", 0),
        ("000000000000001", 1),
        ("1584275696123456", micros(2020, 3, 15, 12, 34, 56, 123456)),
        (str(MAX_TIME), MAX_TIME),
    ],
)
def test_more_than_fourteen_digits_are_microseconds(text: str, expected: int) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "abc",
        "yesterday",
        "123",
        "20201301000000",
        "20200230",
        "2020031525",
        "00000101000000",
        "2020-13-01",
        "2020-03-15T25:00:00",
        "2020-03-15T12:00:00+25:00",
        "2020/03/15",
        "-20200315",
        str(MAX_TIME + 1),
        "9" * 20,
    ],
)
def test_bad_times_name_the_input(text: str) -> None:
    with pytest.raises(BadTime) as caught:
        parse_time(text)
    assert repr(text.strip()) in str(caught.value)
    assert isinstance(caught.value, DlwebError)


def test_past_year_9999_is_named() -> None:
    with pytest.raises(BadTime, match="past the year 9999"):
        parse_time(str(MAX_TIME + 1))


@pytest.mark.parametrize("text", ["1" * 21, "1" * 30])
def test_more_than_twenty_digits_are_refused(text: str) -> None:
    with pytest.raises(BadTime):
        parse_time(text)


def test_a_long_bad_input_is_shortened_in_the_message() -> None:
    text = "not a time " * 20
    with pytest.raises(BadTime) as caught:
        parse_time(text)
    assert repr(text.strip()[:40]) in str(caught.value)
    assert len(str(caught.value)) < 150


@pytest.mark.parametrize(
    ("value", "iso", "digits"),
    [
        (0, "1970-01-01T00:00:00Z", "19700101000000"),
        (1, "1970-01-01T00:00:00.000001Z", "19700101000000"),
        (-1, "1969-12-31T23:59:59.999999Z", "19691231235959"),
        (micros(2020, 3, 15, 12, 34, 56), "2020-03-15T12:34:56Z", "20200315123456"),
        (micros(2020, 3, 15, 12, 34, 56, 120000), "2020-03-15T12:34:56.120000Z", "20200315123456"),
        (MAX_TIME, "9999-12-31T23:59:59.999999Z", "99991231235959"),
    ],
)
def test_format(value: int, iso: str, digits: str) -> None:
    assert format_iso(value) == iso
    assert format_digits(value) == digits


@pytest.mark.parametrize("seed", range(3))
def test_format_round_trips(seed: int) -> None:
    rng = random.Random(seed)
    low = micros(1000, 1, 1)
    samples = [rng.randint(low, MAX_TIME) for _ in range(300)]
    samples += [rng.randint(low, MAX_TIME) // 1_000_000 * 1_000_000 for _ in range(100)]
    for value in samples:
        assert parse_time(format_iso(value)) == value
        assert parse_time(format_digits(value)) == value // 1_000_000 * 1_000_000


@pytest.mark.parametrize("text", ["09990501000000", "0001-01-01T00:00:00Z"])
def test_format_round_trips_before_year_1000(text: str) -> None:
    value = parse_time(text)
    assert len(format_digits(value)) == 14
    assert parse_time(format_digits(value)) == value
    assert parse_time(format_iso(value)) == value


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(1970, 1, 1, tzinfo=UTC), 0),
        (datetime(1970, 1, 1), 0),
        (datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC), 1),
        (datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), -1),
        (datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), -1_000_000),
        (datetime(1900, 1, 1, tzinfo=UTC), -2_208_988_800_000_000),
        (datetime(1, 1, 1, tzinfo=UTC), -62_135_596_800_000_000),
        (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), MAX_TIME),
        (datetime(1970, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))), 0),
        (datetime(1969, 12, 31, 19, tzinfo=timezone(timedelta(hours=-5))), 0),
    ],
)
def test_to_micros(moment: datetime, expected: int) -> None:
    assert to_micros(moment) == expected
    assert from_micros(expected) == moment.replace(tzinfo=moment.tzinfo or UTC)


def test_from_micros_is_utc() -> None:
    assert from_micros(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert from_micros(0).utcoffset() == timedelta(0)
    assert from_micros(MAX_TIME) == datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize("seed", range(3))
def test_micros_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    low = micros(1, 1, 1)
    edges = [0, -1, 1, low, MAX_TIME, micros(1969, 12, 31), micros(2038, 1, 19, 3, 14, 8)]
    for value in edges + [rng.randint(low, MAX_TIME) for _ in range(500)]:
        assert to_micros(from_micros(value)) == value
