"""The feeds of the crawled sites, polled between their crawls: a feed whose bytes changed since
the crawl archived it brings its site's next crawl forward (the temporal policy's shortcut).

Feed aggregators poll them (crawler/feed_aggregator.py, HIP slaves of role `feeds`): every feed
of a site that is neither blacklisted nor removed goes to one connected aggregator, picked by
rendezvous hashing of the feed's URL and the aggregators' names (`holder`), so that feeds spread
evenly and an aggregator that joins or leaves moves only its share. Each is given its feeds
(`watch_feeds`) with the SHA-256 the scheduler knows of each, again whenever its share or a
known hash changes. It calls `feed_changed` with each feed it finds changed: the scheduler
records the new hash and brings the site's next crawl forward if the site is idle. An aggregator
that leaves has its feeds given to the others at once; a change it found but did not report is
found again by its successor, since the hash the scheduler gives is still the old one.

While no aggregator is connected, the scheduler polls the feeds of its idle sites itself when
`inline` (the default); otherwise they wait for one.
"""

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from archive.errors import DlwebError
from archive.feed_calls import WATCH_FEEDS, Feed, FeedChange, FeedList, Ok
from archive.hip import HipError, Peer, RemoteError
from archive.scheduler_answers import PolicyAgent
from archive.urlkey import BadUrl, canonical_url

from ..feed_poll import feed_session, poll_feeds
from ..order import read_signatures
from .agent_link import AgentLink, has_left
from .reports import existing_file
from .store import Site, Store

__all__ = ["FeedWatch", "holder"]

log = logging.getLogger(__name__)

MAX_FEEDS = 5  # feeds polled per site
CALL_TIMEOUT = 30.0
SHA256 = re.compile("[0-9a-f]{64}")
UNWATCHED = ("blacklisted", "removed")  # states of sites whose feeds are not polled


def holder(url: str, names: Sequence[str]) -> str:
    """The aggregator of `names` that polls the feed `url`: the highest of their hashes with it."""
    return max(names, key=lambda name: hashlib.sha256(f"{name}\n{url}".encode()).digest())


@dataclass
class Aggregator(AgentLink):
    given: dict[str, str] | None = None  # the feeds it was last given; None: to be given again
    changes: int = 0


