"""The direct front: the archive at pywb's archival URLs (archive/archival_urls.py), for a client
that sets no proxy: a link in a paper, cdx-toolkit's `wb=` fetches, Memento clients.

It serves identity mode only, as the design wants: a memento is its archived status, headers and
bytes, never rewritten (a page's relative links stay within the front, its absolute ones lead
to the live web). `{ts}{modifier}/{url}` answers the capture closest to the time, after a
redirect to its exact 14-digit timestamp when the time asked is not that, as pywb does; the URL
alone is its TimeGate (Accept-Datetime, else the latest capture); the TimeMaps and `/cdx` are
those of the proxy's harbors. It runs in the proxy's process, on a port of its own, with the
proxy's reader and cache, its client networks, its users (Basic authentication where the proxy
asks for proxy authentication) and its limits on a request's head and its wait; it answers GET
and HEAD only.
"""

import logging
from dataclasses import dataclass
from urllib.parse import parse_qsl

from aiohttp import BasicAuth, web
from passlib.apache import HtpasswdFile

import harbors
from archive.archival_urls import ArchivalUrls, Cdx, Memento, TimeGate, TimeMap, parse
from archive.cluster import LargeContent
from archive.connections import app_runner
from archive.errors import ClientFault, DlwebError, NotFound
from archive.link_format import LINK_FORMAT, timemap
from archive.reading import CaptureQuery, CaptureReader
from archive.serving import status_of
from archive.timestamps import MAX_TIME, format_digits, parse_http_date, parse_time

from .access import Access
from .mementos import archived_headers, memento_headers

__all__ = ["DirectFront"]

log = logging.getLogger(__name__)

READ_ONLY = ("GET", "HEAD")
AUTHENTICATE = ("WWW-Authenticate", 'Basic realm="dlweb"')
CDX_FORMATS = {"json": "json", "cdxj": "cdxj"}  # TimeMap format -> the CDX output giving it


@dataclass(eq=False)
class DirectFront:
    """The front's handlers, over the proxy's reader and harbors."""

    reader: CaptureReader
    urls: ArchivalUrls
    access: Access
    harbors: harbors.HarborContext  # for the CDX API and the TimeMaps in CDX formats
    users: HtpasswdFile | None = None  # the proxy's --auth file: then a user and password
    _runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on `host`:`port` (0: any free port); the port listened on."""
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self.handle)
        self._runner = app_runner(app, self.reader.client.config.http)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
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
            headers={"Content-Type": answer.content_type},
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
        answer = web.StreamResponse(status=reading.header.status, headers=headers)
        answer.content_length = reading.size
        await answer.prepare(request)
        if request.method == "GET":
            if isinstance(reading.body, LargeContent):
                async for piece in self.reader.pieces(reading):
                    await answer.write(piece)
            else:
                await answer.write(reading.body)
        await answer.write_eof()
        return answer


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
