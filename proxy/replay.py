"""The replay addon: each request answered from the capture the archive holds for it.

The capture is found and read by archive.reading (exact key, method and body folded in, fuzzy
fallback, self-redirects passed over). Its archived status and headers go back unchanged, with
Memento headers, `Accept-Ranges` and, for a fuzzy match, `X-Dlweb-Match`. A small body is sent
from memory (ranges cut from it); a large one is streamed from its storage node
(proxy/large_bodies.py). A URL the archive lacks gets a fault content, or, for a client that turned
live mode on where the operator allows it, the live web; a capture that cannot be read, such as
a revisit whose original is not archived yet, a fault content of status 500 that says why. The
flow keeps what was served (SERVED) or that nothing was (MISSED), for the banner (banner_addon.py).
"""

import asyncio
import logging
from dataclasses import InitVar, dataclass, field, replace

from mitmproxy import http

import harbors
from archive.archival_urls import ArchivalUrls
from archive.cache import Lru
from archive.cluster import LargeContent
from archive.content_coding import BadCoding, TooLarge, inflate
from archive.errors import DlwebError, NotFound, clipped
from archive.ranges import RangeNotSatisfiable, unsatisfied_range
from archive.reading import CaptureQuery, CaptureReader, PendingRevisit, Reading
from archive.streams import PLAYLIST_TYPES
from archive.structure import RecordKind
from archive.tasks import Background
from archive.timestamps import format_iso

from .dates import AT
from .faults import fault
from .guard import client_of
from .large_bodies import STREAMED, LargeBody, node_answered, node_failed, send_to_node
from .mementos import accepts, archived_headers, memento_headers, memento_span
from .responses import encoded, made
from .stream_play import StreamPlayback

log = logging.getLogger(__name__)

MADE_OVERHEAD = 1024  # what a kept answer weighs beside its body
MAX_DECODED = 64 * 1024 * 1024  # a body decoded for a client that does not take its coding
LIVE = "dlweb-live"
MADE = "dlweb-made"  # the key of the answer a streamed replay was made from
SERVED = "dlweb-served"  # the ReadyCapture capture a request was answered from
MISSED = "dlweb-missed"  # set when a request got 404: the archive has no capture of it
PREFLIGHT_HEADERS = ("Access-Control-Request-Method", "Origin")


@dataclass(frozen=True)
class ReadyCapture:
    """A capture ready to send: archived status, the headers to send (encoded once), the body
    or where to stream it from, and the capture's date."""

    status: int
    fields: list[tuple[bytes, bytes]]
    body: bytes | LargeContent
    time: int
    etag: str | None
    last_modified: str | None
    stream_url: str | None = None  # the URL of a recorded stream it may be (stream_play.py)
    previous: int | None = None  # the dates of the URL's captures before and after this one
    following: int | None = None


