"""Temporal coherence: which captures a page was put together from.

A page replayed at a date is made of resources captured at other dates. The proxy sees every
resource it serves, so for each client whose banner is on it keeps the last few pages it loaded,
each with the capture date of every archived resource served for it (and the URLs the archive
lacked). A resource belongs to the pages its `Referer` names, as a page or as one of their
resources (an image of a style sheet names the style sheet); with no such page, to the page
loaded last of the Referer's origin, or without a Referer, of the resource's own origin (a
request of no page, such as the browser's own, goes nowhere). Only pages browsed at the
resource's own date count: the same URL at another date is another page.

Memory is bounded: PAGES_KEPT pages per client, RESOURCES_KEPT resources per page, CLIENTS_KEPT
clients.
"""

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from archive.errors import ClientFault
from archive.timestamps import MAX_TIME, format_iso

PAGES_KEPT = 8
RESOURCES_KEPT = 1000
CLIENTS_KEPT = 256
DEFAULT_SPAN = 86_400  # seconds: a resource more than a day from its page is marked
_SPAN_RE = re.compile(r"(\d{1,9})\s*([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}
_NAMES = ((86_400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


class BadSpan(ClientFault):
    """A span that cannot be read as a duration."""


def parse_span(text: str) -> int:
    """A duration in seconds from `90`, `90s`, `30m`, `12h` or `1d`."""
    matched = _SPAN_RE.fullmatch(text.strip().lower())
    if matched is None:
        raise BadSpan(
            f"span={text[:40]!r}: give a duration such as 1d, 12h, 30m or 90s (seconds alone)"
        )
    return int(matched.group(1)) * _UNITS[matched.group(2)]


def span_text(seconds: int) -> str:
    """`1 day`, `36 hours`: the span in its largest whole unit."""
    for size, name in _NAMES:
        if seconds % size == 0 and seconds >= size:
            count = seconds // size
            return f"{count} {name}{'' if count == 1 else 's'}"
    return "0 seconds"


@dataclass
class PageLoad:
    """A page a client loaded at a date, and what was served for it."""

    url: str
    at: int  # the date browsed at (MAX_TIME: the latest captures)
    time: int  # the capture date of the page
    resources: dict[str, int] = field(default_factory=dict)  # URL -> capture date
    missing: dict[str, None] = field(default_factory=dict)  # URLs never captured, in order
    truncated: bool = False  # more resources were served than are kept

    def add(self, url: str, time: int | None) -> None:
        if url == self.url:
            return
        known = self.resources if time is not None else self.missing
        if url not in known and len(self.resources) + len(self.missing) >= RESOURCES_KEPT:
            self.truncated = True
            return
        if time is None:
            self.missing[url] = None
        else:
            self.resources[url] = time
            self.missing.pop(url, None)

    def report(self, span: int) -> dict[str, Any]:
        """The coherence figure: the spread of the capture dates of the page and its
        resources, and each resource marked when more than `span` seconds from the page."""
        times = [self.time, *self.resources.values()]
        listed = [
            {
                "url": url,
                "date": format_iso(time),
                "offset_seconds": int((time - self.time) / 1_000_000),
                "beyond": abs(time - self.time) > span * 1_000_000,
            }
            for url, time in sorted(self.resources.items(), key=lambda item: (item[1], item[0]))
        ]
        return {
            "url": self.url,
            "date": format_iso(self.time),
            "at": None if self.at == MAX_TIME else format_iso(self.at),
            "span_seconds": span,
            "span": span_text(span),
            "earliest": format_iso(min(times)),
            "latest": format_iso(max(times)),
            "resources": listed,
            "beyond": sum(1 for resource in listed if resource["beyond"]),
            "missing": list(self.missing),
            "truncated": self.truncated,
        }


class Coherence:
    """The recent pages of each client, and the resources served for each."""

    def __init__(self) -> None:
        self._clients: OrderedDict[str, list[PageLoad]] = OrderedDict()

    def page(self, client: str, url: str, at: int, time: int) -> None:
        """A page loaded: it becomes the client's latest. Loaded again at the same date, it
        keeps what was served for it before (the browser may take that from its cache now),
        unless the archive now serves another capture of it."""
        loads = self._clients.pop(client, [])
        self._clients[client] = loads
        if len(self._clients) > CLIENTS_KEPT:
            self._clients.popitem(last=False)
        known = next((load for load in loads if load.url == url and load.at == at), None)
        if known is not None:
            loads.remove(known)
        if known is None or known.time != time:
            known = PageLoad(url, at, time)
        loads.append(known)
        del loads[:-PAGES_KEPT]

    def resource(
        self, client: str, url: str, referer: str | None, at: int, time: int | None
    ) -> None:
        """A resource served to a client at date `at`: its capture date, or None when the
        archive lacks it."""
        loads = [load for load in self._clients.get(client, ()) if load.at == at]
        if not loads:
            return
        named = referer.partition("#")[0] if referer else ""
        owners = [
            load for load in loads if named and (named == load.url or named in load.resources)
        ]
        if not owners:
            # The Referer's origin (sent alone across origins), or without one (a page's
            # no-referrer policy, or the browser's own requests), the resource's own origin.
            origin = origin_of(named) or origin_of(url)
            same = [load for load in loads if origin_of(load.url) == origin]
            if not same:
                return
            owners = [same[-1]]
        for load in owners:
            load.add(url, time)

    def load(self, client: str, url: str, at: int | None) -> PageLoad | None:
        """The client's latest load of `url`, at date `at` when given."""
        for load in reversed(self._clients.get(client, ())):
            if load.url == url and (at is None or load.at == at):
                return load
        return None


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, in lower case, or "" for a URL without them."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""
