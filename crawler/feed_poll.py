"""Polling feeds for change: each feed fetched through the campaign's pinned addresses (as the
agents' --resolve) and its bytes, as sent, hashed with SHA-256; a feed whose hash is not the one
known has changed. The scheduler polls this way while no feed aggregator is connected
(crawler/scheduler/feeds.py), and feed aggregators do (crawler/feed_aggregator.py)."""

import hashlib
import logging
import socket
from collections.abc import Mapping

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from archive.network import NETWORK_ERRORS

__all__ = ["FEED_TIMEOUT", "MAX_FEED_BYTES", "PinnedResolver", "feed_session", "poll_feeds"]

log = logging.getLogger(__name__)

FEED_TIMEOUT = 10.0
MAX_FEED_BYTES = 32 * 2**20  # a larger feed is not polled
READ_SIZE = 2**16


def feed_session(resolve: Mapping[str, list[str]]) -> aiohttp.ClientSession:
    """A session that fetches the bytes as sent (as the crawler hashed them), host names pinned
    by `resolve` to their addresses."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=FEED_TIMEOUT),
        auto_decompress=False,
        connector=aiohttp.TCPConnector(resolver=PinnedResolver(resolve)),
    )


async def poll_feeds(session: aiohttp.ClientSession, feeds: Mapping[str, str]) -> dict[str, str]:
    """The feeds (URL: SHA-256 known, "" for none) whose bytes have another SHA-256 now, with
    it; a feed that cannot be fetched, or is larger than MAX_FEED_BYTES, is left out."""
    changed = {}
    for url, known in feeds.items():
        digest = await _digest(session, url)
        if digest is not None and digest != known:
            changed[url] = digest
    return changed


async def _digest(session: aiohttp.ClientSession, url: str) -> str | None:
    sha = hashlib.sha256()
    size = 0
    try:
        async with session.get(url) as answer:
            async for chunk in answer.content.iter_chunked(READ_SIZE):
                size += len(chunk)
                if size > MAX_FEED_BYTES:
                    log.info("feed %s: larger than %d bytes, not polled", url, MAX_FEED_BYTES)
                    return None
                sha.update(chunk)
    except NETWORK_ERRORS as exc:
        log.info("feed %s: %s", url, exc)
        return None
    except ValueError as exc:  # a URL aiohttp cannot fetch
        log.info("feed %s: %s", url, exc)
        return None
    return sha.hexdigest()


class PinnedResolver(AbstractResolver):
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
