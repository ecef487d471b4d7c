"""The HIP calls between the scheduler and its site crawler agents, typed once for both ends.

The scheduler calls an agent's `crawl` with a CrawlOrder (answered at once with
CrawlAccepted; the agent crawls in the background), `status` for its monitoring figures
(AgentStatus), `clone` to start one more agent like it (Cloned) and `stop` (Stopping). When a
site is done, the agent calls the scheduler's `site_done` with SiteDone, again until it is
answered Ok. The crawler's own Order (crawler/order.py) is made from a CrawlOrder, whose checks
are only those of the wire: the delimitation's expressions are compiled by the crawler.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from archive.answers import Answer
from archive.hip import (
    Fields,
    Message,
    Method,
    Nothing,
    RemoteError,
    as_object,
    is_number,
    left_out,
)
from archive.hip import field as field_of

__all__ = [
    "BROWSER_MODES",
    "CLONE",
    "CRAWL",
    "POLITENESS_KEYS",
    "SITE_DONE",
    "STATUS",
    "STOP",
    "AgentStatus",
    "Cloned",
    "CrawlAccepted",
    "CrawlOrder",
    "Ok",
    "SiteDone",
    "Stopping",
    "delimitation_fields",
]

# Whether pages are loaded in the agent's browser: never, always, or when their parse suggests
# scripts build them (auto).
BROWSER_MODES = ("never", "auto", "always")
# The politeness settings an order may carry (crawler/fetch.py Politeness), and their types.
POLITENESS_KEYS: dict[str, type[float] | type[int]] = {
    "delay": float,
    "burst": float,
    "idle_close": float,
    "max_pages": int,
    "max_bytes": int,
    "period": float,
    "connect_timeout": float,
    "read_timeout": float,
    "max_time": float,
    "max_size": int,
    "retries": int,
    "retry_delay": float,
}
# The fields of an order that delimit its site (crawler/delimitation.py Delimitation), and their
# types.
DELIMITATION_KEYS: dict[str, type[str] | type[int]] = {
    "start_url": str,
    "accept": str,
    "reject": str,
    "max_depth": int,
    "max_dynamic_depth": int,
}


def _refused(message: str) -> RemoteError:
    """A bad_params error whose message names the field at fault, as the crawler words it."""
    return RemoteError("bad_params", message)


def _order_field(data: Mapping[str, Any], key: str, kind: type) -> Any:
    """`data[key]` checked to be a `kind` (a bool is no int), or None when absent or null."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _refused(
            f"order field {key!r}: expected {kind.__name__}, got {type(value).__name__} {value!r}"
        )
    return value


def delimitation_fields(data: Mapping[str, object]) -> dict[str, Any]:
    """The fields of DELIMITATION_KEYS an order gives (not null), each checked to be of its type,
    with a start URL."""
    given = {key: _order_field(data, key, kind) for key, kind in DELIMITATION_KEYS.items()}
    if not given["start_url"]:
        raise _refused("order has no start_url")
    return {key: value for key, value in given.items() if value is not None}


@dataclass(frozen=True, slots=True)
class CrawlOrder(Fields):
    """A site to crawl and how: its delimitation, keywords, politeness, host addresses, browser
    use and the previous crawl's signature file. None: the crawler's default."""

    start_url: str
    accept: str = ""
    reject: str = ""
    keywords: tuple[str, ...] = ()
    politeness: dict[str, float] = field(default_factory=dict)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    browser: str = "never"
    max_depth: int | None = left_out(None)
    max_dynamic_depth: int | None = left_out(None)
    previous: str | None = left_out(None)  # the signature file of the site's previous crawl
    browser_budget: float | None = left_out(None)  # seconds a page may take in the browser
    # Walk the previous crawl's URLs level by level, parsing only what changed (crawler/site.py).
    quick: bool = left_out(False)

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        """An order from the network or a file, every field checked (other keys are ignored)."""
        if not isinstance(data, Mapping):
            raise _refused("a crawl order must be a JSON object")
        delimitation = delimitation_fields(data)
        keywords = data.get("keywords", [])
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise _refused("order field keywords must be a list of strings")
        previous = data.get("previous")
        if previous is not None and not isinstance(previous, str):
            raise _refused("order field previous must be a file path")
        given = data.get("politeness", {})
        if not isinstance(given, Mapping):
            raise _refused("order field politeness must be an object")
        politeness: dict[str, float] = {}
        for key, value in given.items():
            kind = POLITENESS_KEYS.get(key)
            if kind is None:
                raise _refused(f"order field politeness.{key} is unknown")
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise _refused(f"order field politeness.{key} must be a number >= 0")
            politeness[key] = kind(value)
        resolve = data.get("resolve", {})
        if not isinstance(resolve, Mapping) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(a, str) for a in v)
            for k, v in resolve.items()
        ):
            raise _refused("order field resolve must map host names to lists of addresses")
        browser = data.get("browser", "never")
        if browser not in BROWSER_MODES:
            raise _refused(f"order field browser must be one of {', '.join(BROWSER_MODES)}")
        budget = data.get("browser_budget")
        if budget is not None and (not is_number(budget) or budget <= 0):
            raise _refused("order field browser_budget must be a number of seconds > 0")
        quick = data.get("quick", False)
        if not isinstance(quick, bool) or (quick and previous is None):
            raise _refused("order field quick must be true or false, and true only with previous")
        return cls(
            **delimitation,
            keywords=tuple(keywords),
            previous=previous,
            politeness=politeness,
            resolve={host: list(addresses) for host, addresses in resolve.items()},
            browser=browser,
            browser_budget=None if budget is None else float(budget),
            quick=quick,
        )


@dataclass(frozen=True, slots=True)
class CrawlAccepted(Message):
    """A crawl order taken: the start URL of the site being crawled."""

    accepted: str


@dataclass(frozen=True, slots=True)
class AgentStatus(Answer):
    """A site crawler agent's monitoring figures: its monitoring page shows them, the scheduler
    polls them (`status`) and shows them on its own status page and in its `/api/status`."""

    name: str
    state: str  # idle or crawling
    pid: int
    uptime: float  # seconds since the agent started
    rss_mb: float  # its resident memory now
    sites: tuple[str, ...]  # the start URLs of the sites it is crawling (none when idle)
    pages: int  # pages of the current crawl so far
    crawl: dict[str, Any]  # the progress of the crawl (crawler/site.py Progress)
    errors: dict[str, int]  # errors of every crawl, by kind
    browser: dict[str, Any]  # the browser's memory and figures


@dataclass(frozen=True, slots=True)
class Cloned(Message):
    """One more agent started: its process and the name it joins under."""

    pid: int
    name: str


@dataclass(frozen=True, slots=True)
class Stopping(Message):
    """The agent that is stopping."""

    stopping: str


@dataclass(frozen=True, slots=True)
class SiteDone(Message):
    """A site crawl's end: the agent's name and the crawl's report (crawler/report.py
    SiteReport), or a report of `start_url` and why it `failed`."""

    agent: str
    report: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Ok:
    """A report kept: the agent may forget it."""

    def to_json(self) -> dict[str, bool]:
        return {"ok": True}

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        if field_of(as_object(data, method), "ok", bool, method) is not True:
            raise _refused(f"{method}: 'ok' must be true")
        return cls()


CRAWL = Method("crawl", CrawlOrder, CrawlAccepted)
STATUS = Method("status", Nothing, AgentStatus)
CLONE = Method("clone", Nothing, Cloned)
STOP = Method("stop", Nothing, Stopping)
SITE_DONE = Method("site_done", SiteDone, Ok)
