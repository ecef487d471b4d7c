"""The feeds of the crawled sites, polled between their crawls: a feed whose bytes changed since
the crawl archived it brings its site's next crawl forward (the temporal policy's shortcut)."""

import asyncio
import hashlib
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from archive.errors import DlwebError
from archive.network import NETWORK_ERRORS
from archive.urlkey import BadUrl, canonical_url

from ..order import read_signatures
from .reports import existing_file
from .store import Site, Store

__all__ = ["FeedWatch"]

log = logging.getLogger(__name__)

FEED_TIMEOUT = 10.0
MAX_FEEDS = 5  # feeds polled per site


@dataclass(eq=False)
class FeedWatch:
    """The feeds of the idle sites, polled every `interval` seconds through the campaign's pinned
    addresses (`resolve`); `wake` tells the scheduler a site is due now."""

    store: Store
    resolve: Mapping[str, list[str]]
    interval: float
    wake: Callable[[], None]

    def remember(self, site: Site, report: Mapping[str, Any]) -> None:
        """The site's feeds, each with the SHA-256 of the copy the crawl archived: a poll that
        finds other bytes means the site has news."""
        feeds = [f for f in report.get("feeds", []) if isinstance(f, str)][:MAX_FEEDS]
        self.store.set_setting(f"feeds:{site.id}", "\n".join(feeds))
        signature_file = existing_file(str(report.get("signature_file", "")))
        if not feeds or signature_file is None:
            return
        try:
            archived = read_signatures(signature_file)
        except DlwebError as exc:
            log.warning("%s: %s", site.start_url, exc)
            return
        for url in feeds:
            try:
                signature = archived.get(canonical_url(url))
            except BadUrl:
                continue
            if signature is not None:
                self.store.set_setting(f"feed:{url}", signature.content)

    async def loop(self) -> None:
        """Polls the feeds every `interval`, until cancelled."""
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=FEED_TIMEOUT),
            auto_decompress=False,  # the bytes as sent, as the crawler hashed them
            connector=aiohttp.TCPConnector(resolver=_PinnedResolver(self.resolve)),
        ) as session:
            while True:
                await asyncio.sleep(self.interval)
                await self.poll(session)

    async def poll(self, session: aiohttp.ClientSession) -> list[int]:
        """Sites whose feeds changed since the last look: their next crawl is now."""
        brought_forward = []
        for site in self.store.sites(state="idle", limit=1_000_000):
            feeds = self.store.get_setting(f"feeds:{site.id}")
            for url in feeds.split("\n") if feeds else []:
                try:
                    async with session.get(url) as answer:
                        body = await answer.read()
                except NETWORK_ERRORS as exc:
                    log.info("feed %s: %s", url, exc)
                    continue
                digest = hashlib.sha256(body).hexdigest()
                key = f"feed:{url}"
                before = self.store.get_setting(key)
                self.store.set_setting(key, digest)
                if before and before != digest:
                    log.info("feed %s changed: %s is crawled again now", url, site.start_url)
                    self.store.set_state(site.id, "idle", next_crawl=time.time())
                    brought_forward.append(site.id)
                    break
        if brought_forward:
            self.wake()
        return brought_forward


class _PinnedResolver(AbstractResolver):
    """Host names the campaign pins to addresses (as the agents' --resolve), others by DNS."""

    def __init__(self, pinned: Mapping[str, list[str]]) -> None:
        self.pinned = {host.lower(): list(addresses) for host, addresses in pinned.items()}
        self.fallback = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = self.pinned.get(host.lower())
        if not addresses:
            return await self.fallback.resolve(host, port, family)
        return [
            ResolveResult(hostname=host, host=a, port=port, family=socket.AF_INET, proto=0, flags=0)
            for a in addresses
        ]

    async def close(self) -> None:
        await self.fallback.close()
