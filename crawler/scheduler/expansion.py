"""The scheduler's expansion policy on the graph of links between sites: a kept site's external
links become edges to the registered sites they belong to, or register new sites; HITS ranks on
the graph then give the sites waiting for a first crawl their priorities.

A finished crawl's external links wait in the store (link_reports) until they are applied. Which
site an unknown link would belong to is `resolve_links`' guess (guess.py), made by a connectivity
agent (connectivity.py) or by the scheduler itself; `apply` then matches each link against the
registered sites and the sites registered before it from the same crawl, and writes the edges
and new sites in the transaction that takes the crawl out of link_reports, so that a crawl's
links are applied once. The ranks need the whole graph: they stay the scheduler's."""

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from archive.connectivity_calls import NO_SITE, GuessedSite
from archive.errors import DlwebError
from archive.urlkey import BadUrl, canonical_url

from ..delimitation import Delimitation
from .guess import guess_site
from .policy import priority
from .ranks import hits
from .store import LinkReport, NewSite, Site, Store

__all__ = ["Expansion", "external_links", "resolve_links"]

log = logging.getLogger(__name__)

RANK_EVERY = 30.0  # seconds between HITS runs while the graph changes


def external_links(report: Mapping[str, Any]) -> list[str]:
    """A report's external links as canonical URLs, in its order (bad ones left out)."""
    links = report.get("external_links")
    found = []
    for link in links if isinstance(links, list) else []:
        url = link.get("url") if isinstance(link, Mapping) else None
        if isinstance(url, str):
            try:
                found.append(canonical_url(url))
            except BadUrl:
                continue
    return found


def resolve_links(urls: Sequence[str]) -> tuple[GuessedSite, ...]:
    """The site each link most likely belongs to (guess.py), NO_SITE for one that is no http(s)
    URL: a connectivity agent's answer."""
    sites = []
    for url in urls:
        try:
            sites.append(GuessedSite(*guess_site(url)))
        except (BadUrl, DlwebError):
            sites.append(NO_SITE)
    return tuple(sites)


class Expansion:
    """The graph a campaign grows: `apply` applies a crawl's external links, `rank_loop` ranks
    the graph again once it changed. `expand` False keeps to the registered sites; `wake` tells
    the scheduler new sites are queued."""

    def __init__(self, store: Store, expand: bool, wake: Callable[[], None]) -> None:
        self.store = store
        self.expand = expand
        self.wake = wake
        self._graph_changed = False

    def apply(self, report: LinkReport, sites: Sequence[GuessedSite]) -> bool:
        """The links of a crawl applied, `sites` the guess for each (unused without `expand`):
        edges to the sites they belong to, new sites for the others. False when they were
        applied already."""
        referrer = self.store.site(report.site)
        planned: list[tuple[Delimitation, str]] = []  # new sites, with their sources
        known: dict[int, int] = {}
        new: dict[int, int] = {}  # planned's index: links to it
        for url, guess in zip(report.links, sites, strict=True):
            target = self.store.find_site_for(url)
            index = None if target is not None else _planned_for(planned, url)
            if target is None and index is None and self.expand and referrer and guess != NO_SITE:
                # A link to a directory without its slash (/~ann) lies outside the site it
                # guesses, which may be known.
                target = self.store.find_site_for(guess.start_url)
                if target is None:
                    index = _planned_for(planned, guess.start_url)
                    if index is None:
                        index = _plan(planned, guess, referrer)
            if index is not None:
                new[index] = new.get(index, 0) + 1
            elif target is not None and target.id != report.site and target.state != "blacklisted":
                known[target.id] = known.get(target.id, 0) + 1
        if referrer is None:
            known, new = {}, {}
        base = priority([referrer.relevance], [referrer.hub], 0.0) if referrer else 0.0
        added = self.store.apply_links(
            report.crawl,
            report.site,
            known,
            [
                NewSite(d.start_url, d.accept, d.reject, d.max_depth, base, source, new[index])
                for index, (d, source) in enumerate(planned)
                if index in new
            ],
            time.time(),
        )
        if added is None:
            return False
        log.info(
            "links of crawl %d applied: %d edges, %d new sites",
            report.crawl,
            len(known) + len(added),
            len(added),
        )
        if known or added:
            self._graph_changed = True
        if added:
            self.wake()
        return True

    async def rank_loop(self) -> None:
        """Ranks the graph again once it changed, looking every RANK_EVERY seconds (every second
        while it keeps changing)."""
        while True:
            await asyncio.sleep(RANK_EVERY if not self._graph_changed else 1.0)
            if self._graph_changed:
                self._graph_changed = False
                self.rank()

    def rank(self) -> None:
        """HITS on the site graph, then the priorities of the sites waiting for a first crawl."""
        hubs, authorities = hits(self.store.edges())
        self.store.set_ranks(hubs, authorities)
        waiting = {}
        for site in self.store.sites(state="queued", limit=1_000_000):
            if site.crawls:
                continue
            referrers = self.store.referrers(site.id)
            waiting[site.id] = priority(
                [r.relevance for r, _ in referrers],
                [hubs.get(r.id, 0.0) for r, _ in referrers],
                authorities.get(site.id, 0.0),
            )
        self.store.set_priorities(waiting)


def _planned_for(planned: Sequence[tuple[Delimitation, str]], url: str) -> int | None:
    """The index of the planned new site `url` belongs to."""
    for index, (delimitation, _) in enumerate(planned):
        if delimitation.inside(url):
            return index
    return None


def _plan(
    planned: list[tuple[Delimitation, str]], guess: GuessedSite, referrer: Site
) -> int | None:
    """A new site for a link that belongs to none, as guessed, as deep as its referrer: its
    index in `planned`; None when the guess is no delimitation."""
    try:
        start = canonical_url(guess.start_url)
        delimitation = Delimitation(start, guess.accept, guess.reject, referrer.max_depth)
    except DlwebError as exc:
        log.info("%s not registered: %s", guess.start_url, exc)
        return None
    planned.append((delimitation, f"discovered from site {referrer.id}"))
    return len(planned) - 1
