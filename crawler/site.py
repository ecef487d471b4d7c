"""One site's crawl: breadth-first over page links, each page's components fetched at once.

A focused crawl (an order with a focus or injected URLs) takes the best-scored URL next instead
(priority_frontier.py): injected URLs first, in score order, then page links scored by their
page's relevance and their own evidence (relevance.py). URLs the order blocks are never asked for.

Page links (a click away) go to the next level's queue when they are inside the delimitation;
component links (what the browser loads with the page: images, scripts, style sheets, frames,
redirect targets) are fetched right after their page, depth-first, so a page is archived with
everything needed to see it. Requisite components are fetched even outside the site.
"""

import asyncio
import dataclasses
import hashlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from archive.atomic import AtomicFile
from archive.cluster import ClusterClient
from archive.content_coding import BadCoding, TooLarge, inflate
from archive.errors import DlwebError
from archive.header_block import media_type, parse_header_block
from archive.requestkey import lookup_url
from archive.structure import RecordFlag, RecordKind
from archive.urlkey import BadUrl, canonical_url

from . import parsers
from .apps import AppRules, shipped_rules
from .browser import Browser, BrowserError, BrowserRequest, BrowserResponse, ServeError
from .fetch import Body, Fetched, Fetcher, FetchError, Resolver
from .frontier import Frontier, SeenSet
from .links import Link, LinkKind
from .order import Order, Signature, SignatureLog, read_signatures
from .page_changes import CHUNKS_SUFFIX, PageChanges
from .parsers.common import ParseResult
from .priority_frontier import PriorityFrontier
from .relevance import PageRelevance, Relevance
from .report import RelevanceStats, SiteReport
from .retries import RETRIED_ERRORS, Retries, Retry
from .robots import Robots, origin_of
from .scripted import HEAD, built_by_scripts
from .site_graph import GRAPH_SUFFIX, SiteGraph, graph_change, out_links, read_graph
from .storage import CaptureSink
from .traps import NearDuplicates, TrapGuard, space_of

__all__ = ["Progress", "Queues", "SiteCrawler", "queues_for"]

Queues = Frontier | PriorityFrontier

log = logging.getLogger(__name__)

ROBOTS_AGENT = "dlweb-crawler"
MAX_REDIRECTS = 10
MAX_PARSED = 16 * 1024 * 1024  # a decoded document is parsed up to this size
MAX_BROWSER_BODY = 64 * 1024 * 1024  # a decoded body the browser is given, at most
LAST_URLS = 20
# Responses the browser got lately, kept to answer its next page's asks for the same scripts,
# styles and images without asking the server again: at most this many bytes, each at most
# RECENT_ITEM.
RECENT_BYTES = 32 * 1024 * 1024
RECENT_ITEM = 4 * 1024 * 1024
# Fields of the browser's requests the crawler sends as its own, or that describe a connection.
NOT_PASSED = frozenset(
    {
        "host",
        "user-agent",
        "content-length",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "transfer-encoding",
        "upgrade",
        "accept-encoding",
    }
)
# Fields of a response that describe its body as sent, not as the browser gets it.
WIRE_FIELDS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass
class Progress:
    """What the agent's monitoring page shows, updated as the crawl goes."""

    site: str = ""
    started: float = 0.0
    fetched: int = 0
    pages: int = 0
    errors: int = 0
    queues: Callable[[], dict[int, int]] = dict
    last: deque[str] = field(default_factory=lambda: deque(maxlen=LAST_URLS))
    sites_done: int = 0

    def to_json(self) -> dict[str, object]:
        elapsed = time.time() - self.started if self.started else 0.0
        return {
            "site": self.site,
            "fetched": self.fetched,
            "pages": self.pages,
            "errors": self.errors,
            "pages_per_second": round(self.pages / elapsed, 2) if elapsed > 0 else 0.0,
            "queues": {str(level): n for level, n in sorted(self.queues().items())},
            "last_urls": list(self.last),
            "sites_done": self.sites_done,
        }


