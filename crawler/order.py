"""A collect order: the site's delimitation and how to crawl it, as the scheduler sends it.

Also the signature file a crawl leaves behind: one JSON line per URL fetched (its content and
header-block SHA-256, status, type and validators). Given back with the next order, it lets the
crawler ask with If-None-Match / If-Modified-Since and tell new contents from known ones.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive.atomic import AtomicFile
from archive.cluster import NewCapture

from .browser import DEFAULT_PAGE_BUDGET
from .delimitation import BadOrder, Delimitation
from .fetch import Politeness

__all__ = ["BadOrder", "Order", "Signature", "SignatureLog", "read_signatures"]

_POLITENESS_KEYS = {
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
}


@dataclass(frozen=True)
class Signature:
    url: str
    content: str
    header: str
    status: int
    size: int
    header_size: int
    content_type: str = ""
    etag: str = ""
    last_modified: str = ""

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def capture(self, time: int, kind: str = "response", flags: int = 0) -> NewCapture:
        """The capture to insert for this URL's content and header block at `time`."""
        return NewCapture(
            url=self.url,
            time=time,
            content=self.content,
            header=self.header,
            status=self.status,
            size=self.size,
            header_size=self.header_size,
            kind=kind,
            flags=flags,
        )


BROWSER_MODES = ("never", "auto", "always")


@dataclass
class Order:
    delimitation: Delimitation
    keywords: tuple[str, ...] = ()
    previous: Path | None = None  # the signature file of the previous crawl
    politeness: Politeness = field(default_factory=Politeness)
    resolve: dict[str, list[str]] = field(default_factory=dict)
    # Whether pages are loaded in the agent's browser: never, always, or when their parse
    # suggests scripts build them (auto).
    browser: str = "never"
    browser_budget: float = DEFAULT_PAGE_BUDGET  # seconds a page may take in the browser

    @classmethod
    def from_json(cls, data: object) -> "Order":
        """An order from the network or a file, every field checked."""
        if not isinstance(data, Mapping):
            raise BadOrder("a crawl order must be a JSON object")
        delimitation = Delimitation.from_order(data)
        keywords = data.get("keywords", [])
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise BadOrder("order field keywords must be a list of strings")
        previous = data.get("previous")
        if previous is not None and not isinstance(previous, str):
            raise BadOrder("order field previous must be a file path")
        politeness = Politeness()
        given = data.get("politeness", {})
        if not isinstance(given, Mapping):
            raise BadOrder("order field politeness must be an object")
        for key, value in given.items():
            kind = _POLITENESS_KEYS.get(key)
            if kind is None:
                raise BadOrder(f"order field politeness.{key} is unknown")
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise BadOrder(f"order field politeness.{key} must be a number >= 0")
            setattr(politeness, key, kind(value))
        resolve = data.get("resolve", {})
        if not isinstance(resolve, Mapping) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(a, str) for a in v)
            for k, v in resolve.items()
        ):
            raise BadOrder("order field resolve must map host names to lists of addresses")
        browser = data.get("browser", "never")
        if browser not in BROWSER_MODES:
            raise BadOrder(f"order field browser must be one of {', '.join(BROWSER_MODES)}")
        budget = data.get("browser_budget", DEFAULT_PAGE_BUDGET)
        if isinstance(budget, bool) or not isinstance(budget, int | float) or budget <= 0:
            raise BadOrder("order field browser_budget must be a number of seconds > 0")
        return cls(
            delimitation=delimitation,
            keywords=tuple(k.lower() for k in keywords if k.strip()),
            previous=Path(previous) if previous else None,
            politeness=politeness,
            resolve={str(k).lower(): list(v) for k, v in resolve.items()},
            browser=browser,
            browser_budget=float(budget),
        )


def read_signatures(path: Path) -> dict[str, Signature]:
    """The previous crawl's signatures by URL; a damaged line is an error naming it."""
    found: dict[str, Signature] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadOrder(f"{path}: cannot read the signature file: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            signature = Signature(**entry)
        except (ValueError, TypeError) as exc:
            raise BadOrder(f"{path}: line {number}: not a signature entry ({exc})") from None
        found[signature.url] = signature
    return found


class SignatureLog(AtomicFile):
    """This crawl's signature file: one JSON line per URL fetched, written as the crawl goes
    (memory stays flat) and there only once the site is done."""

    def add(self, signature: Signature) -> None:
        self.write(json.dumps(signature.to_json(), separators=(",", ":")).encode() + b"\n")
