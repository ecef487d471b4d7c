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
from typing import Any, ClassVar, Self

from archive.answers import Answer
from archive.blocklist import BadPattern, Blocklist, linear_regex
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
from archive.url_parts import MAX_URL_LENGTH

__all__ = [
    "BROWSER_MODES",
    "CLONE",
    "CRAWL",
    "POLITENESS_KEYS",
    "SITE_DONE",
    "STATUS",
    "STOP",
    "UPDATE_FUNCTIONS",
    "WEIGHTED_LEVELS",
    "AgentStatus",
    "Cloned",
    "CrawlAccepted",
    "CrawlOrder",
    "Focus",
    "Ok",
    "ScoredUrl",
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


# How a queued URL's score takes new evidence (a link to it from another page): the highest, the
# mean, the latest, or the first one kept (breadth-first within scores).
UPDATE_FUNCTIONS = ("max", "avg", "last", "first")
# The levels of evidence a page's relevance weighs (crawler/relevance.py).
WEIGHTED_LEVELS = ("document", "paragraph", "anchor", "url")
MAX_FOCUS_ITEMS = 1_000  # keywords, examples, URL patterns or spam patterns, each
MAX_FOCUS_TEXT = 100_000  # characters of one example text
MAX_INJECTED = 10_000  # URLs one order carries


def _strings(
    data: Mapping[str, Any], key: str, most: int, longest: int, within: str = ""
) -> tuple[str, ...]:
    """`data[key]`, a list of at most `most` strings of at most `longest` characters each."""
    value = data.get(key, [])
    key = within + key
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _refused(f"order field {key} must be a list of strings")
    if len(value) > most:
        raise _refused(f"order field {key} holds {len(value)} items, more than {most}")
    if any(len(item) > longest for item in value):
        raise _refused(f"order field {key} holds a string over {longest} characters")
    return tuple(value)


def _score(value: object, where: str) -> float:
    if not is_number(value) or not 0 <= value <= 1:
        raise _refused(f"{where} must be a number from 0 to 1")
    return float(value)


@dataclass(frozen=True, slots=True)
class ScoredUrl(Fields):
    """A URL injected into a crawl with its score (0 to 1) and the campaign it serves."""

    url: str
    score: float
    campaign: str = ""

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        if not isinstance(data, Mapping):
            raise _refused(f"{where} must be an object with url and score")
        url = data.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _refused(f"{where}.url must be an http or https URL")
        if len(url) > MAX_URL_LENGTH:
            raise _refused(f"{where}.url is over {MAX_URL_LENGTH} characters")
        campaign = data.get("campaign", "")
        if not isinstance(campaign, str) or len(campaign) > 200:
            raise _refused(f"{where}.campaign must be a string of at most 200 characters")
        return cls(url, _score(data.get("score"), f"{where}.score"), campaign)


@dataclass(frozen=True, slots=True)
class Focus(Fields):
    """What a focused crawl finds relevant (crawler/relevance.py): the campaign's keywords and
    example texts, scores of URL patterns (RE2 expressions), spam patterns (blocklist.py forms)
    whose pages score 0, the weight of each level of evidence (WEIGHTED_LEVELS), and how a
    queued URL's score takes new evidence (UPDATE_FUNCTIONS)."""

    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    url_scores: dict[str, float] = field(default_factory=dict)
    spam: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)
    update: str = "avg"

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        if not isinstance(data, Mapping):
            raise _refused("order field focus must be an object")
        url_scores = data.get("url_scores", {})
        if not isinstance(url_scores, Mapping) or len(url_scores) > MAX_FOCUS_ITEMS:
            raise _refused(
                f"order field focus.url_scores must map at most {MAX_FOCUS_ITEMS} patterns to scores"
            )
        scores: dict[str, float] = {}
        for pattern, score in url_scores.items():
            where = f"order field focus.url_scores[{str(pattern)[:80]!r}]"
            try:
                linear_regex(pattern)
            except BadPattern as exc:
                raise _refused(f"{where}: {exc}") from None
            scores[pattern] = _score(score, where)
        weights = data.get("weights", {})
        if not isinstance(weights, Mapping) or not set(weights) <= set(WEIGHTED_LEVELS):
            raise _refused(
                f"order field focus.weights must map some of {', '.join(WEIGHTED_LEVELS)} to weights"
            )
        for level, weight in weights.items():
            if not is_number(weight) or weight < 0:
                raise _refused(f"order field focus.weights.{level} must be a number >= 0")
        update = data.get("update", "avg")
        if update not in UPDATE_FUNCTIONS:
            raise _refused(f"order field focus.update must be one of {', '.join(UPDATE_FUNCTIONS)}")
        spam = _strings(data, "spam", MAX_FOCUS_ITEMS, 2_000, "focus.")
        try:
            Blocklist(spam)
        except BadPattern as exc:
            raise _refused(f"order field focus.spam: {exc}") from None
        return cls(
            keywords=_strings(data, "keywords", MAX_FOCUS_ITEMS, 200, "focus."),
            examples=_strings(data, "examples", MAX_FOCUS_ITEMS, MAX_FOCUS_TEXT, "focus."),
            url_scores=scores,
            spam=spam,
            weights={level: float(weight) for level, weight in weights.items()},
            update=update,
        )


def _nested_json(value: Any) -> Any:
    return value.to_json() if isinstance(value, Fields) else value


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
    # A focused crawl: pages and links scored for relevance, the best-scored URL fetched next.
    focus: Focus | None = left_out(None)
    injected: tuple[ScoredUrl, ...] = left_out(())  # crawled before the rest, in score order
    blocked: tuple[str, ...] = left_out(())  # blacklist patterns (archive/blocklist.py)
    # Whether the rules of the site's software apply to its links (crawler/apps/).
    app_rules: bool = left_out(True)
    _nested: ClassVar[Any] = staticmethod(_nested_json)

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
        focus = data.get("focus")
        injected = data.get("injected", [])
        if not isinstance(injected, list) or len(injected) > MAX_INJECTED:
            raise _refused(f"order field injected must be a list of at most {MAX_INJECTED} URLs")
        blocked = _strings(data, "blocked", 10_000, 2_000)
        try:
            Blocklist(blocked)
        except BadPattern as exc:
            raise _refused(f"order field blocked: {exc}") from None
        app_rules = data.get("app_rules", True)
        if not isinstance(app_rules, bool):
            raise _refused("order field app_rules must be true or false")
        return cls(
            **delimitation,
            keywords=tuple(keywords),
            previous=previous,
            politeness=politeness,
            resolve={host: list(addresses) for host, addresses in resolve.items()},
            browser=browser,
            browser_budget=None if budget is None else float(budget),
            quick=quick,
            focus=None if focus is None else Focus.from_json(focus, "crawl"),
            injected=tuple(
                ScoredUrl.from_json(item, f"order field injected[{n}]")
                for n, item in enumerate(injected)
            ),
            blocked=blocked,
            app_rules=app_rules,
        )


class CrawlAccepted(Message):
    """A crawl order taken: the start URL of the site being crawled."""

    accepted: str


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


class Cloned(Message):
    """One more agent started: its process and the name it joins under."""

    pid: int
    name: str


class Stopping(Message):
    """The agent that is stopping."""

    stopping: str


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
