"""Replaying a capture: the archived status, headers and payload, with Memento headers."""

import asyncio
from dataclasses import dataclass
from urllib.parse import quote

from archive.cache import Lru
from archive.cluster import ClusterClient, Found
from archive.errors import DlwebError, NotFound
from archive.header_block import parse_header_block
from archive.structure import Capture
from archive.timestamps import format_http_date

# Hop-by-hop and framing headers belong to the archived connection, not to this one; the length
# is that of the payload as stored (chunked encoding removed).
NOT_REPLAYED = frozenset(
    {
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "content-length",
    }
)
TIMEMAP = "http://captures.dlweb/?format=link&url="
MADE_OVERHEAD = 1024  # what a kept response weighs beside its body


class ArchiveFault(DlwebError):
    """The URL is archived but a file it needs cannot be read (500, not 404)."""


@dataclass
class Replayed:
    status: int
    fields: list[tuple[bytes, bytes]]  # the headers to send, encoded once
    body: bytes
    capture: Capture


class Replayer:
    """Replays captures, keeping the responses it made for as long as the cluster client keeps
    structure answers, so that a hot page is sent without being made again."""

    def __init__(self, client: ClusterClient, cache_bytes: int = 64 * 1024 * 1024) -> None:
        self.client = client
        ttl = client.cache.answers.ttl if client.cache is not None else None
        self._made: Lru[tuple[str, int], Replayed] = Lru(cache_bytes if ttl else 0, ttl)

    async def replay(self, url: str, at: int) -> Replayed:
        made = self._made.get((url, at))
        if made is None:
            made = await replay(self.client, url, at)
            self._made.put((url, at), made, len(made.body) + MADE_OVERHEAD)
        return made


async def replay(client: ClusterClient, url: str, at: int) -> Replayed:
    """The capture of `url` closest to `at`, ready to send; NotFound when the URL is not
    archived, ArchiveFault when its files cannot be read."""
    found = await client.closest(url, at, "closest")
    capture = found.capture
    try:
        block, body = await asyncio.gather(
            client.get_header_block(capture.header), client.get_content(capture.content)
        )
        archived = parse_header_block(block, f"header block {capture.header}")
    except NotFound as exc:
        raise ArchiveFault(str(exc)) from None
    except DlwebError as exc:
        raise ArchiveFault(str(exc)) from None
    headers = [(k, v) for k, v in archived.headers if k.lower() not in NOT_REPLAYED]
    headers.extend(memento_headers(url, found))
    return Replayed(archived.status, encoded(headers), body, capture)


def encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def memento_headers(url: str, found: Found) -> list[tuple[str, str]]:
    """RFC 7089 headers of a memento served in proxy mode, where the original URL is also its
    own time gate (the date comes with Accept-Datetime or the client's date harbor)."""
    links = [
        f'<{url}>; rel="original"',
        f'<{url}>; rel="timegate"',
        f'<{TIMEMAP}{quote(url, safe="")}>; rel="timemap"; type="application/link-format"',
    ]
    for key in ("first", "last", "prev", "next"):
        other = found.neighbours.get(key)
        if other is not None:
            links.append(f'<{url}>; rel="{key} memento"; datetime="{format_http_date(other.time)}"')
    links.append(f'<{url}>; rel="memento"; datetime="{format_http_date(found.capture.time)}"')
    return [
        ("Memento-Datetime", format_http_date(found.capture.time)),
        ("Link", ", ".join(links)),
        ("Vary", "accept-datetime"),
    ]