def queues_for(order: Order, directory: Path) -> Queues:
    """A focused crawl's priority frontier; else the breadth-first one."""
    if order.focus is not None:
        return PriorityFrontier(directory, order.focus.update)
    if order.injected:
        return PriorityFrontier(directory, "first")
    return Frontier(directory)


class SiteCrawler:
    def __init__(
        self,
        order: Order,
        client: ClusterClient,
        work: Path,
        progress: Progress | None = None,
        browser: Browser | None = None,
    ) -> None:
        self.order = order
        self.delimitation = order.delimitation
        self.client = client
        self.work = work
        self.progress = progress or Progress()
        self.report = SiteReport(order.delimitation.start_url)
        self.seen = SeenSet()
        self.traps = TrapGuard()
        self.near = NearDuplicates()
        politeness = order.politeness
        self.retries = Retries(politeness.retries, politeness.retry_delay, self.report.retries)
        self.previous: dict[str, Signature] = {}
        self.known: set[str] = set()
        self._sink = CaptureSink(client)
        self._fetcher: Fetcher | None = None
        self._level = 0  # of the page being fetched, with its components
        self._robots = Robots(ROBOTS_AGENT, self._fetch_robots)
        self.browser = browser if order.browser != "never" else None
        self._page_url = ""  # the page being crawled, whose components follow
        # Pages the `auto` mode found built by scripts, and their documents for the browser.
        self._scripted: set[str] = set()
        self._documents: dict[str, BrowserResponse] = {}
        self._recent = _Recent(RECENT_BYTES, RECENT_ITEM)
        # The previous crawl's links by page, for the pages a quick re-crawl does not parse.
        self._previous_graph: SiteGraph | None = None
        self._previous_links: dict[str, list[str]] = {}
        # The rules of the site's software, once it is known.
        self.apps = AppRules(shipped_rules() if order.app_rules else ())
        self.relevance = Relevance(order.focus) if order.focus is not None else None
        if self.relevance is not None:
            self.report.relevance = RelevanceStats()
        self._page_relevance: PageRelevance | None = None  # of the page being crawled
        self._links_scored = 0  # links of that page scored so far

    async def run(self, signature_path: Path) -> SiteReport:
        """Crawl the site; the report is returned once every capture is stored."""
        if self.order.previous is not None:
            self.previous = read_signatures(self.order.previous)
            self.known = {s.content for s in self.previous.values()}
            self.report.changes = PageChanges.since(self.order.previous, self.previous)
            self._previous_graph = read_graph(self.order.previous.with_suffix(GRAPH_SUFFIX))
            if self._previous_graph is not None and self.order.quick:
                self._previous_links = out_links(self._previous_graph)
        self.work.mkdir(parents=True, exist_ok=True)
        self.progress.site = self.delimitation.start_url
        self.progress.started = time.time()
        signatures = SignatureLog(signature_path)
        chunks = AtomicFile(signature_path.with_suffix(CHUNKS_SUFFIX))
        self.report.text.out = chunks.write
        frontier = queues_for(self.order, self.work / "queues")
        self.progress.queues = frontier.sizes
        try:
            if self.order.quick and self.report.changes is not None:
                self.report.changes.carry(chunks.write)
            async with Fetcher(
                self.order.politeness, Resolver(self.order.resolve), self.work
            ) as self._fetcher:
                await self._crawl(frontier, signatures)
            stored = await self._sink.flush()
        except BaseException:
            await self._sink.abandon()
            signatures.abandon()
            chunks.abandon()
            raise
        finally:
            frontier.close()
            self.progress.queues = dict
        signatures.commit()
        chunks.commit()
        self._write_graph(signature_path.with_suffix(GRAPH_SUFFIX))
        self.report.chunk_file = str(chunks.path)
        self.report.uploaded = stored.uploaded
        self.report.uploaded_bytes = stored.bytes
        self.report.signature_file = str(signature_path)
        self.report.finished = time.time()
        self.progress.sites_done += 1
        return self.report

    def _write_graph(self, path: Path) -> None:
        """Write the site graph beside the signature file; compare it with the previous one."""
        self.report.graph.write(path)
        self.report.graph_file = str(path)
        if self._previous_graph is not None:
            self.report.graph_change = graph_change(self._previous_graph, self.report.graph)

    async def _crawl(self, frontier: Queues, signatures: SignatureLog) -> None:
        self._signatures = signatures
        start = self._canonical(self.delimitation.start_url)
        if start is None:
            raise DlwebError(f"start URL {self.delimitation.start_url!r} is not a valid URL")
        self.seen.add(start)
        if self.order.blocked and self.order.blocked.blocks(start):
            self.report.blocked += 1
            return
        self._inject(frontier)
        self._enqueue(frontier, start, 0, "", 1.0)
        if self.order.quick:
            self._walk_previous(start, frontier)
        sitemaps_done = False
        while (item := await self._next(frontier)) is not None:
            if isinstance(item, Retry):
                await self._again(item, frontier)
                continue
            url, level, via = item
            if via == _FORMER_COMPONENT:
                self._level = level
                await self._components(
                    [(Link(url, LinkKind.COMPONENT, False), False)], level, frontier
                )
                continue
            await self._page(url, level, frontier, requisite=level == 0)
            if not sitemaps_done:
                sitemaps_done = True
                for sitemap in self._robots.sitemaps.get(origin_of(start), []):
                    if (canonical := self._canonical(sitemap)) is not None:
                        self._queue_page(canonical, "", 1, frontier)

    def _inject(self, frontier: Queues) -> None:
        """Queue the order's injected URLs that the delimitation takes, ahead of the rest."""
        if not isinstance(frontier, PriorityFrontier):
            return
        for injected in self.order.injected:
            url = self._canonical(injected.url)
            if url is not None and self.delimitation.inside(url) and self._new(url):
                frontier.pin(url, 1, injected.score)

    def _enqueue(self, frontier: Queues, url: str, level: int, via: str, score: float) -> None:
        if isinstance(frontier, PriorityFrontier):
            frontier.push(url, level, via, score)
        else:
            frontier.push(url, level, via)

    def _walk_previous(self, start: str, frontier: Queues) -> None:
        """Queue every URL of the previous crawl at its level, pages and components, each seen
        already: a quick re-crawl asks for each again (conditionally), and only what changed
        is parsed for links that are new."""
        for signature in sorted(self.previous.values(), key=lambda s: s.level):
            # A robots.txt is read again, in full, by the rules' own fetch.
            robots = signature.url.endswith("/robots.txt")
            if signature.url == start or robots or not self.seen.add(signature.url):
                continue
            if self.order.blocked and self.order.blocked.blocks(signature.url):
                self.report.blocked += 1
                continue
            via = "" if signature.page else _FORMER_COMPONENT
            self._enqueue(frontier, signature.url, max(signature.level, 1), via, 0.5)

    async def _next(self, frontier: Queues) -> "tuple[str, int, str] | Retry | None":
        """A URL whose wait for another try is over, else the frontier's next; once the
        frontier is empty, the URLs still waiting, each when due; None at the end."""
        while True:
            if (due := self.retries.take_due()) is not None:
                return due
            if (item := frontier.next()) is not None:
                return item
            wait = self.retries.next_wait()
            if wait is None:
                return None
            await asyncio.sleep(wait)

    async def _again(self, retry: Retry, frontier: Queues) -> None:
        """Fetch a URL again: a page with its components, or a component alone."""
        if retry.page:
            await self._page(retry.url, retry.level, frontier, retry.requisite, again=True)
            return
        self._level = retry.level
        await self._components(
            [(Link(retry.url, LinkKind.COMPONENT, retry.requisite), False)], retry.level, frontier
        )

    # -- one page and its components -------------------------------------------------------

    async def _page(
        self, url: str, level: int, frontier: Queues, requisite: bool, again: bool = False
    ) -> None:
        if self.near.stopped(url):
            self.report.content_trap(f"in a content trap: {space_of(url)}", url)
            return
        if not again:
            self.report.graph.page(url)
            self.report.levels[level] += 1
            self.report.pages += 1
            self.progress.pages += 1
        self._level = level
        self._page_url = url
        self._page_relevance = None
        if self.order.browser == "always" and await self._browse(url, level, frontier):
            return
        components: list[tuple[Link, bool]] = []
        for link in await self._visit(url, requisite, page=True):
            self._route(link, level, frontier, components, requisite)
        if url in self._scripted and await self._browse(url, level, frontier):
            return
        await self._components(components, level, frontier)

    async def _components(
        self, components: list[tuple[Link, bool]], level: int, frontier: Queues
    ) -> None:
        """Fetch a page's components, depth-first: a style sheet's images come with it."""
        stack = list(reversed(components))
        while stack:
            link, inherited = stack.pop()
            self.report.components += 1
            found = await self._visit(link.url, link.requisite or inherited)
            nested: list[tuple[Link, bool]] = []
            for child in found:
                self._route(child, level, frontier, nested, link.requisite or inherited)
            stack.extend(reversed(nested))

    async def _browse(self, url: str, level: int, frontier: Queues) -> bool:
        """Load a page in the browser, everything it asks for fetched and stored as a component
        of it, its rendered links queued; False when the browser failed on it (the page is then
        crawled from its parse)."""
        if self.browser is None:
            return False
        if not await self._robots.allowed(url):
            self.report.robots_excluded += 1
            return True
        try:
            loaded = await self.browser.load(url, self._serve, self.order.browser_budget)
        except BrowserError as exc:
            self.report.error(f"browser-{exc.kind}")
            self.progress.errors += 1
            log.info("%s: the browser failed (%s); crawled from its parse", url, exc)
            return False
        finally:
            self._documents.pop(url, None)
        self.report.browser_pages += 1
        for link in loaded.links:
            self._route(Link(link, LinkKind.PAGE, False), level, frontier, [], False)
        return True

    async def _serve(self, request: BrowserRequest) -> BrowserResponse:
        """Answer a request of the page in the browser: fetched politely and stored, under the
        lookup key of its method and body; a document parsed already or a component fetched
        lately is answered from memory."""
        idempotent = request.method in ("GET", "HEAD")
        if idempotent:
            kept = self._documents.pop(request.url, None) or self._recent.get(request.url)
            if kept is not None:
                return kept
        if self.order.blocked and self.order.blocked.blocks(request.url):
            self.report.blocked += 1
            raise ServeError("blocked")
        if not await self._robots.allowed(request.url):
            self.report.robots_excluded += 1
            raise ServeError("robots")
        fields = [(k, v) for k, v in request.headers if k.lower() not in NOT_PASSED]
        try:
            fetched = await self._download(request.url, False, request.method, request.body, fields)
        except FetchError:
            raise ServeError("fetch") from None
        try:
            raw = b"".join(fetched.body.chunks())
            content_type = next((v for k, v in fields if k.lower() == "content-type"), None)
            key = lookup_url(request.method, fetched.url, content_type, request.body or b"")
            if request.resource_type != "Document":
                self.report.components += 1
            await self._keep(dataclasses.replace(fetched, url=key), parse=False)
        finally:
            fetched.body.discard()
        answer = _for_browser(fetched, raw)
        if idempotent:
            self._recent.put(request.url, answer)
        return answer

    def _route(
        self,
        link: Link,
        level: int,
        frontier: Queues,
        components: list[tuple[Link, bool]],
        requisite: bool,
    ) -> None:
        """Send a link where it belongs: fetched now, queued for the next level, or reported."""
        if link.kind is LinkKind.STREAM:
            self.report.listed(self.report.streams, link.url)
            return
        if link.kind is LinkKind.FEED:
            self.report.listed(self.report.feeds, link.url)
        url = self._canonical(link.url)
        if url is None:
            return
        if link.kind is LinkKind.COMPONENT:
            # A redirect target is needed as much as what redirected to it.
            needed = link.requisite or (requisite and link.text == _REDIRECT)
            if not needed and not self.delimitation.inside(url):
                self.report.external_link(url, link.text)
            elif self._new(url):
                components.append((Link(url, link.kind, needed, link.text), requisite))
            return
        if self.delimitation.inside(url):
            self.report.graph.link(self._page_url, url)
        self._queue_page(url, link.text, level + 1, frontier)

    def _queue_page(self, url: str, text: str, level: int, frontier: Queues) -> None:
        if not self.delimitation.inside(url):
            self.report.external_link(url, text)
        elif self.delimitation.allows_depth(url, level) and self._new(url):
            if isinstance(frontier, PriorityFrontier):
                frontier.push(url, level, "", self._link_score(url, text))
            else:
                frontier.push(url, level, "")
        elif isinstance(frontier, PriorityFrontier) and self.relevance is not None:
            frontier.update(url, self._link_score(url, text))

    def _link_score(self, url: str, text: str) -> float:
        """A page link's score in a focused crawl (0 without a focus: breadth-first)."""
        if self.relevance is None:
            return 0.0
        self._links_scored += 1
        return self.relevance.link(self._page_relevance, url, text, self._links_scored)

    def _new(self, url: str) -> bool:
        """True for a canonical URL never met before that is neither blocked nor a trap."""
        if not self.seen.add(url):
            return False
        if self.order.blocked and self.order.blocked.blocks(url):
            self.report.blocked += 1
            log.info("%s: blocked by the order", url)
            return False
        trap = self.traps.check(url)
        if trap is not None:
            self.report.traps += 1
            log.info("%s: not followed: %s", url, trap)
            return False
        return True

    def _canonical(self, url: str) -> str | None:
        try:
            return canonical_url(url)
        except BadUrl as exc:
            self.report.error("invalid-url")
            log.info("invalid URL skipped: %s", exc)
            return None

    async def _visit(self, url: str, requisite: bool, page: bool = False) -> list[Link]:
        """Fetch and store one URL; the links found in it (a redirect's target among them). A
        fetch that failed for a reason that may pass is tried again later (retries.py)."""
        if not await self._robots.allowed(url):
            self.report.robots_excluded += 1
            return []
        asked = Retry(0.0, url, self._level, page, requisite)
        try:
            fetched = await self._download(url)
        except FetchError as exc:
            if exc.kind in RETRIED_ERRORS:
                self.retries.failed(asked, str(exc))
            return []
        try:
            if self.retries.retried(fetched.status) and self.retries.failed(
                asked, f"status {fetched.status}", fetched.header("retry-after")
            ):
                return []
            self.retries.answered(url)
            return await self._keep(fetched)
        finally:
            fetched.body.discard()

    async def _download(
        self,
        url: str,
        conditional: bool = True,
        method: str = "GET",
        body: bytes | None = None,
        fields: list[tuple[str, str]] | None = None,
    ) -> Fetched:
        """Fetch a URL (conditionally when the previous crawl has it); a FetchError is counted
        in the report, then raised."""
        assert self._fetcher is not None
        previous = self.previous.get(url) if conditional else None
        conditions = list(fields or ())
        if previous is not None and previous.etag:
            conditions.append(("If-None-Match", previous.etag))
        if previous is not None and previous.last_modified:
            conditions.append(("If-Modified-Since", previous.last_modified))
        self.progress.last.append(url)
        self.progress.fetched += 1
        try:
            fetched = await self._fetcher.fetch(url, conditions, method, body)
        except FetchError as exc:
            self.report.error(exc.kind)
            self.progress.errors += 1
            log.info("%s", exc)
            raise
        if self.order.politeness.delay and (delay := self._robots.delays.get(origin_of(url))):
            self._fetcher.set_delay(delay)
        return fetched

    async def _fetch_robots(self, url: str) -> Fetched | None:
        # Always in full: the rules must be read, and the file is small.
        try:
            fetched = await self._download(url, conditional=False)
        except FetchError:
            return None
        try:
            await self._keep(fetched, parse=False)
        except BaseException:
            fetched.body.discard()
            raise
        return fetched

    async def _keep(self, fetched: Fetched, parse: bool = True) -> list[Link]:
        """Store the capture; parse it for links when it is a document."""
        previous = self.previous.get(fetched.url)
        if fetched.status == 304 and previous is not None:
            return await self._not_modified(fetched, previous, parse)
        header = hashlib.sha256(fetched.header_block).hexdigest()
        self.report.bytes += fetched.size
        self.report.content_types[media_type(fetched.content_type) or "unknown"] += 1
        if fetched.sha256 in self.known:
            self.report.known_contents += 1
            self.report.known_by_level[self._level] += 1
        else:
            self.report.new_contents += 1
            self.report.new_by_level[self._level] += 1
        if fetched.truncated:
            self.report.error("too-large")
        if fetched.status >= 400:
            self.report.error(f"http-{fetched.status // 100}xx")
        signature = Signature(
            url=fetched.url,
            content=fetched.sha256,
            header=header,
            status=fetched.status,
            size=fetched.size,
            header_size=len(fetched.header_block),
            content_type=fetched.content_type or "",
            etag=fetched.header("etag") or "",
            last_modified=fetched.header("last-modified") or "",
        )
        signature = self._placed(signature)
        if signature.page and self.report.changes is not None:
            self.report.changes.page(signature.url, signature.content)
        flags = RecordFlag.TRUNCATED if fetched.truncated else RecordFlag.NONE
        await self._sink.add(
            signature.capture(fetched.time, flags=int(flags)),
            [(fetched.sha256, _kept(fetched.body)), (header, fetched.header_block)],
        )
        self._signatures.add(signature)
        if 300 <= fetched.status < 400:
            return self._redirect(fetched)
        if not parse or fetched.truncated:
            return []
        document = _decoded(fetched)
        result = self._parse(fetched.url, fetched.content_type, document)
        if (
            fetched.url == self._page_url
            and self.order.browser == "auto"
            and self.browser is not None
            and built_by_scripts(document[:HEAD], result.text)
        ):
            self._scripted.add(fetched.url)
            self._documents[fetched.url] = _for_browser(fetched, fetched.body.data)
        if fetched.url == self._page_url and (trap := self.near.check(fetched.url, result.text)):
            self.report.content_trap(trap, fetched.url)
            log.info("%s: its links are not followed: %s", fetched.url, trap)
            return []
        if fetched.url == self._page_url:
            links = self.apps.links(fetched.url, document, result.links, fetched.headers)
            self.report.application = self.apps.summary()
            return links
        return result.links

    def _placed(self, signature: Signature) -> Signature:
        """A signature with where this crawl met its URL: the level, and page or component
        (itself when the previous crawl met it there too, as a quick re-crawl mostly does)."""
        page = signature.url == self._page_url
        if signature.level == self._level and signature.page == page:
            return signature
        return dataclasses.replace(signature, level=self._level, page=page)

    async def _not_modified(self, fetched: Fetched, previous: Signature, parse: bool) -> list[Link]:
        """Record the unchanged capture; its links come from the archived copy, but in a quick
        re-crawl, which walks the previous crawl's URLs instead of reading them again."""
        self.report.not_modified += 1
        self.report.known_contents += 1
        self.report.known_by_level[self._level] += 1
        await self._sink.add(
            previous.capture(fetched.time, kind=RecordKind.NOT_MODIFIED.name.lower()), []
        )
        placed = self._placed(previous)
        self._signatures.add(placed)
        if placed.page and self.report.changes is not None:
            self.report.changes.page(placed.url, placed.content)
        if self.order.quick:
            for target in self._previous_links.get(placed.url, ()):
                self.report.graph.link(placed.url, target)
        if (
            not parse
            or self.order.quick
            or parsers.parser_for(previous.url, previous.content_type, b"") is None
        ):
            return []
        try:
            body = await self.client.get_content(previous.content)
        except DlwebError as exc:
            self.report.error("archive-read")
            log.info(
                "%s: archived copy unreadable, its links are not followed: %s", fetched.url, exc
            )
            return []
        try:
            block = parse_header_block(await self.client.get_content(previous.header))
        except DlwebError:
            encoding = None
        else:
            encoding = block.get("content-encoding")
        document = _document(body, encoding)
        return self._parse(previous.url, previous.content_type, document).links

    def _redirect(self, fetched: Fetched) -> list[Link]:
        location = fetched.header("location")
        if not location or not location.strip():
            self.report.error("broken-redirect")
            log.info("%s: redirect status %d without a Location", fetched.url, fetched.status)
            return []
        target = urljoin(fetched.url, location.strip())
        canonical = self._canonical(target)
        if canonical is None:
            self.report.error("broken-redirect")
            return []
        if canonical in self.seen:
            if canonical == fetched.url:
                self.report.error("redirect-loop")
            return []
        return [Link(canonical, LinkKind.COMPONENT, False, _REDIRECT)]

    def _parse(self, url: str, content_type: str | None, document: bytes) -> ParseResult:
        result = parsers.parse(url, content_type, document)
        if result is None:
            return ParseResult([])
        if result.problems:
            self.report.error("malformed")
            log.info("%s: %s", url, "; ".join(result.problems[:3]))
        chunks = self.report.text.add(result.text, self.order.keywords)
        if self.relevance is not None and url == self._page_url:
            self._page_relevance = self.relevance.page(url, result.text)
            self._links_scored = 0
            if self.report.relevance is not None:
                self.report.relevance.add(self._page_relevance.score)
        if self.report.changes is not None:
            self.report.changes.text(url, chunks)
        return result


