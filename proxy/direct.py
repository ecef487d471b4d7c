"""The direct front: the archive at pywb's archival URLs (archive/archival_urls.py), for a client
that sets no proxy: a link in a paper, cdx-toolkit's `wb=` fetches, Memento clients.

A memento is its archived status, headers and bytes, never rewritten (a page's relative links
stay within the front, its absolute ones lead to the live web), or the range of them a `Range`
field asks for, as the proxy answers one (proxy/mementos.py). When the front's banner is on
(DirectOptions), a browser's load of an HTML page at `{ts}/{url}`, browser mode, gets the
proxy's bar atop it, as the proxy puts it (proxy/banner_addon.py); `id_` and the other modifiers
answer the bytes as they are. `{ts}{modifier}/{url}` answers the capture closest to the time,
after a redirect to its exact 14-digit timestamp when the time asked is not that, as pywb does;
the URL alone is its TimeGate (Accept-Datetime, else the latest capture); the TimeMaps and `/cdx`
are those of the proxy's harbors, with their header fields. It runs in the proxy's process, on a
port of its own, with the proxy's reader and cache, its client networks, its users (Basic
authentication where the proxy asks for proxy authentication) and its limits on a request's
head and its wait; it answers GET and HEAD only.
"""

import logging
import os
from dataclasses import dataclass
from urllib.parse import parse_qsl

from aiohttp import BasicAuth, web
from passlib.apache import HtpasswdFile

import harbors
from archive.archival_urls import ArchivalUrls, Cdx, Memento, TimeGate, TimeMap, parse
from archive.connections import app_runner
from archive.errors import ClientFault, DlwebError, NotFound
from archive.header_block import media_type
from archive.link_format import LINK_FORMAT, timemap
from archive.ranges import RangeNotSatisfiable, unsatisfied_range
from archive.reading import CaptureQuery, CaptureReader, Reading
from archive.serving import status_of
from archive.timestamps import MAX_TIME, format_digits, parse_http_date, parse_time
from harbors.banner import BarLinks, linked_bar

from .access import Access
from .banner_addon import navigation, shown, with_bar
from .mementos import archived_headers, memento_headers, memento_span

__all__ = ["DirectFront", "DirectOptions"]

log = logging.getLogger(__name__)

READ_ONLY = ("GET", "HEAD")
AUTHENTICATE = ("WWW-Authenticate", 'Basic realm="dlweb"')
CDX_FORMATS = {"json": "json", "cdxj": "cdxj"}  # TimeMap format -> the CDX output giving it
Fields = list[tuple[str, str]]


@dataclass(frozen=True)
class DirectOptions:
    """The front: where it listens (port 0: any free one), the addresses it gives captures, and
    whether a browser's HTML pages get the bar.

    The bar is the operator's choice for the whole front (`--direct-banner`), not each client's
    harbor setting (date.dlweb/set?banner=on): a client of the front sets no proxy, so it never
    reaches the date harbor that changes its setting; clients behind one reverse proxy share the
    address the settings are kept under; and the proxy's bar links to harbors only the proxy
    answers, where the front's links to its own URI-Ms."""

    host: str
    port: int
    urls: ArchivalUrls
    banner: bool = False


