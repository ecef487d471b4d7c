"""Byte ranges of a body: the Range and If-Range request fields (RFC 9110, sections 13.1.5, 14).

`requested_range` reads a Range field against the body's size:

- None: send the whole body with 200. So it is for no field, a unit other than `bytes`, a field
  that does not follow the grammar (`bytes=abc`, `bytes=5-2`, longer than `MAX_FIELD` characters),
  and a set of several ranges that do not make one run of bytes once merged (`bytes=0-1,5-6`):
  HTTP lets a server ignore Range, and a multipart answer is not worth its cost here.
- a `ByteRange`: send those bytes with 206 and `Content-Range: range.content_range(size)`. Ranges
  that overlap or touch are merged (`bytes=0-1,2-5` is 0-5), those past the end dropped.
- `RangeNotSatisfiable`: no range holds a byte of the body; send 416 with
  `Content-Range: unsatisfied_range(size)`.

`if_range_holds` says whether a Range may be used at all: when it does not, the body is sent
whole with 200.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from .errors import ClientFault

# Longer fields are ignored: this bounds the work a hostile one costs.
MAX_FIELD = 1000
_SPEC_RE = re.compile(r"([0-9]*)-([0-9]*)")
_STRONG_ETAG_RE = re.compile(r'"[\x21\x23-\x7e\x80-\xff]*"')


@dataclass(frozen=True)
class ByteRange:
    """Bytes `start` to `end` of a body, both included, as Content-Range writes them."""

    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end}/{size}"


class RangeNotSatisfiable(ClientFault):
    """A Range field none of whose ranges holds a byte of the body (HTTP 416)."""

    status = 416

    def __init__(self, field: str, size: int) -> None:
        super().__init__(f"Range {field!r} selects no byte of a {size}-byte body")
        self.size = size


def unsatisfied_range(size: int) -> str:
    """The Content-Range of a 416 answer."""
    return f"bytes */{size}"


def requested_range(field: str | None, size: int) -> ByteRange | None:
    """The bytes a Range field asks for in a body of `size` bytes; None for the whole body.

    Raises RangeNotSatisfiable when the field is valid but selects no byte of the body."""
    specs = _parse(field)
    if specs is None:
        return None
    if size == 0 and any(first is None and last for first, last in specs):
        return None  # the last bytes of an empty body: all of it, which no Content-Range writes
    resolved = (_resolve(first, last, size) for first, last in specs)
    ranges = sorted((r for r in resolved if r is not None), key=lambda r: r.start)
    if not ranges:
        raise RangeNotSatisfiable(field or "", size)
    merged = ranges[0]
    for later in ranges[1:]:
        if later.start > merged.end + 1:
            return None  # two separate runs of bytes: a multipart answer, which is not made
        merged = ByteRange(merged.start, max(merged.end, later.end))
    return merged


def _parse(field: str | None) -> list[tuple[int | None, int | None]] | None:
    """A bytes range set as (first, last) pairs, first None for a suffix; None if not one."""
    if field is None or len(field) > MAX_FIELD:
        return None
    unit, equals, range_set = field.strip(" \t").partition("=")
    if not equals or unit.lower() != "bytes":
        return None
    specs: list[tuple[int | None, int | None]] = []
    for element in range_set.split(","):
        element = element.strip(" \t")
        if not element:  # empty list elements are allowed and ignored
            continue
        match = _SPEC_RE.fullmatch(element)
        if match is None or not any(match.groups()):
            return None
        first = int(match[1]) if match[1] else None
        last = int(match[2]) if match[2] else None
        if first is not None and last is not None and last < first:
            return None
        specs.append((first, last))
    return specs or None


def _resolve(first: int | None, last: int | None, size: int) -> ByteRange | None:
    """The bytes of one range in a body of `size` bytes, None when it holds none of them."""
    if first is None:  # the last `last` bytes
        assert last is not None
        return ByteRange(max(size - last, 0), size - 1) if last > 0 and size > 0 else None
    if first >= size:
        return None
    return ByteRange(first, size - 1 if last is None else min(last, size - 1))


def if_range_holds(if_range: str | None, etag: str | None, last_modified: str | None) -> bool:
    """Whether a Range may be answered given the request's If-Range and the body's validators.

    It holds without If-Range, for a strong entity tag equal to `etag` (a weak one never
    matches), and for an HTTP date equal to `last_modified`."""
    if if_range is None:
        return True
    if_range = if_range.strip(" \t")
    if if_range.startswith(('"', "W/")):
        return (
            _STRONG_ETAG_RE.fullmatch(if_range) is not None
            and etag is not None
            and etag.strip(" \t") == if_range
        )
    validator, current = _http_date(if_range), _http_date(last_modified)
    return validator is not None and validator == current


def _http_date(text: str | None) -> datetime | None:
    """An HTTP date (any of its three forms, always in GMT), None if there is none."""
    if text is None:
        return None
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
