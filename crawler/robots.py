"""robots.txt, per scheme, host and port, read with protego (the parser Scrapy uses).

RFC 9309's rules for an unreadable file: 4xx means no rules, 5xx or no answer means keep away.
"""

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from protego import Protego

from .fetch import Fetched

__all__ = ["Robots", "origin_of"]

log = logging.getLogger(__name__)

MAX_ROBOTS = 512 * 1024  # RFC 9309: at least 500 KiB are read


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2].lower()}"


class _Rules:
    def __init__(self, parser: Protego | None, allow_all: bool) -> None:
        self.parser = parser
        self.allow_all = allow_all

    def allowed(self, url: str, agent: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return bool(self.parser.can_fetch(url, agent))


class Robots:
    """The rules of every server a crawl meets, each fetched (and archived) on first contact."""

    def __init__(self, agent: str, fetch: Callable[[str], Awaitable[Fetched | None]]) -> None:
        self.agent = agent
        self._fetch = fetch
        self._rules: dict[str, _Rules] = {}
        self.sitemaps: dict[str, list[str]] = {}
        self.delays: dict[str, float] = {}

    async def allowed(self, url: str) -> bool:
        origin = origin_of(url)
        rules = self._rules.get(origin)
        if rules is None:
            rules = self._rules[origin] = await self._load(origin)
        return rules.allowed(url, self.agent)

    async def _load(self, origin: str) -> _Rules:
        fetched = await self._fetch(origin + "/robots.txt")
        if fetched is None:
            log.info("%s/robots.txt: no answer, keeping away from the server", origin)
            return _Rules(None, allow_all=False)
        if 400 <= fetched.status < 500:
            return _Rules(None, allow_all=True)
        if fetched.status != 200:
            log.info("%s/robots.txt: status %d, keeping away", origin, fetched.status)
            return _Rules(None, allow_all=False)
        try:
            text = fetched.decoded(MAX_ROBOTS).decode("utf-8", "replace")
            parser = Protego.parse(text)
        except Exception as exc:  # protego documents no exception; a bad file must not stop us
            log.info("%s/robots.txt: unreadable (%s), no rules applied", origin, exc)
            return _Rules(None, allow_all=True)
        self.sitemaps[origin] = list(parser.sitemaps)
        delay = parser.crawl_delay(self.agent)
        if delay:
            self.delays[origin] = float(delay)
        return _Rules(parser, allow_all=True)