@dataclass(eq=False, repr=False)
class Replay:
    """Answers every request that no addon before it answered, from the archive."""

    reader: CaptureReader
    settings: harbors.ClientSettings
    streams: StreamPlayback
    live_allowed: bool = False
    log_requests: bool = False
    urls: ArchivalUrls | None = None  # the direct front's, when it runs: each capture's URI-M
    cache_bytes: InitVar[int] = 64 * 1024 * 1024
    # Answers made, for as long as the cluster client keeps structure answers: a hot page
    # is sent without being made again.
    _made: Lru[tuple[str, int], ReadyCapture] = field(init=False)
    # The same, decoded for clients that do not take the archived content coding.
    _decoded: Lru[tuple[str, int], ReadyCapture] = field(init=False)
    _reports: Background = field(init=False, default_factory=Background)

    def __post_init__(self, cache_bytes: int) -> None:
        cache = self.reader.client.cache
        ttl = cache.answers.ttl if cache is not None else None
        self._made = Lru(cache_bytes if ttl else 0, ttl)
        self._decoded = Lru(cache_bytes // 4 if ttl else 0, ttl)

    async def request(self, flow: http.HTTPFlow) -> None:
        at = flow.metadata.get(AT)
        if flow.response is not None or not isinstance(at, int):
            return
        request = flow.request
        asked = CaptureQuery(
            request.pretty_url,
            at,
            request.method,
            request.headers.get("content-type"),
            request.raw_content or b"",
        )
        accept = request.headers.get("accept", "")
        flow.metadata[MADE] = (asked.key, asked.at)
        try:
            prepared = await self._prepared(asked)
        except NotFound as exc:
            self._log_missing(flow, exc)
            if request.method == "OPTIONS" and all(h in request.headers for h in PREFLIGHT_HEADERS):
                flow.response = _preflight(request)
            elif self.live_allowed and self.settings.get(client_of(flow)).live:
                flow.metadata[LIVE] = True  # left to mitmproxy, which fetches it from the web
            else:
                flow.response = _fault(404, asked.url, accept, "it was never captured")
                flow.metadata[MISSED] = True
            return
        except PendingRevisit as exc:
            log.info("cannot replay %s: %s", clipped(asked.url), exc)
            reason = "the capture is a revisit whose original is not archived yet"
            flow.response = _fault(500, asked.url, accept, reason)
            return
        except DlwebError as exc:  # ArchiveFault, or no lookup answered (ClusterError)
            log.warning("cannot replay %s: %s", clipped(asked.url), exc)
            flow.response = _fault(500, asked.url, accept, "the archive cannot read it now")
            return
        if prepared.stream_url is not None and await self._play(
            flow, prepared.stream_url, at, prepared
        ):
            return
        prepared = await self._for_client(flow, prepared)
        self._send(flow, prepared)
        flow.metadata[SERVED] = prepared
        if self.log_requests:
            log.info(
                "replayed %s %s %s: %d, capture of %s",
                client_of(flow),
                clipped(request.method, 20),
                clipped(asked.url),
                prepared.status,
                format_iso(prepared.time),
            )

    async def _play(self, flow: http.HTTPFlow, url: str, at: int, prepared: ReadyCapture) -> bool:
        """Play a recorded stream from the date; False when `url` holds none."""
        try:
            return await self.streams.play(flow, url, at, prepared.fields)
        except DlwebError as exc:
            log.warning("cannot play the stream %s: %s", clipped(url), exc)
            flow.response = _fault(500, url, "", "the archive cannot read it now")
            return True

    def done(self) -> None:
        self._reports.cancel()

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        node_answered(flow)
        self.streams.responseheaders(flow)

    def response(self, flow: http.HTTPFlow) -> None:
        if flow.response is None:
            return
        if flow.metadata.get(LIVE):
            flow.response.headers["X-Dlweb-Live"] = "fetched from the live web, not archived"
            return
        streamed = flow.metadata.get(STREAMED)
        if not isinstance(streamed, LargeBody):
            return
        if streamed.bad:
            self._made.drop(flow.metadata[MADE])
            flow.kill()  # type: ignore[no-untyped-call]
            # Told on its own: the node re-hashes the whole content before it answers.
            report = self.reader.client.report_bad(streamed.held.address, streamed.held.name)
            self._reports.spawn(report)
        elif node_failed(flow):
            self._made.drop(flow.metadata[MADE])
            log.warning(
                "cannot stream %s: %s answered %d for content %s",
                clipped(streamed.url),
                streamed.held.address,
                flow.response.status_code,
                streamed.held.name,
            )
            flow.response = _fault(500, streamed.url, "", "the archive cannot read it now")

    async def _prepared(self, asked: CaptureQuery) -> ReadyCapture:
        key = (asked.key, asked.at)
        prepared = self._made.get(key)
        if prepared is None:
            prepared = _prepare(asked.url, await self.reader.read(asked), self.urls)
            body = prepared.body
            self._made.put(
                key, prepared, MADE_OVERHEAD + (len(body) if isinstance(body, bytes) else 0)
            )
        return prepared

    async def _for_client(self, flow: http.HTTPFlow, prepared: ReadyCapture) -> ReadyCapture:
        """The capture as this client can read it: a body in a content coding its
        Accept-Encoding leaves out (Brotli to a browser over plain HTTP, any coding to a client
        that asks for identity) decoded, within MAX_DECODED, on a thread (the other clients are
        answered meanwhile); as archived otherwise, or when it cannot be decoded."""
        coding = next((v for k, v in prepared.fields if k.lower() == b"content-encoding"), None)
        if coding is None or not isinstance(prepared.body, bytes):
            return prepared
        name = coding.decode("latin-1")
        if accepts(flow.request.headers.get("accept-encoding"), name):
            return prepared
        key = flow.metadata[MADE]
        decoded = self._decoded.get(key)
        if decoded is None:
            try:
                body = await asyncio.to_thread(inflate, name, prepared.body, MAX_DECODED)
            except (BadCoding, TooLarge) as exc:
                log.info("%s sent as archived: %s", clipped(flow.request.pretty_url), exc)
                return prepared
            fields = [(k, v) for k, v in prepared.fields if k.lower() != b"content-encoding"]
            decoded = replace(prepared, fields=fields, body=body)
            self._decoded.put(key, decoded, MADE_OVERHEAD + len(body))
        return decoded

    def _send(self, flow: http.HTTPFlow, prepared: ReadyCapture) -> None:
        """Answer from memory, or send the request on to the node that streams the body."""
        request = flow.request
        size = prepared.body.size if isinstance(prepared.body, LargeContent) else len(prepared.body)
        try:
            span = memento_span(
                request.headers, prepared.status, size, prepared.etag, prepared.last_modified
            )
        except RangeNotSatisfiable:
            flow.response = made(416, prepared.fields, b"", 0)
            flow.response.headers["Content-Range"] = unsatisfied_range(size)
            return
        if isinstance(prepared.body, LargeContent) and request.method != "HEAD":
            streamed = LargeBody(
                request.pretty_url, prepared.body, prepared.status, prepared.fields, span
            )
            send_to_node(flow, streamed)
            return
        status, length = prepared.status, size
        if span is not None:
            status, length = 206, span.length
        body = b""
        if request.method != "HEAD" and isinstance(prepared.body, bytes):
            body = prepared.body if span is None else prepared.body[span.start : span.end + 1]
        flow.response = made(status, prepared.fields, body, length)
        if span is not None:
            flow.response.headers["Content-Range"] = span.content_range(size)

    def _log_missing(self, flow: http.HTTPFlow, exc: NotFound) -> None:
        if self.log_requests:
            log.info(
                "not archived %s %s %s",
                client_of(flow),
                clipped(flow.request.method, 20),
                clipped(flow.request.pretty_url),
            )
        else:
            log.debug("not archived: %s", exc)


def _prepare(url: str, reading: Reading, urls: ArchivalUrls | None) -> ReadyCapture:
    header = reading.header
    headers = archived_headers(url, header)
    headers.extend(memento_headers(url, reading.found, urls))
    headers.append(("Accept-Ranges", "bytes"))
    if reading.fuzzy is not None:
        headers.append(("X-Dlweb-Match", f"fuzzy; url={reading.key}; rule={reading.fuzzy.rule}"))
    media = (header.get("Content-Type") or "").split(";")[0].strip().lower()
    stream = reading.capture.kind is RecordKind.STREAM_SEGMENT or media in PLAYLIST_TYPES
    previous, following = (reading.found.neighbours.get(key) for key in ("prev", "next"))
    return ReadyCapture(
        header.status,
        encoded(headers),
        reading.body,
        reading.capture.time,
        header.get("ETag"),
        header.get("Last-Modified"),
        reading.key if stream else None,
        None if previous is None else previous.time,
        None if following is None else following.time,
    )


def _preflight(request: http.Request) -> http.Response:
    """The answer to a CORS preflight the archive holds no capture of: what the browser asks
    for is allowed, so that the archived request it precedes can be replayed."""
    headers = {
        "Access-Control-Allow-Origin": request.headers["Origin"],
        "Access-Control-Allow-Methods": request.headers["Access-Control-Request-Method"],
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Max-Age": "600",
        "Vary": "Origin",
    }
    wanted = request.headers.get("Access-Control-Request-Headers")
    if wanted:
        headers["Access-Control-Allow-Headers"] = wanted
    return http.Response.make(204, b"", headers)


def _fault(status: int, url: str, accept: str, reason: str) -> http.Response:
    body, content_type = fault(status, url, accept, reason)
    return http.Response.make(status, body, {"Content-Type": content_type})
