"""The parts of a URL given from outside (a request's parameter, a configuration's value), read
once it is found to be bounded, valid text without control characters, with a host and a port
that can be read: what a URL is checked for before anything uses its parts.

Light on purpose: the configuration reads the HIP proxy's URL with it when any command starts.
"""

import re
from urllib.parse import SplitResult, urlsplit

MAX_URL_LENGTH = 8192  # characters of a URL this archive takes from outside
SHOWN_LENGTH = 100  # characters of a refused URL its message quotes
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown_url(url: str) -> str:
    """A URL as a message quotes it: its first SHOWN_LENGTH characters."""
    return repr(url[:SHOWN_LENGTH]) + ("..." if len(url) > SHOWN_LENGTH else "")


def split_url(url: str, longest: int, shown: str) -> SplitResult:
    """`url` split into parts whose host and port can be read: at most `longest` characters of
    valid text without control characters. Else a ValueError saying why, naming the URL as
    `shown` (its caller quotes it, clipped, its secrets left out)."""
    if len(url) > longest:
        raise ValueError(f"{shown} is longer than {longest:,} characters")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{shown} is not valid UTF-8") from None
    if _CONTROL.search(url):
        raise ValueError(f"{shown} holds a control character")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port out of range or not a number raises)
    except ValueError as exc:
        raise ValueError(f"{shown} cannot be read as a URL: {exc}") from None
    return parts
