"""The operator steering a running campaign: URLs injected into the next crawls of their sites
(a site guessed and registered for a URL no site takes), the campaign's blacklist, and the
settings of domains that bound their sites' crawls. What is steered is kept in the store
(steering_registry.py) and carried by every order (service.py)."""

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from archive.blocklist import BadPattern, Blocklist
from archive.crawl_calls import MAX_INJECTED, ScoredUrl
from archive.errors import ClientFault, DlwebError
from archive.hip import RemoteError, is_number
from archive.scheduler_answers import (
    BlacklistPatterns,
    DomainSettings,
    InjectedUrl,
    InjectedUrls,
)
from archive.urlkey import BadUrl, canonical_url

from .guess import guess_site
from .store import Site, Store

__all__ = ["BadSteering", "Steering", "checked_domain", "checked_urls", "domain_politeness"]

MAX_BUDGET = 10**9  # pages
MAX_DELAY = 86_400.0  # seconds
HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


class BadSteering(ClientFault):
    """Injected URLs, blacklist patterns or domain settings that cannot be used, and why."""


def checked_urls(items: object) -> list[ScoredUrl]:
    """The `urls` of an injection, each checked (ScoredUrl) and its URL made canonical."""
    if not isinstance(items, list) or not items:
        raise BadSteering("urls must be a list of objects with url, score and campaign")
    if len(items) > MAX_INJECTED:
        raise BadSteering(f"at most {MAX_INJECTED:,} URLs a request, not {len(items):,}")
    urls = []
    for n, item in enumerate(items):
        try:
            url = ScoredUrl.from_json(item, f"urls[{n}]")
            urls.append(ScoredUrl(canonical_url(url.url), url.score, url.campaign))
        except RemoteError as exc:
            raise BadSteering(exc.message) from None
        except BadUrl as exc:
            raise BadSteering(f"urls[{n}].url: {exc.reason}") from None
    return urls


def checked_patterns(body: Mapping[str, Any]) -> list[str]:
    patterns = body.get("patterns")
    if not isinstance(patterns, list) or not patterns:
        raise BadSteering("patterns must be a list of host:, prefix: or re: patterns")
    try:
        return list(Blocklist(patterns).patterns)
    except BadPattern as exc:
        raise BadSteering(str(exc)) from None


def checked_domain(domain: str, body: Mapping[str, Any]) -> DomainSettings:
    """A domain's settings from the operator: a host name, a budget of pages (a whole number
    above 0) and delays in seconds (from 0 to a day, the least at most the most), each left out
    or null when not set."""
    name = domain.lower().strip(".")
    labels = name.split(".")
    if len(name) > 253 or not all(HOST_LABEL.fullmatch(label) for label in labels):
        raise BadSteering(f"{domain[:80]!r} is not a domain name (letters, digits, - and dots)")
    unknown = set(body) - {"budget", "min_delay", "max_delay"}
    if unknown:
        raise BadSteering(f"unknown domain settings: {', '.join(sorted(unknown))[:200]}")
    budget = body.get("budget")
    if budget is not None and (type(budget) is not int or not 1 <= budget <= MAX_BUDGET):
        raise BadSteering(f"budget must be a whole number of pages from 1 to {MAX_BUDGET:,}")
    delays = []
    for key in ("min_delay", "max_delay"):
        value = body.get(key)
        if value is not None and (
            not is_number(value) or not math.isfinite(value) or not 0 <= value <= MAX_DELAY
        ):
            raise BadSteering(f"{key} must be a number of seconds from 0 to {MAX_DELAY:,.0f}")
        delays.append(None if value is None else float(value))
    least, most = delays
    if least is not None and most is not None and least > most:
        raise BadSteering(f"min_delay ({least:g} s) is above max_delay ({most:g} s)")
    return DomainSettings(name, budget, least, most)


