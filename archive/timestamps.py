"""Capture times: integers of UTC microseconds since the epoch, and the spellings users type.

Years are always written with four digits: strftime("%Y") does not pad years before 1000.
"""

import email.utils
import re
from datetime import UTC, datetime, timedelta

from .errors import ClientFault

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DIGITS_RE = re.compile(r"\d{4,}")
# The largest time a structure record holds (signed 64-bit microseconds) is far past year 9999.
MAX_TIME = 253402300799999999
MIN_TIME = -62135596800000000  # 0001-01-01T00:00:00Z, the first time a datetime holds
# The captures the archive holds are dated from the Unix epoch to the end of the year 2999: a date
# outside is a writer's error (a WARC dated year 0001 or 9999), refused per record on insert.
FIRST_CAPTURE_TIME = 0
LAST_CAPTURE_TIME = 32503680000 * 1_000_000 - 1


class BadTime(ClientFault):
    """A date or time a user gave that cannot be read."""


def check_capture_time(micros: int) -> None:
    """BadTime when a capture's time lies outside FIRST_CAPTURE_TIME..LAST_CAPTURE_TIME."""
    if not FIRST_CAPTURE_TIME <= micros <= LAST_CAPTURE_TIME:
        shown = format_iso(micros) if MIN_TIME <= micros <= MAX_TIME else str(micros)
        first, last = format_iso(FIRST_CAPTURE_TIME), format_iso(LAST_CAPTURE_TIME)
        raise BadTime(
            f"capture time {shown} is outside the dates this archive holds, {first} to {last}"
        )


def to_micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def parse_time(text: str) -> int:
    """Read a time as 4 to 14 digits (YYYY[MM[DD[hh[mm[ss]]]]], the Wayback form), as more than
    14 digits (microseconds since the epoch), or as ISO 8601 (UTC when no zone is given); BadTime
    when it cannot be read, or falls outside the years 0001 to 9999 (MIN_TIME to MAX_TIME)."""
    text = text.strip()
    if _DIGITS_RE.fullmatch(text):
        if len(text) > 14:
            if len(text) > len(str(MAX_TIME)) or int(text) > MAX_TIME:
                raise BadTime(f"time {text[:40]!r} is past the year 9999")
            return int(text)
        padded = text + "0101000000"[len(text) - 4 :] if len(text) < 14 else text
        try:
            return to_micros(datetime.strptime(padded, "%Y%m%d%H%M%S"))
        except ValueError:
            raise BadTime(f"time {text!r} is not a valid YYYYMMDDhhmmss date") from None
    try:
        micros = to_micros(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise BadTime(
            f"time {text[:40]!r} is neither 4-14 digits (YYYYMMDDhhmmss) nor ISO 8601"
        ) from None
    if not MIN_TIME <= micros <= MAX_TIME:  # a zone's offset took it past year 1 or 9999
        raise BadTime(f"time {text[:40]!r} is outside the years 0001 to 9999 in UTC")
    return micros


def format_iso(micros: int) -> str:
    """ISO 8601 in UTC with a Z, microseconds shown only when there are some."""
    moment = from_micros(micros)
    spec = "-%m-%dT%H:%M:%S.%fZ" if moment.microsecond else "-%m-%dT%H:%M:%SZ"
    return f"{moment.year:04d}" + moment.strftime(spec)


def format_digits(micros: int) -> str:
    """The 14-digit Wayback spelling of a time (seconds precision)."""
    moment = from_micros(micros)
    return f"{moment.year:04d}" + moment.strftime("%m%d%H%M%S")


def format_http_date(micros: int) -> str:
    """The RFC 1123 spelling HTTP uses (Memento-Datetime, Accept-Datetime), to the second."""
    return email.utils.format_datetime(from_micros(micros - micros % 1_000_000), usegmt=True)


def parse_http_date(text: str) -> int:
    """Read an RFC 1123 date such as `Sat, 01 Jan 2022 00:00:00 GMT`."""
    try:
        moment = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        raise BadTime(
            f"{text[:60]!r} is not an HTTP date such as 'Sat, 01 Jan 2022 00:00:00 GMT'"
        ) from None
    return to_micros(moment)
