"""RSS and Atom feeds as a source: the feed is archived as fetched (as the crawler's feed reader
fetches it: crawler/feed_poll.py's pinned session), read by the crawler's feed parser, and each
item's page is a link to inject. A feed tells no popularity: its links score NO_POPULARITY. A
feed whose bytes did not change since the last round (the feed reader's SHA-256) gives none."""

import hashlib
from collections.abc import AsyncIterator

from ..links import LinkKind
from ..parsers.feeds import FeedParser
from .api_client import ApiClient
from .popularity import NO_POPULARITY
from .sources import Post

__all__ = ["Feed", "items"]


class Feed:
    def __init__(self, url: str) -> None:
        self.url = url
        self.name = url
        self.digest = ""

    async def posts(self, api: ApiClient) -> AsyncIterator[Post]:
        answer = await api.get(self.url, "application/rss+xml, application/atom+xml, */*")
        if answer is None:
            return
        digest = hashlib.sha256(answer.body).hexdigest()
        if digest == self.digest:
            return
        self.digest = digest
        await api.archive(answer)
        for post in items(self.url, answer.body):
            yield post


def items(url: str, body: bytes) -> list[Post]:
    """A feed's item pages, each a post that links to it (the feed parser is bounded)."""
    parser = FeedParser(url, None)
    parser.feed(body)
    pages = [link.url for link in parser.close().links if link.kind is LinkKind.PAGE]
    return [Post("", (page,), NO_POPULARITY) for page in dict.fromkeys(pages)]
