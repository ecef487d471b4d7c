"""Reading one capture as a browser asked for it: for the proxy, the harbors and `dlweb get`.

The lookup goes, in order:
1. the request's key: its URL, with the method and body folded in for a method other than GET
   and HEAD (`archive/requestkey.py`), as the importer and the crawler stored it;
2. when nothing has that key, the fuzzy fallback: the URLs of its path with other queries
   (variant records, `archive/variants.py`), nearest first, matched by the rules of
   `archive/fuzzy.py`;
3. a redirect to the request's own URL (ignoring the scheme and a trailing slash) is passed over
   for the nearest capture that is not one, so that replay never loops on it.
A revisit whose original is not archived yet is found like any capture but cannot be read: it is
answered with PendingRevisit, a fault that says so.
A body of at most STREAMED_OVER bytes is read whole and verified; a larger one is left held, for
the caller to stream (`ClusterClient.stream_content`), so that no large content is ever in memory.
"""

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urljoin

from .cache import Lru
from .cluster import ClusterClient, FoundCapture, LargeContent
from .errors import DlwebError, NotFound, ServerFault
from .fuzzy import FuzzyMatch, FuzzyRules
from .header_block import HeaderBlock, parse_header_block
from .ranges import ByteRange
from .requestkey import lookup_url
from .structure import Capture, RecordKind
from .timestamps import format_iso
from .urlkey import canonical_url, structure_name

log = logging.getLogger(__name__)

STREAMED_OVER = 1024 * 1024
# Candidate URLs whose structure files are read at once to learn their URLs.
CANDIDATES_AT_ONCE = 16
# Structure files never change the URL they hold: their names' URLs are kept this many.
KNOWN_URLS = 100_000


class ArchiveFault(ServerFault):
    """The URL is archived but a file it needs cannot be read (500, not 404)."""


class PendingRevisit(ArchiveFault):
    """The capture is a revisit whose original is not archived yet (exchange/pending.py):
    it cannot be replayed until an import brings the original."""


@dataclass(frozen=True)
class CaptureQuery:
    """What a reader asks for: a URL at a date, and for other methods than GET its body."""

    url: str
    at: int
    method: str = "GET"
    content_type: str | None = None
    body: bytes = b""

    @functools.cached_property
    def key(self) -> str:
        """The URL the capture asked for is stored under."""
        return lookup_url(self.method, self.url, self.content_type, self.body)


class _Head(NamedTuple):
    """A capture's header block as stored, and parsed."""

    block: bytes
    header: HeaderBlock


@dataclass(frozen=True)
class Reading:
    """A capture found for a request: the URL it was stored under, its record, its archived
    status and headers, and its body (whole, or held to be streamed)."""

    key: str
    found: FoundCapture
    header: HeaderBlock
    block: bytes  # the header block as stored, which `header` parses
    body: bytes | LargeContent
    fuzzy: FuzzyMatch | None = None

    @property
    def capture(self) -> Capture:
        return self.found.capture

    @property
    def size(self) -> int:
        return self.body.size if isinstance(self.body, LargeContent) else len(self.body)


