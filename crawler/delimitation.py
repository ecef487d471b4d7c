"""What belongs to the site being crawled, and how deep the crawl may go.

A collect order delimits a site with a start URL, a maximum depth and two expressions, accept and
reject: a link is internal when it matches accept and not reject, external otherwise. Dynamic-looking
URLs get a smaller maximum depth, since that is where endless link spaces usually hide.

Expressions use a simplified syntax. Terms are separated by the word OR between spaces, by new
lines or by commas, and each is matched against the canonical URL (archive.urlkey.canonical_url):

- `//HOST` matches that host exactly, on any port and either scheme: `//tf1.fr` matches
  `https://tf1.fr:8080/a` but neither `http://eurosport.tf1.fr/` nor `http://tf1.fr.evil.com/`;
- `.HOST` matches its subdomains, not the host itself: `.tf1.fr` matches `http://a.b.tf1.fr/`;
- either may go on with a path, matched as a prefix of the path and query: `//tf1.fr/news/`;
- `re:PATTERN` is a regular expression searched in the URL; it ends at OR or at the end of its
  line, so commas belong to it;
- any other term is a plain substring of the URL: `/forum/`, `?print=`.

Hosts are compared in their canonical form (lowercase, IDNA), so `//TF1.FR` means `//tf1.fr`. A
file extension cannot be a `.` term, which always means a host suffix: use `re:\\.pdf$`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from archive.crawl_calls import delimitation_fields
from archive.errors import ClientFault
from archive.hip import RemoteError
from archive.hosts import is_address
from archive.urlkey import BadUrl, canonical_url

SCRIPT_EXTENSIONS = frozenset(
    {"php", "phtml", "asp", "aspx", "jsp", "cgi", "pl", "py", "cfm", "do", "action"}
)
REGEX_PREFIX = "re:"

_SEPARATOR = re.compile(r"(?:^|\s)OR(?:\s|$)", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s")
# Scheme, user info, then the host (group 1: an IPv6 literal or a name) and the port.
_HOST = re.compile(r"[^:/?#]*://(?:[^@/?#]*@)?(\[[^\]/?#]*\]|[^:/?#]*)[^/?#]*")
_SHOWN_LENGTH = 80
_HTTP = "http://"


class BadOrder(ClientFault, ValueError):
    """A collect order whose delimitation is missing, of the wrong type or out of range."""


class BadExpression(BadOrder):
    """An accept or reject expression that does not parse."""


def split_url(url: str) -> tuple[str, str, str]:
    """Origin ("scheme://authority"), path and query (without "?") of an absolute URL.

    Cut with string searches rather than parsed, since it runs for every link of a crawl.
    """
    fragment = url.find("#")
    if fragment >= 0:
        url = url[:fragment]
    scheme_end = url.find("://")
    authority = 0 if scheme_end < 0 else scheme_end + 3
    query = url.find("?", authority)
    end = len(url) if query < 0 else query
    path = url.find("/", authority, end)
    if path < 0:
        path = end
    return url[:path], url[path:end], "" if query < 0 else url[query + 1 :]


def host_and_rest(url: str) -> tuple[str, str]:
    """The lowercase host of an absolute URL, without user info or port, and what follows its
    authority; ("", url) when it is not absolute."""
    match = _HOST.match(url)
    if match is None:
        return "", url
    return match.group(1).lower(), url[match.end() :]


def is_dynamic(url: str) -> bool:
    """True for a URL a script probably answers: a query, path parameters, a script or cgi-bin."""
    _, path, query = split_url(url)
    if query or ";" in path:
        return True
    lowered = path.lower()
    if "cgi-bin" in lowered:
        return True
    name = lowered.rpartition("/")[2]
    dot = name.rfind(".")
    return dot >= 0 and name[dot + 1 :] in SCRIPT_EXTENSIONS


def _shown(text: str) -> str:
    if len(text) <= _SHOWN_LENGTH:
        return repr(text)
    return repr(text[:_SHOWN_LENGTH]) + "..."


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    for line in text.splitlines():
        for piece in _SEPARATOR.split(line):
            piece = piece.strip()
            if piece.startswith(REGEX_PREFIX):
                terms.append(piece)
            else:
                terms.extend(term.strip() for term in piece.split(","))
    return [term for term in terms if term]


def _canonical_host_and_path(hostpath: str) -> tuple[str, str]:
    """The canonical host and path prefix of a host term, or ValueError saying what is wrong."""
    host, slash, path = hostpath.partition("/")
    if not host:
        raise ValueError("no host after the leading '//' or '.'")
    if ":" in (host.partition("]")[2] if host.startswith("[") else host):
        raise ValueError("a host term takes no port: it matches every port of its host")
    if "@" in host:
        raise ValueError("a host term takes no user info")
    try:
        origin = canonical_url(_HTTP + host + "/")[:-1]
        prefix = canonical_url(_HTTP + "x" + slash + path)[len(_HTTP) + 1 :] if slash else ""
    except BadUrl as error:
        raise ValueError(str(error).split(": ", 1)[-1]) from None
    return origin[len(_HTTP) :], prefix


def compile_expression(text: str, name: str = "expression") -> Callable[[str], bool]:
    """One callable telling whether a canonical URL matches `text`; an empty text matches nothing.

    `name` says in error messages which expression was wrong, such as "accept expression".
    """
    exact: dict[str, tuple[str, ...]] = {}
    suffixes: dict[str, tuple[str, ...]] = {}
    substrings: list[str] = []
    patterns: list[re.Pattern[str]] = []
    terms = _split_terms(text)
    if text.strip() and not terms:
        raise BadExpression(f"{name} {_shown(text)} holds no term")
    for number, term in enumerate(terms, 1):
        try:
            if term.startswith(REGEX_PREFIX):
                patterns.append(_compile_regex(term[len(REGEX_PREFIX) :]))
                continue
            if _WHITESPACE.search(term):
                raise ValueError(
                    "whitespace inside a term: separate terms with OR, a comma or a new line"
                )
            if term.startswith("//"):
                host, prefix = _canonical_host_and_path(term[2:])
                exact[host] = (*exact.get(host, ()), prefix)
            elif term.startswith("."):
                host, prefix = _canonical_host_and_path(term[1:])
                suffixes["." + host] = (*suffixes.get("." + host, ()), prefix)
            else:
                substrings.append(term)
        except ValueError as error:
            raise BadExpression(
                f"{name} {_shown(text)}: term {number} {_shown(term)}: {error}"
            ) from None
    return _matcher(exact, suffixes, tuple(substrings), tuple(patterns))


def _compile_regex(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise ValueError(f"empty regular expression after {REGEX_PREFIX!r}")
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"invalid regular expression: {error}") from None


def _matcher(
    exact: dict[str, tuple[str, ...]],
    suffixes: dict[str, tuple[str, ...]],
    substrings: tuple[str, ...],
    patterns: tuple[re.Pattern[str], ...],
) -> Callable[[str], bool]:
    """Host terms first, with the host cut once and looked up by exact value and each suffix."""
    by_host = bool(exact or suffixes)

    def matches(url: str) -> bool:
        if by_host:
            host, rest = host_and_rest(url)
            prefixes = exact.get(host)
            if prefixes is not None and rest.startswith(prefixes):
                return True
            if suffixes:
                dot = host.find(".")
                while dot >= 0:
                    prefixes = suffixes.get(host[dot:])
                    if prefixes is not None and rest.startswith(prefixes):
                        return True
                    dot = host.find(".", dot + 1)
        if substrings and any(text in url for text in substrings):
            return True
        return bool(patterns) and any(pattern.search(url) for pattern in patterns)

    return matches


def derived_accept(host: str) -> str:
    """The accept expression of an order that gives none: the start URL's host and subdomains.

    A leading "www." is dropped first, so that starting at www.tf1.fr accepts tf1.fr and every
    *.tf1.fr; an IP address accepts only itself.
    """
    if host.startswith("www.") and "." in host[4:]:
        host = host[4:]
    return f"//{host}" if is_address(host) else f"//{host} OR .{host}"


@dataclass(frozen=True)
class Delimitation:
    """The part of the web one site crawl collects; `accept` holds the expression in use."""

    start_url: str
    accept: str = ""
    reject: str = ""
    max_depth: int = 150  # levels of page links from the start URL, which is level 0
    max_dynamic_depth: int = 5  # the same for dynamic-looking URLs (is_dynamic)
    _accepts: Callable[[str], bool] = field(init=False, repr=False, compare=False)
    _rejects: Callable[[str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key in ("max_depth", "max_dynamic_depth"):
            if getattr(self, key) < 0:
                raise BadOrder(f"{key} {getattr(self, key)} is negative")
        try:
            start = canonical_url(self.start_url)
        except BadUrl as error:
            raise BadOrder(f"start_url: {error}") from None
        if not self.accept.strip():
            object.__setattr__(self, "accept", derived_accept(host_and_rest(start)[0]))
        object.__setattr__(self, "_accepts", compile_expression(self.accept, "accept expression"))
        object.__setattr__(self, "_rejects", compile_expression(self.reject, "reject expression"))
        if not self.inside(start):
            raise BadOrder(
                f"start URL {_shown(start)} is outside its own delimitation"
                f" (accept {_shown(self.accept)}, reject {_shown(self.reject)})"
            )

    @classmethod
    def from_order(cls, order: Mapping[str, object]) -> Delimitation:
        """The delimitation a collect order gives, its fields checked; other keys are ignored."""
        try:
            given = delimitation_fields(order)
        except RemoteError as exc:
            raise BadOrder(exc.message) from None
        return cls(**given)

    def inside(self, url: str) -> bool:
        """True when the canonical `url` belongs to the site: it matches accept and not reject."""
        return self._accepts(url) and not self._rejects(url)

    def allows_depth(self, url: str, depth: int) -> bool:
        """True when a page link at `depth` levels from the start URL may still be followed."""
        if depth > self.max_depth:
            return False
        return depth <= self.max_dynamic_depth or not is_dynamic(url)
