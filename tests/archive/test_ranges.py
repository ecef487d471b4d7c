"""Range and If-Range: the bytes a request asks for, what is ignored, what is unsatisfiable."""

import pytest

from archive.errors import DlwebError
from archive.ranges import (
    MAX_FIELD,
    ByteRange,
    RangeNotSatisfiable,
    if_range_holds,
    requested_range,
    unsatisfied_range,
)

SIZE = 100


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("bytes=0-0", ByteRange(0, 0)),
        ("bytes=10-19", ByteRange(10, 19)),
        ("bytes=-1", ByteRange(99, 99)),
        ("bytes=-30", ByteRange(70, 99)),
        ("bytes=-500", ByteRange(0, 99)),
        ("bytes=40-", ByteRange(40, 99)),
        ("bytes=90-5000", ByteRange(90, 99)),
        ("bytes=99-99", ByteRange(99, 99)),
        ("Bytes=0-9", ByteRange(0, 9)),
        ("  bytes=0-9\t", ByteRange(0, 9)),
    ],
)
def test_a_single_range_selects_its_bytes_clamped_to_the_body(
    field: str, expected: ByteRange
) -> None:
    assert requested_range(field, SIZE) == expected


def test_a_range_writes_its_length_and_content_range() -> None:
    selected = ByteRange(10, 19)
    assert selected.length == 10
    assert selected.content_range(SIZE) == "bytes 10-19/100"


@pytest.mark.parametrize("field", ["bytes=100-", "bytes=100-200", "bytes=-0", "bytes=500-,-0"])
def test_a_valid_range_with_no_byte_of_the_body_is_unsatisfiable(field: str) -> None:
    with pytest.raises(RangeNotSatisfiable) as raised:
        requested_range(field, SIZE)
    assert isinstance(raised.value, DlwebError) and raised.value.size == SIZE
    assert unsatisfied_range(SIZE) == "bytes */100"


@pytest.mark.parametrize(
    "field",
    [
        None,
        "",
        "bytes=",
        "bytes=,",
        "bytes",
        "bytes=abc",
        "bytes=5-2",
        "bytes=-",
        "bytes=0-1,abc",
        "bytes=1_0-20",
        "bytes=\u0661-2",
        "bytes = 0-1",
        "bytes=0 - 1",
        "items=0-1",
    ],
)
def test_a_missing_malformed_or_foreign_range_is_ignored(field: str | None) -> None:
    assert requested_range(field, SIZE) is None


def test_a_field_longer_than_the_cap_is_ignored_unread() -> None:
    field = "bytes=0-" + "9" * 4992
    assert len(field) == 5000 > MAX_FIELD
    assert requested_range(field, SIZE) is None
    assert requested_range("bytes=0-" + "0" * (MAX_FIELD - 10) + "9", SIZE) == ByteRange(0, 9)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("bytes=0-4,5-9", ByteRange(0, 9)),
        ("bytes=5-9, 0-6", ByteRange(0, 9)),
        ("bytes=0-9,2-3", ByteRange(0, 9)),
        ("bytes=90-,-5", ByteRange(90, 99)),
        ("bytes=0-1,500-600", ByteRange(0, 1)),
        ("bytes=, 0-1 ,,", ByteRange(0, 1)),
    ],
)
def test_ranges_that_overlap_or_touch_are_merged_into_one(field: str, expected: ByteRange) -> None:
    assert requested_range(field, SIZE) == expected


@pytest.mark.parametrize("field", ["bytes=0-1,5-6", "bytes=0-0,-1"])
def test_ranges_that_stay_apart_are_ignored_for_the_whole_body(field: str) -> None:
    assert requested_range(field, SIZE) is None


def test_an_empty_body_has_no_range_but_its_whole_self() -> None:
    assert requested_range("bytes=-5", 0) is None
    with pytest.raises(RangeNotSatisfiable):
        requested_range("bytes=0-", 0)


ETAG = '"v1-abc"'
DATE = "Sun, 06 Nov 1994 08:49:37 GMT"


@pytest.mark.parametrize(
    ("if_range", "etag", "last_modified", "holds"),
    [
        (None, None, None, True),
        (ETAG, ETAG, DATE, True),
        (f" {ETAG} ", ETAG, None, True),
        ('"v2"', ETAG, DATE, False),
        (ETAG, None, DATE, False),
        (f"W/{ETAG}", f"W/{ETAG}", DATE, False),
        (ETAG, f"W/{ETAG}", DATE, False),
        ('"unclosed', '"unclosed', DATE, False),
        (DATE, ETAG, DATE, True),
        (DATE, ETAG, "Sunday, 06-Nov-94 08:49:37 GMT", True),
        (DATE, ETAG, "Sun Nov  6 08:49:37 1994", True),
        (DATE, ETAG, "Sun, 06 Nov 1994 08:49:38 GMT", False),
        (DATE, ETAG, None, False),
        (DATE, ETAG, "not a date", False),
        ("garbage", ETAG, DATE, False),
        ("", ETAG, DATE, False),
        ("Sun, 06 Nov 1994 08:49:99 GMT", ETAG, DATE, False),
    ],
)
def test_if_range_holds_for_a_strong_etag_or_the_exact_date(
    if_range: str | None, etag: str | None, last_modified: str | None, holds: bool
) -> None:
    assert if_range_holds(if_range, etag, last_modified) is holds
