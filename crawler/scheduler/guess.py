"""Where a site found through an external link begins and ends: its start URL and delimitation."""

from __future__ import annotations

import re
from typing import NamedTuple

from publicsuffix2 import get_sld

from archive.hosts import is_address
from archive.urlkey import canonical_url

from ..delimitation import host_and_rest, split_url

__all__ = ["GuessedSite", "guess_site"]

# First host labels of hosting services whose users' sites are directories: perso.free.fr/ann/.
SHARED_HOST_LABELS = ("perso", "members", "users", "home", "homepages", "people")
# Hosts whose sites are a directory of the first one (sites.google.com/site/NAME/).
SITES_UNDER_DIRECTORY = {"sites.google.com": ("site", "view")}
# Personal directories on any host (/~ann/), which a domain's site leaves to their own sites.
TILDE_DIRECTORIES = "re:^https?://[^/]+/~[^/?]"
# Their first directory (or dotless first segment) on shared hosts of three labels or more.
SHARED_HOST_DIRECTORIES = (
    rf"re:^https?://(?:{'|'.join(SHARED_HOST_LABELS)})\.[^/.]+\.[^/]+/(?:[^/?]+/|[^/?.]+(?:\?|$))"
)


class GuessedSite(NamedTuple):
    start_url: str
    accept: str
    reject: str


def guess_site(url: str) -> GuessedSite:
    """The site a URL outside every known site most likely belongs to.

    Personal pages on a shared host are sites of their own, a directory of it, started at that
    directory: `//host/DIR/` accepts it (any port, either scheme), nothing else. They are:

    - a first path segment starting with `~`, on any host: `http://www.uni.edu/~ann/cv.html`
      gives `//www.uni.edu/~ann/`;
    - `sites.google.com/site/NAME/` and `sites.google.com/view/NAME/`;
    - on a host of three labels or more whose first is perso, members, users, home, homepages or
      people (perso.free.fr, not home.com), the first path segment when it is a directory (a
      slash follows it) or has no dot (`/ann`, but not `/index.html`, which belongs to the
      domain's site).

    A directory named without its final slash (`/~ann`) is outside its own site (`//host/~ann/`
    would otherwise match `/~anna/` too), so a caller looks for the site of the guessed start URL
    before registering one.

    Any other URL belongs to its registered domain, found with the public suffix list (private
    suffixes included, so `ann.github.io` and `ann.blogspot.com` are domains; under a top-level
    domain the list does not know, the host without www, as `dlweb crawl` does): accept
    `//D OR .D` (the domain and every subdomain), started at the root of the link's host. Its reject expression leaves out the
    personal pages above, so that delimitations stay disjoint whichever is found first. An IP
    address is a site by itself (`//ADDRESS`).

    Raises BadUrl for what is no http(s) URL.
    """
    canonical = canonical_url(url)
    origin, path, _ = split_url(canonical)
    host = host_and_rest(canonical)[0]
    first, slash, rest = path[1:].partition("/")
    second = rest.partition("/")[0]
    if first.startswith("~") and len(first) > 1:
        return _personal(origin, host, first)
    if first in SITES_UNDER_DIRECTORY.get(host, ()) and second:
        return _personal(origin, host, f"{first}/{second}")
    if is_address(host):
        return GuessedSite(origin + "/", f"//{host}", TILDE_DIRECTORIES)
    domain = _registered_domain(host)
    label = host.partition(".")[0]
    if (
        label in SHARED_HOST_LABELS
        and host.count(".") >= 2
        and first
        and (slash or "." not in first)
    ):
        return _personal(origin, host, first)
    return GuessedSite(origin + "/", f"//{domain} OR .{domain}", _domain_reject(domain))


def _personal(origin: str, host: str, directory: str) -> GuessedSite:
    return GuessedSite(f"{origin}/{directory}/", f"//{host}/{directory}/", "")


def _registered_domain(host: str) -> str:
    """The public suffix and one label before it; under a top-level domain the list does not know
    (no registry: test, internal, local...), the host itself without a leading www."""
    domain = get_sld(host, strict=True)
    if domain:
        return str(domain)
    return host[4:] if host.startswith("www.") and "." in host[4:] else host


def _domain_reject(domain: str) -> str:
    """What of a domain's hosts `guess_site` gives to personal sites (the same regular expressions
    for every domain but Google's, which Python compiles once)."""
    terms = [TILDE_DIRECTORIES, SHARED_HOST_DIRECTORIES]
    for host, directories in SITES_UNDER_DIRECTORY.items():
        if host == domain or host.endswith("." + domain):
            terms.append(
                rf"re:^https?://{re.escape(host)}(?::\d+)?/(?:{'|'.join(directories)})/[^/?]+"
            )
    return " OR ".join(terms)