class CaptureReader:
    """Finds and reads captures as `archive/reading.py` says, for one cluster client."""

    def __init__(self, client: ClusterClient, rules: FuzzyRules | None = None) -> None:
        """Read through `client`, matching by `rules` (by default, the built-in ones and the
        file its configuration names: ConfigError at once when that file is bad)."""
        self.client = client
        if rules is None:
            extra = client.config.consultation.fuzzy_rules
            rules = FuzzyRules.load(None if extra is None else Path(extra))
        self.rules = rules
        self._urls: Lru[str, str] = Lru(KNOWN_URLS)

    async def read(self, asked: CaptureQuery) -> Reading:
        """The capture a request gets; NotFound when none, ArchiveFault when its files cannot
        be read."""
        key, found, head, fuzzy = await self.find(asked)
        return await self.reading(key, found, head, fuzzy)

    async def read_at(self, url: str, at: int, mode: str) -> Reading:
        """The capture of exactly `url` before, after, closest to or exactly at `at`."""
        found = _replayable(await self.client.closest(url, at, mode), url)
        return await self.reading(url, found, await self._head(found), None)

    async def reading(
        self, key: str, found: FoundCapture, head: "_Head", fuzzy: FuzzyMatch | None
    ) -> Reading:
        """The capture `find` gave, read: for a caller that looks at it before its body."""
        try:
            body = await self.client.content_or_holder(found.capture.content, STREAMED_OVER)
        except DlwebError as exc:
            raise ArchiveFault(str(exc)) from None
        return Reading(key, found, head.header, head.block, body, fuzzy)

    async def whole_body(self, reading: Reading) -> bytes:
        """A reading's body in memory, read from its node when it was held (the caller bounds
        the size)."""
        if isinstance(reading.body, bytes):
            return reading.body
        return b"".join([piece async for piece in self.pieces(reading)])

    async def pieces(self, reading: Reading, span: ByteRange | None = None) -> AsyncIterator[bytes]:
        """A reading's body, or the bytes of `span` in it, as they arrive (a held body read from
        its node over that span only, verified when whole); ArchiveFault when it cannot be read."""
        if isinstance(reading.body, bytes):
            yield reading.body if span is None else reading.body[span.start : span.end + 1]
            return
        first, last = (0, None) if span is None else (span.start, span.end)
        try:
            async for piece in self.client.stream_content(reading.body, first, last):
                yield piece
        except DlwebError as exc:
            raise ArchiveFault(str(exc)) from None

    async def find(
        self, asked: CaptureQuery
    ) -> tuple[str, FoundCapture, "_Head", FuzzyMatch | None]:
        """The key a request's capture is under, the capture, its header block, and the fuzzy
        match that chose it (None for an exact one)."""
        key, fuzzy = asked.key, None
        try:
            found = await self.client.closest(key, asked.at)
        except NotFound:
            matched = await self._fuzzy(key, asked.at)
            if matched is None:
                raise
            fuzzy, found = matched
            key = fuzzy.url
            log.info("fuzzy match for %s: %s (%s)", asked.url, key, fuzzy.rule)
        head = await self._head(_replayable(found, key))
        if _redirects_to(head.header, found.url or key, asked.url):
            found, head = await self._not_to_itself(key, asked, found)
        return key, found, head, fuzzy

    async def _head(self, found: FoundCapture) -> "_Head":
        name = found.capture.header
        try:
            block = await self.client.get_header_block(name)
            return _Head(block, parse_header_block(block, f"header block {name}"))
        except DlwebError as exc:
            raise ArchiveFault(str(exc)) from None

    async def _fuzzy(self, key: str, at: int) -> tuple[FuzzyMatch, FoundCapture] | None:
        """The capture of the URL of `key`'s path that the rules match, nearest to `at`."""
        names = await self.client.variants(key, at)
        if not names:
            return None
        gate = asyncio.Semaphore(CANDIDATES_AT_ONCE)
        looked_up: dict[str, FoundCapture] = {}  # the captures read to learn their URLs

        async def url_of(name: str) -> str | None:
            if (known := self._urls.get(name)) is not None:
                return known
            async with gate:
                try:
                    found = await self.client.closest_in(name, f"structure {name}", at)
                except DlwebError:
                    return None
            self._urls.put(name, found.url)
            looked_up[found.url] = found
            return found.url

        urls = [url for url in await asyncio.gather(*map(url_of, names)) if url]
        match = self.rules.match(key, urls)
        if match is None:
            return None
        found = looked_up.get(match.url)
        if found is None:
            found = await self.client.closest_in(structure_name(match.url), match.url, at)
        return match, found

    async def _not_to_itself(
        self, key: str, asked: CaptureQuery, found: FoundCapture
    ) -> tuple[FoundCapture, "_Head"]:
        """The capture nearest to the date that does not redirect to the request's URL."""
        others = [c for c in await self.client.captures(key) if c != found.capture]
        others.sort(key=lambda capture: abs(capture.time - asked.at))
        for capture in others:
            other = FoundCapture(capture, found.node, {}, found.url)
            head = await self._head(other)
            if not _redirects_to(head.header, found.url or key, asked.url):
                return other, head
        raise NotFound(f"every capture of {asked.url} redirects to itself")


def _replayable(found: FoundCapture, url: str) -> FoundCapture:
    """The capture found, unless it is a pending revisit (PendingRevisit)."""
    capture = found.capture
    if capture.kind is RecordKind.PENDING:
        raise PendingRevisit(
            f"the capture of {url} at {format_iso(capture.time)} is a revisit whose original"
            " is not archived yet"
        )
    return found


def _redirects_to(header: HeaderBlock, base: str, url: str) -> bool:
    """True when a 3xx response's Location, resolved against `base`, is `url` itself, but for
    the scheme and a trailing slash."""
    if not 300 <= header.status < 400:
        return False
    location = header.get("Location")
    if not location:
        return False
    return _same_page(urljoin(base, location.strip())) == _same_page(url)


def _same_page(url: str) -> str:
    """A URL's canonical form without its scheme and trailing slash."""
    try:
        canonical = canonical_url(url)
    except DlwebError:
        canonical = url
    return canonical.partition("://")[2].rstrip("/")
