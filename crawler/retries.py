"""Fetches tried again later in the same crawl: a server error (5xx), a 429, a reset connection
or a timeout may pass, where a 404 or a bad address will not.

A URL is tried again at most `limit` times, the first after `first_delay` seconds, each wait
twice the one before, unless its answer said how long to wait (`Retry-After`, in seconds or as
an HTTP date): that is obeyed, and a wait longer than MAX_RETRY_AFTER gives the URL up rather
than hold the crawl. Until its last try, a failing answer is not archived: the answer that
comes after it is. What was tried again, what answered then and what was given up are reported.
"""

import email.utils
import heapq
import time
from dataclasses import dataclass, field

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRIED_ERRORS = frozenset({"timeout", "connection", "connect"})
MAX_RETRY_AFTER = 120.0  # seconds
MAX_LISTED = 100  # URLs given up, listed in the report


@dataclass(order=True, frozen=True, slots=True)
class Retry:
    """A URL to fetch again once `due` (time.monotonic()), as it was first: a page of `level`
    or a component of one, needed to show its page or not."""

    due: float
    url: str = field(compare=False)
    level: int = field(compare=False)
    page: bool = field(compare=False)
    requisite: bool = field(compare=False)


@dataclass
class RetryReport:
    tried_again: int = 0  # fetches made again
    recovered: int = 0  # URLs that answered on a later try
    given_up: dict[str, str] = field(default_factory=dict)  # URL -> its last failure

    def to_json(self) -> dict[str, object]:
        return {
            "tried_again": self.tried_again,
            "recovered": self.recovered,
            "given_up": [{"url": url, "reason": why} for url, why in self.given_up.items()],
        }


class Retries:
    """The URLs waiting to be fetched again, soonest first."""

    def __init__(self, limit: int, first_delay: float, report: RetryReport) -> None:
        self.limit = limit
        self.first_delay = first_delay
        self.report = report
        self._waiting: list[Retry] = []
        self._failures: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def retried(self, status: int) -> bool:
        """Whether an answer of this status is tried again."""
        return status in RETRIED_STATUSES

    def failed(self, asked: Retry, reason: str, retry_after: str | None = None) -> bool:
        """Note a failed fetch; True when it will be tried again (`asked.due` is ignored),
        False when it was its last try or the wait it asks for is too long."""
        count = self._failures.get(asked.url, 0) + 1
        self._failures[asked.url] = count
        wait = self._wait(count, retry_after)
        if count > self.limit or wait is None:
            del self._failures[asked.url]  # its answer, kept now, is no recovery
            if wait is None:
                reason = f"{reason}; Retry-After {(retry_after or '')[:40]!r} is too long a wait"
            if len(self.report.given_up) < MAX_LISTED:
                self.report.given_up[asked.url] = reason
            return False
        heapq.heappush(
            self._waiting,
            Retry(time.monotonic() + wait, asked.url, asked.level, asked.page, asked.requisite),
        )
        return True

    def answered(self, url: str) -> None:
        """Note a fetch that got an answer worth keeping: a URL that failed before recovered."""
        if self._failures.pop(url, 0):
            self.report.recovered += 1

    def take_due(self) -> Retry | None:
        """The next URL whose wait is over, no longer waiting."""
        if self._waiting and self._waiting[0].due <= time.monotonic():
            self.report.tried_again += 1
            return heapq.heappop(self._waiting)
        return None

    def next_wait(self) -> float | None:
        """Seconds until the next URL is due, None when none waits."""
        if not self._waiting:
            return None
        return max(0.0, self._waiting[0].due - time.monotonic())

    def _wait(self, count: int, retry_after: str | None) -> float | None:
        """The wait before try `count + 1`: the answer's Retry-After when it gives one (None
        when too long), else the backoff."""
        if retry_after is not None:
            asked = _seconds(retry_after)
            if asked is not None:
                return asked if asked <= MAX_RETRY_AFTER else None
        return float(self.first_delay * 2 ** (count - 1))


def _seconds(value: str) -> float | None:
    """A Retry-After as seconds from now: a number of seconds, or an HTTP date; None when it is
    neither."""
    text = value.strip()
    if text.isdigit():
        return float(int(text[:12]))
    try:
        when = email.utils.parsedate_to_datetime(text[:100])
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())
