"""The API crawler's GETs: each host's rate limits obeyed (a 429's Retry-After, in seconds or as
an HTTP date; X-RateLimit-Remaining at 0 until X-RateLimit-Reset), answers bounded in size
(MAX_ANSWER), and every answer kept archived as received, so that a replayed GET of its URL
answers the same bytes. An answer that cannot be used (an HTTP error, a network failure, JSON
that does not parse, one too large, a wait longer than allowed) is skipped with one log line and
counted in the report by kind."""

import asyncio
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from archive.cluster import NewCapture
from archive.network import NETWORK_ERRORS

from ..feed_poll import PinnedResolver
from ..fetch import USER_AGENT
from ..storage import CaptureSink
from .rate_limits import limit_reset, retry_after

__all__ = ["MAX_ANSWER", "Answer", "ApiClient", "Tally", "api_session"]

log = logging.getLogger(__name__)

MAX_ANSWER = 8 * 2**20  # bytes; a larger answer is skipped
TIMEOUT = 30.0
READ_SIZE = 2**16
MAX_TRIES = 4  # requests of one URL answered 429 before it is skipped
DEFAULT_RETRY_AFTER = 60.0  # seconds, for a 429 that says nothing readable


@dataclass(frozen=True, slots=True)
class Answer:
    """A response as received: its status line and fields as sent (`block`) and its body."""

    url: str
    time: int  # microseconds since the epoch, when the response began
    status: int
    block: bytes
    headers: Mapping[str, str]
    body: bytes
    next_url: str = ""  # the Link header's rel="next"


@dataclass
class Tally:
    """What the GETs did: answers archived, waits obeyed, and the skipped ones by kind."""

    archived: int = 0
    throttled: int = 0  # 429s obeyed
    waited: float = 0.0  # seconds spent obeying rate limits
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, kind: str, message: str) -> None:
        self.skipped[kind] += 1
        log.warning("%s; skipped", message)


class TooLarge(Exception):
    """An answer larger than MAX_ANSWER."""


def api_session(resolve: Mapping[str, list[str]]) -> aiohttp.ClientSession:
    """A session that reads the bytes as sent, host names pinned by `resolve` (as --resolve)."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=TIMEOUT),
        auto_decompress=False,
        connector=aiohttp.TCPConnector(resolver=PinnedResolver(resolve)),
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
    )


class ApiClient:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        sink: CaptureSink,
        *,
        max_wait: float,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.session = session
        self.sink = sink
        self.max_wait = max_wait
        self.tally = Tally()
        self._sleep = sleep
        self._free_at: dict[str, float] = {}  # host: time.monotonic() its limit lifts

    async def get_json(self, url: str) -> tuple[Any, Answer] | None:
        """The JSON an API URL answers and the answer, archived; None when skipped."""
        answer = await self.get(url, "application/json")
        if answer is None:
            return None
        try:
            data = json.loads(answer.body)
        except (ValueError, RecursionError) as exc:
            self.tally.skip("bad-json", f"GET {url}: the answer is not JSON ({exc})")
            return None
        await self.archive(answer)
        return data, answer

    async def get_page(self, url: str) -> Answer | None:
        """A page (a post's own, a feed), its answer archived; None when skipped."""
        answer = await self.get(url, "*/*")
        if answer is not None:
            await self.archive(answer)
        return answer

    async def get(self, url: str, accept: str) -> Answer | None:
        """The answer of a GET once its host's rate limits allow it; None when skipped."""
        host = urlsplit(url).netloc.lower()
        for _ in range(MAX_TRIES):
            await self._wait_for(host)
            try:
                answer = await self._fetch(url, accept)
            except TooLarge:
                self.tally.skip("too-large", f"GET {url}: larger than {MAX_ANSWER} bytes")
                return None
            except (*NETWORK_ERRORS, ValueError) as exc:
                self.tally.skip("network", f"GET {url}: {exc or type(exc).__name__}")
                return None
            self._note_limit(host, answer)
            if answer.status != 429:
                break
            wait = retry_after(answer.headers.get("Retry-After"), time.time())
            wait = DEFAULT_RETRY_AFTER if wait is None else wait
            if wait > self.max_wait:
                self.tally.skip(
                    "rate-limited",
                    f"GET {url}: 429, Retry-After {wait:.0f} s is over the"
                    f" {self.max_wait:g} s allowed",
                )
                return None
            log.info("GET %s: 429, trying again in %.1f s", url, wait)
            self.tally.throttled += 1
            self._free_at[host] = max(self._free_at.get(host, 0.0), time.monotonic() + wait)
        else:
            self.tally.skip("rate-limited", f"GET {url}: still 429 after {MAX_TRIES} tries")
            return None
        if answer.status >= 400:
            self.tally.skip(f"http-{answer.status // 100}xx", f"GET {url}: HTTP {answer.status}")
            return None
        return answer

    async def archive(self, answer: Answer) -> None:
        """Queue the answer as a capture of its URL, body and header block as received."""
        content = hashlib.sha256(answer.body).hexdigest()
        header = hashlib.sha256(answer.block).hexdigest()
        capture = NewCapture(
            url=answer.url,
            time=answer.time,
            content=content,
            header=header,
            status=answer.status,
            size=len(answer.body),
            header_size=len(answer.block),
        )
        await self.sink.add(capture, [(content, answer.body), (header, answer.block)])
        self.tally.archived += 1

    def _note_limit(self, host: str, answer: Answer) -> None:
        """Keep the host's next request until X-RateLimit-Reset when none remains."""
        wait = limit_reset(answer.headers, time.time())
        if wait is None:
            return
        if wait > self.max_wait:
            log.warning(
                "%s: no request left until X-RateLimit-Reset, %.0f s away: waiting %g s",
                host,
                wait,
                self.max_wait,
            )
            wait = self.max_wait
        self._free_at[host] = max(self._free_at.get(host, 0.0), time.monotonic() + wait)

    async def _wait_for(self, host: str) -> None:
        wait = self._free_at.pop(host, 0.0) - time.monotonic()
        if wait > 0:
            self.tally.waited += wait
            await self._sleep(wait)

    async def _fetch(self, url: str, accept: str) -> Answer:
        async with self.session.get(
            url, headers={"Accept": accept}, allow_redirects=False
        ) as response:
            captured = time.time_ns() // 1000
            if (response.content_length or 0) > MAX_ANSWER:
                raise TooLarge
            chunks, size = [], 0
            async for chunk in response.content.iter_chunked(READ_SIZE):
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise TooLarge
                chunks.append(chunk)
            version = response.version or aiohttp.HttpVersion11
            protocol = f"HTTP/{version.major}.{version.minor}"
            status_line = f"{protocol} {response.status} {response.reason or ''}".rstrip()
            block = b"".join(
                [status_line.encode("latin-1", "replace") + b"\r\n"]
                + [name + b": " + value + b"\r\n" for name, value in response.raw_headers]
                + [b"\r\n"]
            )
            following = response.links.get("next")
            return Answer(
                url=url,
                time=captured,
                status=response.status,
                block=block,
                headers=response.headers,
                body=b"".join(chunks),
                next_url=str(following.get("url", "")) if following is not None else "",
            )
