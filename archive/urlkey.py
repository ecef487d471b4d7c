"""The canonical key of an archived URL, and the structure file name derived from it.

Two spellings of the same resource must reach the same structure file, whether the URL comes from
the crawler when storing or from a browser through the proxy when looking up. The rules are listed,
in the order they are applied, in docs/urlkey.md; each step below names its rule number.
"""

import functools
import ipaddress
import re
from urllib.parse import quote, unquote_to_bytes, urlsplit

import idna

from .errors import ClientFault
from .hashing import sha256_hex
from .url_parts import MAX_URL_LENGTH, shown_url

URLS_CACHED = 256
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEX = "0123456789ABCDEFabcdef"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")
_C0_OR_SPACE = "".join(chr(c) for c in range(0x21))
_HOST_CHARS = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+")
_BAD_HOST_CHAR = re.compile(r"[^a-z0-9\-._~!$&'()*+,;=]")
_PORT = re.compile(r"[0-9]*")

# Text needing no percent-encoding change, tried first because it is the common case.
_PATH_CLEAN = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_QUERY_CLEAN = re.compile(r"[A-Za-z0-9\-._~!$&()*+,;=:@/?]*")
# A valid escape, a run of characters that must be escaped, or a lone "%".
_PATH_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]+|%")
_QUERY_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&()*+,;=:@/?%]+|%")
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)")

_ALWAYS_SESSION_NAMES = r"jsessionid|phpsessid|aspsessionid[a-z]*"
_SESSION_PATH_PARAM = re.compile(rf";(?i:{_ALWAYS_SESSION_NAMES})=[^/;]*")
_SESSION_QUERY_PARAM = re.compile(
    rf"[^&=]*=(?:[0-9A-Fa-f]{{32}}|[0-9A-Fa-f]{{40}})"
    rf"|(?i:{_ALWAYS_SESSION_NAMES})(?:=[^&]*)?"
    r"|(?i:sid|cfid|cftoken)=[0-9A-Fa-f\-]{16,}"
)
_SESSION_QUERY_SEARCH = re.compile(rf"(?:^|&)(?:{_SESSION_QUERY_PARAM.pattern})(?:&|$)")
# A URL the rules leave as it is, the common case (what crawlers and WARC writers send): http or
# https in lowercase, a host of lowercase letters, digits and hyphens in non-empty labels, no
# port or one in digits without a leading zero, no user information, a path of characters needing
# no escape with no ";" and no "/." (so no dot segment), an optional non-empty query of such
# characters, no fragment. Only the port's range and default, and a session parameter in its
# query, are then left to look at.
_ALREADY_CANONICAL = re.compile(
    r"(https?)://[a-z0-9-]+(?:\.[a-z0-9-]+)*"
    r"(?::([1-9][0-9]{0,4}))?"
    r"(?:/(?!\.)[A-Za-z0-9\-._~!$&'()*+,=:@]*)+"
    r"(?:\?([A-Za-z0-9\-._~!$&()*+,;=:@/?]+))?"
)


class BadUrl(ClientFault):
    """A URL the archive cannot key: not http(s), no host, bad port, too long, malformed."""


def _escape_table() -> dict[str, str]:
    """Every spelling of "%XX": decoded when unreserved, else with uppercase hex digits."""
    table = {}
    for high in _HEX:
        for low in _HEX:
            char = chr(int(high + low, 16))
            table["%" + high + low] = char if char in _UNRESERVED else "%" + (high + low).upper()
    return table


_ESCAPES = _escape_table()
_CONTROL_ESCAPES = {chr(c): f"%{c:02X}" for c in [*range(0x21), 0x7F]}


