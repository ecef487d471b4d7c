"""A collect order: the site's delimitation and how to crawl it, made from the CrawlOrder the
scheduler sends (archive/crawl_calls.py) or read from a file.

Also the signature file a crawl leaves behind: one JSON line per URL fetched (its content and
header-block SHA-256, status, type and validators). Given back with the next order, it lets the
crawler ask with If-None-Match / If-Modified-Since and tell new contents from known ones.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from archive.atomic import AtomicFile
from archive.blocklist import Blocklist
from archive.cluster import NewCapture
from archive.crawl_calls import CRAWL, CrawlOrder, Focus, ScoredUrl
from archive.hip import Fields, RemoteError

from .browser import DEFAULT_PAGE_BUDGET
from .delimitation import BadOrder, Delimitation
from .fetch import Politeness

__all__ = ["BadOrder", "Order", "Signature", "SignatureLog", "read_signatures"]


@dataclass(frozen=True)
class Signature(Fields):
    url: str
    content: str
    header: str
    status: int
    size: int
    header_size: int
    content_type: str = ""
    etag: str = ""
    last_modified: str = ""
    level: int = 0  # of the page it is or came with
    page: bool = True  # a page of its level, not one of its components

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
    quick: bool = False  # walk the previous crawl's URLs, parsing only what changed
    # A focused crawl (relevance.py): pages and links scored, the best-scored URL fetched next.
    focus: Focus | None = None
    injected: tuple[ScoredUrl, ...] = ()  # fetched before the rest, in score order
    blocked: Blocklist = field(default_factory=Blocklist)  # URLs never requested
    app_rules: bool = True  # the rules of the site's software apply (crawler/apps/)

    @classmethod
    def from_json(cls, data: object) -> "Order":
        """An order from the network or a file, every field checked."""
        try:
            message = CrawlOrder.from_json(data, CRAWL.name)
        except RemoteError as exc:
            raise BadOrder(exc.message) from None
        return cls.from_message(message)

    @classmethod
    def from_message(cls, message: CrawlOrder) -> "Order":
        """The order a scheduler's message gives; BadOrder when its delimitation is not one
        (an expression that does not compile, a start URL outside it)."""
        delimitation = Delimitation(
            message.start_url,
            message.accept,
            message.reject,
            Delimitation.max_depth if message.max_depth is None else message.max_depth,
            (
                Delimitation.max_dynamic_depth
                if message.max_dynamic_depth is None
                else message.max_dynamic_depth
            ),
        )
        politeness = Politeness()
        for key, value in message.politeness.items():
            setattr(politeness, key, value)
        return cls(
            delimitation=delimitation,
            keywords=tuple(k.lower() for k in message.keywords if k.strip()),
            previous=Path(message.previous) if message.previous else None,
            politeness=politeness,
            resolve={k.lower(): list(v) for k, v in message.resolve.items()},
            browser=message.browser,
            browser_budget=(
                DEFAULT_PAGE_BUDGET if message.browser_budget is None else message.browser_budget
            ),
            quick=message.quick,
            focus=message.focus,
            injected=message.injected,
            blocked=Blocklist(message.blocked),
            app_rules=message.app_rules,
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
