"""`dlweb feed-aggregator`: polls a scheduler's feeds for news, as a HIP slave of it (role
`feeds`).

The scheduler gives the aggregator its share of the feeds (`watch_feeds`: each feed's URL and the
SHA-256 of its bytes as the scheduler knows them, how often to poll, the campaign's pinned
addresses, to which --resolve adds); every interval the aggregator fetches them
(crawler/feed_poll.py) and calls the scheduler's `feed_changed` with each whose bytes changed,
which brings the site's next crawl forward. A change it cannot report now is found again at the
next poll, by it or, were it killed, by the aggregator the feed goes to. The calls and their
messages are archive/feed_calls.py's.
"""

import argparse
import asyncio
import logging
import sys
from dataclasses import dataclass, field

from archive.command_line import standalone
from archive.feed_calls import FEED_CHANGED, ROLE, WATCH_FEEDS, FeedChange, FeedList
from archive.hip import HipError, HipSlave, Nothing, Peer, RemoteError

from .cli import resolve_map
from .feed_poll import feed_session, poll_feeds
from .scheduler.cli import add_feed_aggregator_arguments
from .scheduler_slave import serve_slave

__all__ = ["FeedAggregator", "run"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class FeedAggregator:
    """The feeds it was given (URL: SHA-256 known), polled every `interval` once given; `pins`
    (its own --resolve) over the campaign's."""

    pins: dict[str, list[str]]
    feeds: dict[str, str] = field(default_factory=dict)
    interval: float = 0.0
    resolve: dict[str, list[str]] = field(default_factory=dict)
    _given: asyncio.Event = field(default_factory=asyncio.Event)

    async def watch(self, _: Peer, given: FeedList) -> Nothing:
        """`watch_feeds`: its feeds from now on."""
        self.feeds = {feed.url: feed.digest for feed in given.feeds}
        self.interval = given.interval
        self.resolve = {host: list(a) for host, a in given.resolve.items()} | self.pins
        log.info("%d feeds to poll every %g s", len(self.feeds), self.interval)
        self._given.set()
        return Nothing()

    async def loop(self, slave: HipSlave) -> None:
        """Polls its feeds every interval and reports each change, until cancelled."""
        await self._given.wait()
        while True:
            await asyncio.sleep(self.interval)
            async with feed_session(self.resolve) as session:
                changed = await poll_feeds(session, dict(self.feeds))
            for url, digest in changed.items():
                try:
                    await FEED_CHANGED.call(slave, FeedChange(url, digest))
                except (HipError, RemoteError) as exc:
                    log.warning("change of feed %s not reported yet: %s", url, exc)
                    continue
                if url in self.feeds:
                    self.feeds[url] = digest


def run(args: argparse.Namespace) -> int:
    aggregator = FeedAggregator(resolve_map(args))
    asyncio.run(
        serve_slave(
            args, ROLE, {WATCH_FEEDS.name: WATCH_FEEDS.handler(aggregator.watch)}, aggregator.loop
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(
        standalone(
            "python -m crawler.feed_aggregator",
            "dlweb feed aggregator",
            add_feed_aggregator_arguments,
        )
    )