def domain_politeness(
    start_url: str, politeness: Mapping[str, float], domains: Sequence[DomainSettings]
) -> dict[str, float]:
    """The politeness of an order for the site of `start_url`, as its host's most specific
    domain settings bound it: its budget the most pages, its delay clamped between the least
    and the most."""
    given = dict(politeness)
    by_name = {settings.domain: settings for settings in domains}
    host = (urlsplit(start_url).hostname or "").rstrip(".")
    while host and host not in by_name:
        host = host.partition(".")[2]
    settings = by_name.get(host)
    if settings is None:
        return given
    if settings.budget is not None:
        given["max_pages"] = settings.budget
    if settings.min_delay is not None or settings.max_delay is not None:
        delay = given.get("delay", 0.0)
        if settings.min_delay is not None:
            delay = max(delay, settings.min_delay)
        if settings.max_delay is not None:
            delay = min(delay, settings.max_delay)
        given["delay"] = delay
    return given


class Steering:
    """Injections, blacklist and domain settings on the scheduler's store; `wake` tells the
    scheduler a site was brought forward."""

    def __init__(self, store: Store, wake: Callable[[], None]) -> None:
        self.store = store
        self.wake = wake
        self.blocklist = Blocklist(store.blacklist())

    def inject(self, urls: Sequence[ScoredUrl]) -> InjectedUrls:
        """Each URL (canonical, checked) waiting for the next crawl of its site, brought
        forward (a paused site's waits until it is resumed); for a URL no site takes, the site
        guess_site gives is registered. A URL blocked by the blacklist, of a blacklisted site,
        or for which no site can be made is refused with the reason."""
        now = time.time()
        answers = []
        pending: dict[int, list[ScoredUrl]] = {}
        for url in urls:
            if self.blocklist.blocks(url.url):
                answers.append(InjectedUrl(url.url, None, False, "blocked by the blacklist"))
                continue
            try:
                site, created = self._site_for(url, now)
            except DlwebError as exc:
                answers.append(InjectedUrl(url.url, None, False, exc.reason))
                continue
            if site.state == "blacklisted":
                refusal = (
                    f"its site {site.id} is blacklisted (`sites inject {site.id}` takes it off)"
                )
                answers.append(InjectedUrl(url.url, None, False, refusal))
                continue
            pending.setdefault(site.id, []).append(url)
            answers.append(InjectedUrl(url.url, site.id, created))
        for site_id, site_urls in pending.items():
            self.store.inject(site_id, site_urls, now)
            target = self.store.site(site_id)
            if target is not None and target.state in ("queued", "idle"):
                self.store.set_state(site_id, "queued", next_crawl=min(now, target.next_crawl))
        self.wake()
        return InjectedUrls(tuple(answers))

    def _site_for(self, url: ScoredUrl, now: float) -> tuple[Site, bool]:
        """The site a URL belongs to, and whether it was registered for it now."""
        site = self.store.find_site_for(url.url)
        if site is not None:
            return site, False
        guess = guess_site(url.url)
        # A directory named without its slash (/~ann) lies outside the site guessed for it.
        known = self.store.find_site_for(canonical_url(guess.start_url))
        if known is not None:
            return known, False
        added = self.store.add_site(
            guess.start_url,
            guess.accept,
            guess.reject,
            priority=url.score,
            source="injected",
            next_crawl=now,
        )
        return added, True

    def blacklist(self) -> BlacklistPatterns:
        return BlacklistPatterns(self.blocklist.patterns)

    def add_patterns(self, body: Mapping[str, Any]) -> BlacklistPatterns:
        """Patterns added to the blacklist, once all of them (with those kept) are checked."""
        patterns = checked_patterns(body)
        try:
            Blocklist((*self.blocklist.patterns, *patterns))
        except BadPattern as exc:
            raise BadSteering(str(exc)) from None
        self.store.add_to_blacklist(patterns)
        self.blocklist = Blocklist(self.store.blacklist())
        return self.blacklist()

    def remove_patterns(self, body: Mapping[str, Any]) -> BlacklistPatterns:
        self.store.remove_from_blacklist(checked_patterns(body))
        self.blocklist = Blocklist(self.store.blacklist())
        return self.blacklist()

    def politeness(self, site: Site, politeness: Mapping[str, float]) -> dict[str, float]:
        """The politeness of an order for `site`, as its domain's settings bound it."""
        return domain_politeness(site.start_url, politeness, self.store.domains())
