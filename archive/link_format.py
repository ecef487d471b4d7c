"""URIs as they go out between `<` and `>`: in a Link header (RFC 8288), a link-format document
such as a Memento TimeMap (RFC 6690), or a Location header.

An archived URL is whatever a crawled site or an imported file said: it may hold `>`, `"`, a
space, a control character or text beyond ASCII. Written raw between the brackets, it ends the
entry early and what follows reads as entries or parameters of the archive's own; in a header, a
CR LF starts a header of the sender's choosing. So every character a URI reference may not hold
is percent-encoded (its UTF-8 bytes), and the escapes already there are kept: the URI the reader
gets names the same resource, in ASCII only.
"""

import re
from collections.abc import Callable, Sequence

from .timestamps import format_http_date

LINK_FORMAT = "application/link-format"

# What a URI reference may hold (RFC 3986: unreserved, gen-delims, sub-delims), and `%` only as
# the start of an escape.
_URI = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;="
_CLEAN = re.compile(rf"(?:[{_URI}]|%[0-9A-Fa-f]{{2}})*")
_NOT_URI = re.compile(rf"%(?![0-9A-Fa-f]{{2}})|[^{_URI}%]+")


def escape_uri(uri: str) -> str:
    """`uri` with every character a URI reference may not hold percent-encoded, its escapes
    kept: safe inside `<...>` and in a header. Text that is not valid Unicode (a lone surrogate,
    as a byte that was not UTF-8 is decoded) is encoded too, never refused."""
    if _CLEAN.fullmatch(uri):
        return uri
    return _NOT_URI.sub(_escaped, uri)


def _escaped(match: re.Match[str]) -> str:
    text = match.group()
    try:
        data = text.encode("utf-8", "surrogateescape")  # a byte decoded so: that byte again
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


def timemap(
    url: str,
    times: Sequence[int],
    me: str,
    gate: str,
    memento: Callable[[int], str],
    ends_marked: bool = True,
) -> str:
    """A Memento TimeMap (RFC 7089, in RFC 6690's link format) of `url`'s captures at `times`
    (oldest first, at least one): `me` its own address, `gate` the URL's TimeGate, `memento`
    the address of the capture at a time. With `ends_marked`, the first and last are `first
    memento` and `last memento`; without, every one is a `memento`, as pywb lists them (and
    clients that keep only that rel expect). Every URI is escaped."""
    first, last = format_http_date(times[0]), format_http_date(times[-1])
    lines = [
        f'<{escape_uri(url)}>; rel="original"',
        f'<{escape_uri(me)}>; rel="self"; type="{LINK_FORMAT}"; from="{first}"; until="{last}"',
        f'<{escape_uri(gate)}>; rel="timegate"',
    ]
    last_index = len(times) - 1
    for index, time in enumerate(times):
        ends = ("first " if index == 0 else "") + ("last " if index == last_index else "")
        rel = f"{ends if ends_marked else ''}memento"
        lines.append(
            f'<{escape_uri(memento(time))}>; rel="{rel}"; datetime="{format_http_date(time)}"'
        )
    return ",\n".join(lines) + "\n"
