"""The HIP calls between the scheduler and its feed aggregators, typed once for both ends.

The scheduler calls an aggregator's `watch_feeds` with every feed it is to poll (FeedList: each
feed's URL and the SHA-256 of its bytes as the scheduler knows them, how often to poll, and the
campaign's pinned addresses); a later call replaces the list. The aggregator calls the
scheduler's `feed_changed` (FeedChange) with each feed whose bytes it found changed, answered Ok.
"""

from archive.answers import Answer
from archive.crawl_calls import Ok
from archive.hip import Method, Nothing

__all__ = ["FEED_CHANGED", "ROLE", "WATCH_FEEDS", "Feed", "FeedChange", "FeedList", "Ok"]

ROLE = "feeds"  # the HIP role of a feed aggregator


class Feed(Answer):
    url: str
    digest: str  # SHA-256 of its bytes as last known, "" when none is known


class FeedList(Answer):
    feeds: tuple[Feed, ...]
    interval: float  # seconds between two polls of each feed
    resolve: dict[str, tuple[str, ...]]  # host names pinned to addresses, as the crawl orders'


class FeedChange(Answer):
    url: str
    digest: str  # SHA-256 of the bytes found


WATCH_FEEDS = Method("watch_feeds", FeedList, Nothing)
FEED_CHANGED = Method("feed_changed", FeedChange, Ok)
