"""The keys the index looks pages up by: a URL's SURT key, fragment dropped (for backlinks and
similar pages, backlinks.py), and the four 16-bit bands of a simhash (for similar pages)."""

import functools
import re
from urllib.parse import urldefrag

from archive.url_index import surt_key

from .errors import BadLinkQuery

BANDS = 4
BAND_BITS = 16
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# A scheme as a user may write it (`mailto:`), not a host and port (`example.org:8080`).
_ASKED_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?![0-9])")


@functools.lru_cache(maxsize=1 << 16)
def link_key(url: str) -> str:
    """The key of a URL as a link target or a page: its SURT key as the CDX API computes it
    (`org,example)/path?a=1&b=2`: no scheme, no `www.`, the query sorted, lowercased), without its
    fragment; a URL without a scheme is taken as http. Kept for the URLs met lately: the pages of
    a site link to the same ones, and a SURT key costs more than the rest of a link's indexing."""
    url = url.strip()
    if not _SCHEME.match(url):
        url = "http://" + url
    return surt_key(urldefrag(url)[0] if "#" in url else url)


def asked_key(url: str) -> str:
    """The key of a URL a user asked about; BadLinkQuery when it is empty or not http(s)."""
    if not url.strip():
        raise BadLinkQuery("give the URL of a page: ?url=http://example.org/")
    scheme = _ASKED_SCHEME.match(url.strip())
    if scheme and scheme.group(1).lower() not in ("http", "https"):
        raise BadLinkQuery(f"url={url!r} is not http or https")
    return link_key(url)


def bands(signature: int) -> list[str]:
    """The simhash's four 16-bit bands as index terms, `0:1a2b` to `3:ffff` (the band's number
    first: equal bits at another place are no match)."""
    mask = (1 << BAND_BITS) - 1
    return [f"{i}:{(signature >> (BAND_BITS * i)) & mask:04x}" for i in range(BANDS)]
