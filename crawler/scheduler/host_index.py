"""Which registered sites a URL may belong to, without testing every site's delimitation: an
index of the hosts their accept expressions name, and the compiled delimitations of the sites
last tested.

A site's accept expression names where its URLs are (crawler.delimitation): `//host` and `.host`
terms name a host or a host suffix, and maybe a first path segment. find_site_for tests only the
sites whose accept names the URL's host or one of its suffixes, plus those whose accept names no
host (a substring or regular expression term may match any URL).
"""

from collections import OrderedDict
from collections.abc import Callable

from ..delimitation import (
    REGEX_PREFIX,
    _canonical_host_and_path,
    _split_terms,
    compile_expression,
    host_and_rest,
)

__all__ = ["HostIndex", "HostKey", "Matcher", "host_keys", "url_keys"]

COMPILED_KEPT = 10_000  # compiled delimitations find_site_for keeps (least recently used go)

HostKey = tuple[str, str]  # (host, or "." and a host suffix; first path segment or "")


def host_keys(accept: str) -> list[HostKey] | None:
    """Where a URL must be for the accept expression to match it, or None when anywhere.

    Each `//host` or `.host` term gives its host (a suffix keeps its dot) and, when its path
    prefix holds a whole first segment (`//host/~ann/`), that segment; a substring or regular
    expression term may match any URL.
    """
    keys: list[HostKey] = []
    for term in _split_terms(accept):
        if term.startswith(REGEX_PREFIX):
            return None
        if term.startswith("//"):
            host, prefix = _canonical_host_and_path(term[2:])
        elif term.startswith("."):
            host, prefix = _canonical_host_and_path(term[1:])
            host = "." + host
        else:
            return None
        segment, slash, _ = prefix[1:].partition("/") if prefix.startswith("/") else ("", "", "")
        keys.append((host, segment if slash else ""))
    return keys


def url_keys(url: str) -> list[HostKey]:
    """The host keys of every accept expression that could match a canonical URL."""
    host, rest = host_and_rest(url)
    segment, slash, _ = rest[1:].partition("/") if rest.startswith("/") else ("", "", "")
    hosts = [host]
    dot = host.find(".")
    while dot >= 0:
        hosts.append(host[dot:])
        dot = host.find(".", dot + 1)
    if slash and segment:
        return [(name, part) for name in hosts for part in ("", segment)]
    return [(name, "") for name in hosts]


Matcher = tuple[Callable[[str], bool], Callable[[str], bool]]


class HostIndex:
    """The sites by the hosts their accept expressions name, and the compiled delimitations of
    the sites last tested; `delimitation` reads a site's accept and reject expressions."""

    def __init__(self, delimitation: Callable[[int], tuple[str, str]]) -> None:
        self._delimitation = delimitation
        self._by_host: dict[HostKey, set[int]] = {}
        self._anywhere: set[int] = set()  # sites whose accept has a term that names no host
        self._keys: dict[int, list[HostKey] | None] = {}
        self._compiled: OrderedDict[int, Matcher] = OrderedDict()

    def add(self, site_id: int, accept: str) -> None:
        keys = host_keys(accept)
        self._keys[site_id] = keys
        if keys is None:
            self._anywhere.add(site_id)
            return
        for key in keys:
            self._by_host.setdefault(key, set()).add(site_id)

    def remove(self, site_id: int) -> None:
        self._compiled.pop(site_id, None)
        keys = self._keys.pop(site_id, None)
        self._anywhere.discard(site_id)
        for key in keys or ():
            holders = self._by_host.get(key)
            if holders is not None:
                holders.discard(site_id)
                if not holders:
                    del self._by_host[key]

    def candidates(self, url: str) -> list[int]:
        """The sites a canonical URL may belong to, in the order they were registered."""
        candidates = set(self._anywhere)
        for key in url_keys(url):
            found = self._by_host.get(key)
            if found is not None:
                candidates.update(found)
        return sorted(candidates)

    def matcher(self, site_id: int) -> Matcher:
        """The site's accept and reject expressions, compiled."""
        matcher = self._compiled.get(site_id)
        if matcher is not None:
            self._compiled.move_to_end(site_id)
            return matcher
        accept, reject = self._delimitation(site_id)
        matcher = (
            compile_expression(accept, "accept expression"),
            compile_expression(reject, "reject expression"),
        )
        self._compiled[site_id] = matcher
        if len(self._compiled) > COMPILED_KEPT:
            self._compiled.popitem(last=False)
        return matcher
