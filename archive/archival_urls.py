"""pywb's archival URLs, which give each capture an address of its own, its URI-M (RFC 7089),
on the direct front (proxy/direct.py):

    {base}/{collection}/{timestamp}{modifier}/{url}   a memento: the capture closest to the time
    {base}/{collection}/timemap/{format}/{url}        the URL's TimeMap (link, json or cdxj)
    {base}/{collection}/{url}                         its TimeGate (the time in Accept-Datetime)
    {base}/cdx, {base}/{collection}/cdx               the CDX API

`parse` reads what a request's path asks for; `ArchivalUrls` writes the addresses, for the front
and for the proxy's Memento headers. The URL is the rest of the path and its query as sent; one
without a scheme is taken as http, as pywb takes it, `http:/host` (a slash lost on the way) as
`http://host`, and one whose scheme is percent-encoded (`http%3A//host/a%3Fb`, a client that
quoted it whole) is decoded whole.
"""

import re
from dataclasses import dataclass
from urllib.parse import unquote

from .errors import ClientFault, ConfigError, NotFound
from .timestamps import format_digits

# pywb's modifiers: `id_` asks for the archived bytes as they are; the others ask pywb to
# rewrite for a context (`mp_` the main page, `if_` a frame, `js_`, `cs_`, `im_`, `oe_`...). The
# front never rewrites: each answers as `id_` does.
MODIFIER = re.compile(r"[a-z]{2}_")
TIMEMAP_FORMATS = ("link", "json", "cdxj")
MAX_TIMESTAMP = 14
_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RESERVED = ("cdx", "timemap")
_STAMP = re.compile(r"([0-9]+)([a-z]{2}_)?")
_QUOTED = re.compile(r"https?%3a", re.IGNORECASE)
_HOST = re.compile(r"([A-Za-z0-9.-]+)(?::[0-9]{1,5})?")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):/*")


class BadArchivalUrl(ClientFault):
    """A path of the direct front that cannot be read: the message says which part and why."""


class NoCollection(NotFound):
    """A collection the front does not serve."""


@dataclass(frozen=True)
class Memento:
    """`{collection}/{timestamp}{modifier}/{url}`: the capture of `url` closest to `timestamp`."""

    url: str
    timestamp: str  # 1 to 14 digits, as asked
    modifier: str  # "" or pywb's two letters and `_`


@dataclass(frozen=True)
class TimeMap:
    """`{collection}/timemap/{format}/{url}`: every capture of `url`, in one of TIMEMAP_FORMATS."""

    url: str
    format: str


@dataclass(frozen=True)
class TimeGate:
    """`{collection}/{url}`: a redirect to the capture of `url` closest to Accept-Datetime."""

    url: str


@dataclass(frozen=True)
class Cdx:
    """The CDX API, its parameters in the query."""


Asked = Memento | TimeMap | TimeGate | Cdx


@dataclass(frozen=True)
class ArchivalUrls:
    """The addresses of one collection on a front whose root is `base` (no slash at its end)."""

    base: str
    collection: str

    @classmethod
    def at(cls, root: str) -> "ArchivalUrls":
        """The addresses under `root`, `{base}/{collection}`."""
        base, _, collection = root.rstrip("/").rpartition("/")
        return cls(base, collection)

    @property
    def root(self) -> str:
        return f"{self.base}/{self.collection}"

    def memento(self, url: str, time: int, modifier: str = "") -> str:
        return f"{self.root}/{format_digits(time)}{modifier}/{url}"

    def timemap(self, url: str, shape: str = "link") -> str:
        return f"{self.root}/timemap/{shape}/{url}"

    def timegate(self, url: str) -> str:
        return f"{self.root}/{url}"


def check_collection(name: str) -> str:
    """A collection's name, checked: letters, digits, `_`, `.` and `-`, not a word the front's
    paths use; ConfigError otherwise."""
    if _COLLECTION.fullmatch(name) is None or name in RESERVED:
        raise ConfigError(
            f"collection name {name[:100]!r}: use 1 to 64 letters, digits, '_', '.' or '-',"
            f" not {' or '.join(RESERVED)}"
        )
    return name


def parse(path: str, collections: tuple[str, ...]) -> tuple[str, Asked]:
    """The collection and what a request's raw path (with its query) asks for; BadArchivalUrl
    or NoCollection naming what is wrong."""
    rest = path.lstrip("/")
    bare = rest.split("?", 1)[0]  # a URL in the query may hold slashes
    if bare == "cdx":
        return "", Cdx()
    collection, _, inner = bare.partition("/")
    if collection not in collections:
        shown = ", ".join(f"/{name}/" for name in collections)
        raise NoCollection(f"no collection {collection[:100]!r} here: the archive is at {shown}")
    if inner == "cdx":
        return collection, Cdx()
    rest = rest[len(collection) + 1 :]
    first, _, after = rest.partition("/")
    if first == "timemap":
        shape, _, url = after.partition("/")
        if shape not in TIMEMAP_FORMATS:
            raise BadArchivalUrl(
                f"timemap/{shape[:40]}: the TimeMap formats are {', '.join(TIMEMAP_FORMATS)}"
            )
        return collection, TimeMap(absolute(url), shape)
    stamp = _STAMP.fullmatch(first)
    if stamp is None:
        return collection, TimeGate(absolute(rest))
    digits, modifier = stamp.group(1), stamp.group(2) or ""
    if len(digits) > MAX_TIMESTAMP:
        raise BadArchivalUrl(
            f"timestamp {digits[:40]!r} has {len(digits)} digits: give at most 14, YYYYMMDDhhmmss"
        )
    return collection, Memento(absolute(after), digits, modifier)


def absolute(url: str) -> str:
    """The archived URL a path ends with, with its scheme; BadArchivalUrl when there is none."""
    if not url:
        raise BadArchivalUrl("give the archived URL after the timestamp: /web/2019/http://...")
    if _QUOTED.match(url):  # a client that quoted the whole URL (cdx-toolkit's `wb=` fetches)
        url = unquote(url)
    scheme = _SCHEME.match(url)
    if scheme is None or not url[scheme.end(1) :].startswith(":/"):
        host = _HOST.fullmatch(url.split("/", 1)[0].split("?", 1)[0])
        if host is None or ("." not in host.group(1) and host.group(1) != "localhost"):
            raise BadArchivalUrl(
                f"{url[:100]!r} is not an absolute URL such as http://example.org/"
            )
        return f"http://{url}"
    if scheme.group(1).lower() not in ("http", "https"):
        raise BadArchivalUrl(f"{url[:100]!r}: the archive holds http and https URLs")
    return f"{scheme.group(1).lower()}://{url[scheme.end() :]}"
