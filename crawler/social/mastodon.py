"""The Mastodon public API: a hashtag's timeline (GET /api/v1/timelines/tag/TAG) and an
account's (GET /api/v1/accounts/lookup?acct=, then /api/v1/accounts/ID/statuses), page by page
by the Link header's rel="next" (max_id), up to `pages` pages; later rounds ask only for
statuses newer than the newest seen (since_id)."""

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlencode

from .api_client import ApiClient
from .sources import Post
from .statuses import post_of, status_id

__all__ = ["AccountTimeline", "TagTimeline"]

log = logging.getLogger(__name__)


class _Timeline(ABC):
    """A timeline read page by page; `since` is the newest status id seen."""

    name = ""

    def __init__(self, instance: str, limit: int, pages: int) -> None:
        self.instance = instance
        self.limit = limit
        self.pages = pages
        self.since = ""

    @abstractmethod
    async def _path(self, api: ApiClient) -> str | None:
        """The timeline's API path; None when it cannot be found (an unknown account)."""

    async def posts(self, api: ApiClient) -> AsyncIterator[Post]:
        path = await self._path(api)
        if path is None:
            return
        query = {"limit": str(self.limit)} | ({"since_id": self.since} if self.since else {})
        url = f"{self.instance}{path}?{urlencode(query)}"
        newest = self.since
        for _ in range(self.pages):
            got = await api.get_json(url)
            if got is None:
                return
            statuses, answer = got
            if not isinstance(statuses, list):
                api.tally.skip("bad-json", f"GET {url}: not a list of statuses")
                return
            for status in statuses[: self.limit]:  # an instance may send more
                post = post_of(status)
                if post is None:
                    continue
                found = status_id(status)
                if found and (len(found), found) > (len(newest), newest):
                    newest = found
                yield post
            self.since = newest
            url = self._next(answer.url, answer.next_url)
            if not url or not statuses:
                return

    def _next(self, url: str, following: str) -> str:
        """The next page's URL, when the Link header names one on this instance."""
        if following and not following.startswith(self.instance + "/"):
            log.warning(
                "%s: the next page %s is not on %s; not followed", url, following, self.instance
            )
            return ""
        return following


class TagTimeline(_Timeline):
    def __init__(self, instance: str, hashtag: str, limit: int, pages: int) -> None:
        super().__init__(instance, limit, pages)
        self.hashtag = hashtag
        self.name = f"#{hashtag}"

    async def _path(self, api: ApiClient) -> str | None:
        return f"/api/v1/timelines/tag/{quote(self.hashtag)}"


class AccountTimeline(_Timeline):
    def __init__(self, instance: str, account: str, limit: int, pages: int) -> None:
        super().__init__(instance, limit, pages)
        self.account = account
        self.name = f"@{account}"
        self.id = ""

    async def _path(self, api: ApiClient) -> str | None:
        if not self.id:
            url = f"{self.instance}/api/v1/accounts/lookup?{urlencode({'acct': self.account})}"
            got = await api.get_json(url)
            if got is None:
                return None
            found: Any = got[0]
            account_id = found.get("id") if isinstance(found, dict) else None
            if not isinstance(account_id, str) or not account_id.isalnum():
                api.tally.skip("bad-json", f"GET {url}: no account id in the answer")
                return None
            self.id = account_id
        return f"/api/v1/accounts/{self.id}/statuses"