@dataclass(eq=False)
class DirectFront:
    """The front's handlers, over the proxy's reader and harbors."""

    reader: CaptureReader
    options: DirectOptions
    access: Access
    harbors: harbors.HarborContext  # for the CDX API and the TimeMaps in CDX formats
    users: HtpasswdFile | None = None  # the proxy's --auth file: then a user and password
    _runner: web.AppRunner | None = None

    @property
    def urls(self) -> ArchivalUrls:
        return self.options.urls

    async def start(self) -> int:
        """Listen where the options say; the port listened on. DlwebError naming the address
        when it cannot, with nothing left open."""
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self.handle)
        self._runner = app_runner(app, self.reader.client.config.http)
        await self._runner.setup()
        host, port = self.options.host, self.options.port
        try:
            await web.TCPSite(self._runner, host, port).start()
        except OSError as exc:
            await self.close()
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise DlwebError(f"the direct front cannot listen on {host}:{port}: {why}") from None
        bound: int = self._runner.addresses[0][1]
        log.info("dlweb direct front listening on %s:%d, at %s/", host, bound, self.urls.root)
        return bound

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self.access.allows(request.remote or ""):
            return _text(403, "this address may not use the archive")
        if self.users is not None and not _signed_in(self.users, request):
            return _text(401, "give a user name and password", AUTHENTICATE)
        if request.method not in READ_ONLY:
            return _text(405, "the archive is read-only: GET or HEAD", ("Allow", "GET, HEAD"))
        try:
            collection, asked = parse(request.raw_path, (self.urls.collection,))
            if isinstance(asked, Cdx):
                query = tuple(parse_qsl(request.query_string, keep_blank_values=True))
                return await self._harbor(request, query)
            if isinstance(asked, TimeMap):
                return await self._timemap(request, asked)
            if isinstance(asked, TimeGate):
                return await self._timegate(request, asked)
            return await self._memento(request, asked)
        except DlwebError as exc:
            status = status_of(exc)
            if not isinstance(exc, ClientFault):
                log.warning("direct front: %s %s: %s", request.method, request.path[:200], exc)
            return _text(status, exc.reason if status < 500 else "the archive cannot read it now")

    async def _harbor(
        self, request: web.Request, query: tuple[tuple[str, str], ...]
    ) -> web.Response:
        asked = harbors.HarborRequest(request.remote or "", "GET", "api.dlweb", "/cdx", query)
        answer = await harbors.answer(self.harbors, asked)
        return web.Response(
            status=answer.status,
            body=b"" if request.method == "HEAD" else answer.body,
            headers=answer.all_headers(),
        )

    async def _timemap(self, request: web.Request, asked: TimeMap) -> web.Response:
        if asked.format in CDX_FORMATS:
            query = (("url", asked.url), ("output", CDX_FORMATS[asked.format]))
            return await self._harbor(request, query)
        captures = await self.reader.client.captures(asked.url)
        if not captures:
            raise NotFound(f"no capture of {asked.url}")
        listed = timemap(
            asked.url,
            [capture.time for capture in captures],
            self.urls.timemap(asked.url),
            self.urls.timegate(asked.url),
            lambda time: self.urls.memento(asked.url, time),
            ends_marked=False,
        )
        return web.Response(
            body=b"" if request.method == "HEAD" else listed.encode(),
            headers={"Content-Type": LINK_FORMAT},
        )

    async def _timegate(self, request: web.Request, asked: TimeGate) -> web.Response:
        wanted = request.headers.get("Accept-Datetime")
        at = MAX_TIME if wanted is None else parse_http_date(wanted)
        _, found, _, _ = await self.reader.find(CaptureQuery(asked.url, at))
        links = memento_headers(asked.url, found, self.urls, proxied=False)
        return web.Response(
            status=302,
            headers=[
                ("Location", self.urls.memento(asked.url, found.capture.time)),
                ("Vary", "accept-datetime"),
                *[(k, v) for k, v in links if k == "Link"],
            ],
        )

    async def _memento(self, request: web.Request, asked: Memento) -> web.StreamResponse:
        query = CaptureQuery(asked.url, parse_time(asked.timestamp))
        key, found, head, fuzzy = await self.reader.find(query)
        time = found.capture.time
        if format_digits(time) != asked.timestamp:
            return web.Response(
                status=302,
                headers={"Location": self.urls.memento(asked.url, time, asked.modifier)},
            )
        reading = await self.reader.reading(key, found, head, fuzzy)
        headers = archived_headers(asked.url, reading.header)
        headers += memento_headers(asked.url, found, self.urls, proxied=False)
        headers.append(("Accept-Ranges", "bytes"))
        page = self._with_bar(request, asked, reading, headers)
        if page is not None:
            kept = [(k, v) for k, v in headers if k.lower() != "cache-control"]
            # A page with the bar is not the archived page: no cache keeps it as that.
            kept.append(("Cache-Control", "no-store"))
            return web.Response(status=reading.header.status, body=page, headers=kept)
        return await self._send(request, reading, headers)

    def _with_bar(
        self, request: web.Request, asked: Memento, reading: Reading, headers: Fields
    ) -> bytes | None:
        """The page with the bar, where the proxy would put it and the bytes need no decoding
        (a compressed page goes without); None where it goes as archived."""
        if not self.options.banner or asked.modifier or request.method != "GET":
            return None
        if "Range" in request.headers or not isinstance(reading.body, bytes):
            return None
        if not (navigation(request.headers) and shown(reading.header.status)):
            return None
        content_type = _field(headers, "content-type")
        coding = _field(headers, "content-encoding").strip().lower()
        if media_type(content_type) != "text/html" or coding not in ("", "identity"):
            return None
        policies = [v for k, v in headers if k.lower() == "content-security-policy"]
        return with_bar(reading.body, content_type, policies, self._bar(asked.url, reading))

    def _bar(self, url: str, reading: Reading) -> bytes:
        """The bar of the front's page: its links to the front's URI-Ms, no coherence figure
        (the proxy measures it, for its own clients), and the page without it at `id_`."""
        time = reading.capture.time
        previous, following = (reading.found.neighbours.get(k) for k in ("prev", "next"))
        links = BarLinks(
            lambda at, page: self.urls.memento(page, at),
            self.urls.timemap(url),
            None,
            self.urls.memento(url, time, "id_"),
        )
        return linked_bar(
            url,
            time,
            None if previous is None else previous.time,
            None if following is None else following.time,
            links,
        )

    async def _send(
        self, request: web.Request, reading: Reading, headers: Fields
    ) -> web.StreamResponse:
        """The memento's body, or the range of it asked for, as the proxy answers one; a large
        body is read from its node over that range only."""
        header, size = reading.header, reading.size
        try:
            span = memento_span(
                request.headers,
                header.status,
                size,
                header.get("ETag"),
                header.get("Last-Modified"),
            )
        except RangeNotSatisfiable:
            return web.Response(
                status=416, headers=[*headers, ("Content-Range", unsatisfied_range(size))]
            )
        status, length = header.status, size
        if span is not None:
            status, length = 206, span.length
            headers = [*headers, ("Content-Range", span.content_range(size))]
        answer = web.StreamResponse(status=status, headers=headers)
        answer.content_length = length
        await answer.prepare(request)
        if request.method == "GET":
            async for piece in self.reader.pieces(reading, span):
                await answer.write(piece)
        await answer.write_eof()
        return answer


def _field(headers: Fields, name: str) -> str:
    """The first value of a header field (`name` in lower case), or ""."""
    return next((v for k, v in headers if k.lower() == name), "")


def _signed_in(users: HtpasswdFile, request: web.Request) -> bool:
    """Whether the request names a user of the htpasswd file with its password (Basic)."""
    try:
        given = BasicAuth.decode(request.headers.get("Authorization", ""))
    except ValueError:
        return False
    return bool(users.check_password(given.login, given.password))


def _text(status: int, said: str, *headers: tuple[str, str]) -> web.Response:
    return web.Response(
        status=status,
        text=said + "\n",
        headers=[("Content-Type", "text/plain; charset=utf-8"), *headers],
    )