@dataclass(eq=False)
class FeedWatch:
    """The feeds of the sites, polled every `interval` seconds through the campaign's pinned
    addresses (`resolve`) by the aggregators or, when `inline` and none is connected, by the
    scheduler; `wake` tells the scheduler a site is due now."""

    store: Store
    resolve: Mapping[str, list[str]]
    interval: float
    wake: Callable[[], None]
    inline: bool = True
    aggregators: dict[str, Aggregator] = field(init=False, default_factory=dict)
    _respread: bool = field(init=False, default=True)
    _calls: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def remember(self, site: Site, report: Mapping[str, Any]) -> None:
        """The site's feeds, each with the SHA-256 of the copy the crawl archived: a poll that
        finds other bytes means the site has news."""
        feeds = [f for f in report.get("feeds", []) if isinstance(f, str)][:MAX_FEEDS]
        self.store.set_setting(f"feeds:{site.id}", "\n".join(feeds))
        self._respread = True
        signature_file = existing_file(str(report.get("signature_file", "")))
        if not feeds or signature_file is None:
            return
        try:
            archived = read_signatures(signature_file)
        except DlwebError as exc:
            log.warning("%s: %s", site.start_url, exc)
            return
        for url in feeds:
            try:
                signature = archived.get(canonical_url(url))
            except BadUrl:
                continue
            if signature is not None:
                self.store.set_setting(f"feed:{url}", signature.content)

    def changed(self, url: str, digest: str) -> int | None:
        """A feed's new SHA-256 recorded (a URL that is no site's feed is ignored); the site
        brought forward if idle and the feed's bytes were known (a first look only records
        them): its id, else None."""
        site = self._site_of(url)
        key = f"feed:{url}"
        before = self.store.get_setting(key)
        if site is None or digest == before:
            return None
        self.store.set_setting(key, digest)
        for aggregator in self.aggregators.values():
            if aggregator.given is not None and url in aggregator.given:
                aggregator.given[url] = digest
        if not before or site.state != "idle":
            return None
        log.info("feed %s changed: %s is crawled again now", url, site.start_url)
        self.store.set_state(site.id, "idle", next_crawl=time.time())
        self.wake()
        return site.id

    def _site_of(self, url: str) -> Site | None:
        for key, feeds in self.store.settings_under("feeds:").items():
            if url in feeds.split("\n"):
                return self.store.site(int(key.partition(":")[2]))
        return None

    # -- aggregators --------------------------------------------------------------------------

    def joined(self, peer: Peer) -> None:
        self.aggregators.setdefault(peer.name, Aggregator(peer.name, peer)).joined(peer)
        self.aggregators[peer.name].given = None
        self._respread = True
        log.info("feed aggregator %s joined", peer.name)
        self.wake()

    def left(self, peer: Peer) -> None:
        if has_left(self.aggregators, peer):
            log.info("feed aggregator %s left: its feeds go to the others", peer.name)
            del self.aggregators[peer.name]
            self._respread = True
            self.wake()

    async def report(self, peer: Peer, change: FeedChange) -> Ok:
        """`feed_changed`: a feed an aggregator found changed."""
        if not SHA256.fullmatch(change.digest):
            raise RemoteError("bad_params", f"feed_changed: digest {change.digest!r} is no SHA-256")
        aggregator = self.aggregators.get(peer.name)
        if aggregator is not None:
            aggregator.changes += 1
        self.changed(change.url, change.digest)
        return Ok()

    def feeds(self) -> dict[str, str]:
        """Every feed to poll (those of sites neither blacklisted nor removed), with the SHA-256
        known of its bytes ("" for none)."""
        digests = self.store.settings_under("feed:")
        feeds = {}
        for key, urls in self.store.settings_under("feeds:").items():
            site = self.store.site(int(key.partition(":")[2]))
            if site is None or site.state in UNWATCHED:
                continue
            for url in urls.split("\n") if urls else []:
                feeds[url] = digests.get(f"feed:{url}", "")
        return feeds

    async def spread(self) -> None:
        """The feeds to the connected aggregators, to each its share, when shares or hashes
        changed since they were given."""
        connected = sorted(name for name, a in self.aggregators.items() if a.connected)
        if not connected or not (self._respread or self._ungiven(connected)):
            return
        self._respread = False
        shares: dict[str, dict[str, str]] = {name: {} for name in connected}
        for url, digest in self.feeds().items():
            shares[holder(url, connected)][url] = digest
        for name, share in shares.items():
            aggregator = self.aggregators[name]
            if share != aggregator.given:
                aggregator.given = share
                task = asyncio.create_task(self._give(aggregator, share))
                self._calls.add(task)
                task.add_done_callback(self._calls.discard)

    def _ungiven(self, names: Sequence[str]) -> bool:
        return any(self.aggregators[name].given is None for name in names)

    async def _give(self, aggregator: Aggregator, share: dict[str, str]) -> None:
        assert aggregator.peer is not None
        feeds = FeedList(
            tuple(Feed(url, digest) for url, digest in share.items()),
            self.interval,
            {host: tuple(addresses) for host, addresses in self.resolve.items()},
        )
        try:
            await WATCH_FEEDS.call(aggregator.peer, feeds, timeout=CALL_TIMEOUT)
            log.info("feed aggregator %s polls %d feeds", aggregator.name, len(share))
        except (HipError, RemoteError) as exc:
            log.warning("feed aggregator %s not given its feeds: %s", aggregator.name, exc)
            aggregator.given = None
            self.wake()

    def status(self) -> list[PolicyAgent]:
        return [
            PolicyAgent(a.name, "feeds", a.connected, len(a.given or {}), a.changes)
            for a in self.aggregators.values()
        ]

    async def stop(self) -> None:
        for task in self._calls:
            task.cancel()
        await asyncio.gather(*self._calls, return_exceptions=True)

    # -- the scheduler's own polls ------------------------------------------------------------

    async def loop(self) -> None:
        """Polls the feeds of the idle sites every `interval` while no aggregator is connected
        and `inline`, until cancelled."""
        async with feed_session(self.resolve) as session:
            while True:
                await asyncio.sleep(self.interval)
                if self.inline and not any(a.connected for a in self.aggregators.values()):
                    await self.poll(session)

    async def poll(self, session: aiohttp.ClientSession) -> list[int]:
        """Sites whose feeds changed since the last look: their next crawl is now."""
        digests = self.store.settings_under("feed:")
        brought_forward = []
        for site in self.store.sites(state="idle", limit=1_000_000):
            feeds = self.store.get_setting(f"feeds:{site.id}")
            known = {url: digests.get(f"feed:{url}", "") for url in feeds.split("\n") if url}
            for url, digest in (await poll_feeds(session, known)).items():
                if self.changed(url, digest) is not None:
                    brought_forward.append(site.id)
                    break
        return brought_forward
