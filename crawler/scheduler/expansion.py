"""The scheduler's expansion policy on the graph of links between sites: a kept site's external
links become edges to the registered sites they belong to, or register new sites; HITS ranks on
the graph then give the sites waiting for a first crawl their priorities."""

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from archive.errors import DlwebError
from archive.urlkey import BadUrl, canonical_url

from .guess import guess_site
from .policy import priority
from .ranks import hits
from .store import Site, Store

__all__ = ["Expansion"]

log = logging.getLogger(__name__)

RANK_EVERY = 30.0  # seconds between HITS runs while the graph changes


class Expansion:
    """The graph a campaign grows: `links` reads a crawled site's external links, `rank_loop`
    ranks the graph again once it changed. `expand` False keeps to the registered sites;
    `register` registers a discovered site (Scheduler.register)."""

    def __init__(self, store: Store, expand: bool, register: Callable[..., Site]) -> None:
        self.store = store
        self.expand = expand
        self.register = register
        self._graph_changed = False

    def links(self, site: Site, report: Mapping[str, Any]) -> None:
        """External links: edges to known sites, new sites for unknown ones."""
        targets: dict[int, int] = {}
        for link in report.get("external_links", []):
            url = link.get("url") if isinstance(link, Mapping) else None
            if not isinstance(url, str):
                continue
            try:
                url = canonical_url(url)
            except BadUrl:
                continue
            target = self.store.find_site_for(url)
            if target is None:
                if not self.expand:
                    continue
                target = self._discover(url, site)
                if target is None:
                    continue
            if target.id != site.id and target.state != "blacklisted":
                targets[target.id] = targets.get(target.id, 0) + 1
        if targets:
            self.store.add_edges(site.id, targets, time.time())
            self._graph_changed = True

    def _discover(self, url: str, referrer: Site) -> Site | None:
        try:
            start_url, accept, reject = guess_site(url)
        except (BadUrl, DlwebError):
            return None
        # A link to a directory without its slash (/~ann) lies outside the site it guesses.
        known = self.store.find_site_for(start_url)
        if known is not None:
            return known
        try:
            return self.register(
                start_url,
                accept,
                reject,
                max_depth=referrer.max_depth,
                priority=priority([referrer.relevance], [referrer.hub], 0.0),
                source=f"discovered from site {referrer.id}",
            )
        except DlwebError as exc:
            log.info("%s not registered: %s", start_url, exc)
            return self.store.find_site_for(url)

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