# Marks the link a redirect produced, so it inherits its source's need to be fetched.
_REDIRECT = "\x00redirect"
# Marks a component of the previous crawl queued by a quick re-crawl (fetched, not a page).
_FORMER_COMPONENT = "\x00component"


class _Recent:
    """The responses served to the browser lately, by URL, within a bound on their bytes."""

    def __init__(self, capacity: int, largest: int) -> None:
        self.capacity = capacity
        self.largest = largest
        self.size = 0
        self._items: OrderedDict[str, BrowserResponse] = OrderedDict()

    def get(self, url: str) -> BrowserResponse | None:
        found = self._items.get(url)
        if found is not None:
            self._items.move_to_end(url)
        return found

    def put(self, url: str, response: BrowserResponse) -> None:
        if len(response.body) > self.largest or url in self._items:
            return
        self._items[url] = response
        self.size += len(response.body)
        while self.size > self.capacity:
            _, dropped = self._items.popitem(last=False)
            self.size -= len(dropped.body)


def _for_browser(fetched: Fetched, raw: bytes) -> BrowserResponse:
    """A fetched response as the browser gets it: its content coding undone, within
    MAX_BROWSER_BODY."""
    coding = fetched.header("content-encoding") or ""
    try:
        body = inflate(coding, raw, MAX_BROWSER_BODY)
    except (BadCoding, TooLarge):
        raise ServeError("content-coding") from None
    fields = [(k, v) for k, v in fetched.headers if k.lower() not in WIRE_FIELDS]
    return BrowserResponse(fetched.status, fetched.reason, fields, body)


def _kept(body: Body) -> Body:
    """The body handed to the sink, which now owns its spill file."""
    kept = Body(body.data, body.path)
    body.path = None
    return kept


def _decoded(fetched: Fetched) -> bytes:
    """The bytes a parser reads of a fetched document (see _document)."""
    return _document(b"".join(fetched.body.chunks()), fetched.header("content-encoding"))


def _document(body: bytes, coding: str | None) -> bytes:
    """The bytes a parser reads: the content coding undone, within MAX_PARSED; none when the
    coding is damaged or not one read here."""
    try:
        return inflate(coding or "", body, MAX_PARSED, whole=False, cut=True)
    except BadCoding:
        return b""
