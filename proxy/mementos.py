"""What a memento is sent with, by the proxy (replay.py) and the direct front (direct.py) alike:
its archived header fields that may be sent on this connection, the Memento headers of RFC
7089, and the byte range a Range field asks of it (archive/ranges.py).

In proxy mode the original URL is also its own time gate (the date comes with Accept-Datetime or
the client's date harbor). When the direct front runs, each capture has an address of its own
there (archive/archival_urls.py): the proxy's answers name it (`Content-Location`, the `memento`
links) and the front's TimeMap. URLs are escaped for `<...>`: a `>` or a quote in one would end
its entry and start another.
"""

import logging
from collections.abc import Mapping
from urllib.parse import quote

from archive.archival_urls import ArchivalUrls
from archive.cluster import FoundCapture
from archive.errors import clipped
from archive.header_block import HeaderBlock, valid_field
from archive.link_format import escape_uri
from archive.ranges import ByteRange, if_range_holds, requested_range
from archive.timestamps import format_http_date

log = logging.getLogger(__name__)

# Hop-by-hop and framing headers belong to the archived connection, not to this one; the length
# is that of the payload as stored (chunked encoding removed).
NOT_REPLAYED = frozenset(
    {
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "content-length",
    }
)
CAPTURES_TIMEMAP = "http://captures.dlweb/?format=link&url="
NEIGHBOURS = ("first", "last", "prev", "next")
MAX_CODINGS = 32  # items of an Accept-Encoding looked at


def archived_headers(url: str, header: HeaderBlock) -> list[tuple[str, str]]:
    """The archived header fields to send again: not those of the archived connection, nor
    those that are not valid HTTP (logged)."""
    headers = [(k, v) for k, v in header.headers if k.lower() not in NOT_REPLAYED]
    if all(valid_field(k, v) for k, v in headers):
        return headers
    dropped = ", ".join(repr(k[:40]) for k, v in headers if not valid_field(k, v))
    log.warning(
        "replay of %s: archived header fields not valid HTTP, left out: %s",
        clipped(url),
        clipped(dropped),
    )
    return [(k, v) for k, v in headers if valid_field(k, v)]


def memento_span(
    asked: Mapping[str, str], status: int, size: int, etag: str | None, last_modified: str | None
) -> ByteRange | None:
    """The bytes to send of a memento of `size` bytes for the request's header fields `asked`
    (case-insensitive): a range of an archived 200 only, while If-Range holds for its validators;
    None for the whole body, RangeNotSatisfiable for none of it."""
    wanted = asked.get("range")
    if (
        wanted is None
        or status != 200
        or not if_range_holds(asked.get("if-range"), etag, last_modified)
    ):
        return None
    return requested_range(wanted, size)


def memento_headers(
    url: str, found: FoundCapture, urls: ArchivalUrls | None, proxied: bool = True
) -> list[tuple[str, str]]:
    """The Memento headers of the capture `found` of `url`: served by the proxy (`proxied`) or
    at its URI-M on the direct front; `urls` are the front's addresses, None when it is off."""
    when = format_http_date(found.capture.time)
    original = escape_uri(url)
    gate = original if proxied or urls is None else escape_uri(urls.timegate(url))
    if urls is None:
        timemap = f"{CAPTURES_TIMEMAP}{quote(url, safe='')}"
    else:
        timemap = escape_uri(urls.timemap(url))
    links = [
        f'<{original}>; rel="original"',
        f'<{gate}>; rel="timegate"',
        f'<{timemap}>; rel="timemap"; type="application/link-format"',
    ]

    def memento(time: int) -> str:
        return original if urls is None else escape_uri(urls.memento(url, time))

    for key in NEIGHBOURS:
        other = found.neighbours.get(key)
        if other is not None:
            links.append(
                f'<{memento(other.time)}>; rel="{key} memento";'
                f' datetime="{format_http_date(other.time)}"'
            )
    links.append(f'<{memento(found.capture.time)}>; rel="memento"; datetime="{when}"')
    headers = [("Memento-Datetime", when), ("Link", ", ".join(links))]
    if proxied:
        headers.append(("Vary", "accept-datetime"))
        if urls is not None:
            headers.append(("Content-Location", memento(found.capture.time)))
    return headers


def accepts(accept_encoding: str | None, coding: str) -> bool:
    """Whether a client that sent this Accept-Encoding takes a body in content coding `coding`:
    any coding when it sent none (RFC 9110), else one it lists, or `*`, without `q=0`
    (`x-gzip` is `gzip`)."""
    if accept_encoding is None:
        return True
    wanted = _coding_name(coding)
    for part in accept_encoding.split(",")[:MAX_CODINGS]:
        name, _, params = part.partition(";")
        if _coding_name(name) in (wanted, "*") and not _refused(params):
            return True
    return False


def _coding_name(text: str) -> str:
    name = text.strip().lower()
    return "gzip" if name == "x-gzip" else name


def _refused(params: str) -> bool:
    """Whether the parameters of an Accept-Encoding item give it q=0."""
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value.strip()[:10]) == 0
            except ValueError:
                return False
    return False