def _fix_percent(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "%":
        return _ESCAPES.get(text, "%25")
    return quote(text, safe="", errors="strict")


def _bad(url: str, reason: str) -> BadUrl:
    return BadUrl(f"bad URL {shown_url(url)}: {reason}")


def _escape_controls(url: str) -> str:
    """Rule 2: trim the ends as browsers do, then escape every other control or space."""
    url = url.strip(_C0_OR_SPACE)
    return _CONTROL_OR_SPACE.sub(lambda m: _CONTROL_ESCAPES[m.group()], url)


def _split_host_port(url: str, hostport: str) -> tuple[str, str, bool]:
    """Host text, port text and whether the host was an IPv6 literal in brackets."""
    if hostport.startswith("["):
        host, bracket, rest = hostport[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise _bad(url, "malformed IPv6 literal in host")
        return host, rest[1:], True
    host, _, port = hostport.partition(":")
    return host, port, False


def _canonical_port(url: str, scheme: str, port: str) -> str:
    """Rule 7: the port as ":N", or "" when absent, empty or the scheme's default."""
    if not port:
        return ""
    if _PORT.fullmatch(port) is None:
        raise _bad(url, f"port {port[:20]!r} is not a number")
    digits = port.lstrip("0")
    if not digits or len(digits) > 5 or int(digits) > 65535:
        raise _bad(url, f"port {port[:20]!r} is out of range 1-65535")
    number = int(digits)
    return "" if number == _DEFAULT_PORTS[scheme] else f":{number}"


def _ipv6_host(url: str, host: str) -> str:
    if "%" in host:
        raise _bad(url, "IPv6 zone identifiers are not accepted")
    try:
        return "[" + ipaddress.IPv6Address(host).compressed + "]"
    except ValueError:
        raise _bad(url, f"host [{host[:60]}] is not an IPv6 address") from None


def _idna_host(url: str, host: str) -> str:
    """Rule 6: UTS 46 mapping then punycode for every non-ASCII label, as browsers do."""
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False).rstrip(".")
        labels = [
            label if label.isascii() else idna.alabel(label).decode("ascii")
            for label in mapped.split(".")
        ]
    except UnicodeError as error:
        raise _bad(url, f"host cannot be converted to IDNA: {error}") from None
    return ".".join(labels)


def _canonical_host(url: str, host: str) -> str:
    """Rule 6: percent-decoded, lowercase, IDNA-encoded, without trailing dot."""
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(url, "percent-encoded host is not UTF-8") from None
    if _CONTROL_OR_SPACE.search(host):
        raise _bad(url, "control character or space in host")
    host = host.lower().rstrip(".") if host.isascii() else _idna_host(url, host)
    if not host:
        raise _bad(url, "missing host")
    if _HOST_CHARS.fullmatch(host) is None:
        bad = _BAD_HOST_CHAR.search(host)
        raise _bad(url, f"invalid character {bad.group() if bad else ''!r} in host")
    if host.startswith(".") or ".." in host:
        raise _bad(url, "empty label in host")
    return host


def _remove_dot_segments(path: str) -> str:
    """Rule 11: RFC 3986 section 5.2.4 on a path that starts with "/"."""
    output: list[str] = []
    segments = path.split("/")[1:]
    for segment in segments:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _canonical_path(path: str) -> str:
    """Rules 8 to 11: "/" when empty, escapes normalised, session parameters and dots removed."""
    if not path:
        return "/"
    if _PATH_CLEAN.fullmatch(path) is None:
        path = _PATH_FIX.sub(_fix_percent, path)
    if ";" in path:
        path = _SESSION_PATH_PARAM.sub("", path)
    if _DOT_SEGMENT.search(path):
        path = _remove_dot_segments(path)
    return path


def _canonical_query(query: str) -> str:
    """Rules 9, 12 and 13: escapes normalised, session parameters removed, order kept."""
    if not query:
        return ""
    if _QUERY_CLEAN.fullmatch(query) is None:
        query = _QUERY_FIX.sub(_fix_percent, query)
    if _SESSION_QUERY_SEARCH.search(query):
        query = "&".join(
            param for param in query.split("&") if _SESSION_QUERY_PARAM.fullmatch(param) is None
        )
    return "?" + query if query else ""


# A URL comes in several times in a row: a WARC's request and response records, then the index
# node and the storage node each naming its structure file. The caches are kept small (about
# 100 KB): a crawler agent canonicalises every link it finds, and its memory is counted.
@functools.lru_cache(maxsize=URLS_CACHED)
def canonical_url(url: str) -> str:
    """The URL in the one spelling under which the archive stores and looks it up."""
    if len(url) <= MAX_URL_LENGTH and (plain := _ALREADY_CANONICAL.fullmatch(url)) is not None:
        scheme, port, query = plain.groups()
        if (port is None or _DEFAULT_PORTS[scheme] != int(port) <= 65535) and (
            query is None or _SESSION_QUERY_SEARCH.search(query) is None
        ):
            return url
    return _canonical_url(url)


def _canonical_url(url: str) -> str:
    """`canonical_url` by the rules, one after the other."""
    if len(url) > MAX_URL_LENGTH:
        raise _bad(url, f"longer than {MAX_URL_LENGTH} characters")
    printable = url.isprintable() and " " not in url
    try:
        parts = urlsplit(url if printable else _escape_controls(url))
    except ValueError as error:
        raise _bad(url, str(error)) from None
    scheme = parts.scheme
    if scheme not in _DEFAULT_PORTS:
        raise _bad(url, f"scheme {scheme!r} is not http or https" if scheme else "no scheme")
    if not parts.netloc:
        raise _bad(url, "missing host")
    host, port, bracketed = _split_host_port(url, parts.netloc.rpartition("@")[2])
    host = _ipv6_host(url, host) if bracketed else _canonical_host(url, host)
    try:
        path = _canonical_path(parts.path)
        query = _canonical_query(parts.query)
    except UnicodeEncodeError:
        raise _bad(url, "text is not valid Unicode (lone surrogate)") from None
    canonical = f"{scheme}://{host}{_canonical_port(url, scheme, port)}{path}{query}"
    if len(canonical) > MAX_URL_LENGTH:
        raise _bad(url, f"canonical form is longer than {MAX_URL_LENGTH} characters")
    return canonical


def url_key(url: str) -> bytes:
    """The bytes hashed to name the URL's structure file."""
    return canonical_url(url).encode("utf-8")


@functools.lru_cache(maxsize=URLS_CACHED)
def structure_name(url: str) -> str:
    """The name of the structure file holding the captures of `url`."""
    return sha256_hex(url_key(url))
