"""The mitmproxy addon: every request is answered from the archive, never from the live web.

The date is the request's `Accept-Datetime` when it has one, else its client's setting in the
date harbor, else now (the latest capture). Requests to `*.dlweb` go to the harbors. Clients
outside the allowed networks get 403, at CONNECT as for plain requests. A URL the archive lacks
is fetched from the live web only for a client that turned live mode on, where the operator
allowed it, and the response says so.
"""

import logging
from pathlib import Path
from urllib.parse import parse_qsl

from mitmproxy import http

import harbors
from archive.cluster import ClusterClient
from archive.errors import DlwebError, NotFound
from archive.timestamps import MAX_TIME, BadTime, format_iso, parse_http_date

from .access import Access
from .faults import fault
from .replay import Replayer, encoded

log = logging.getLogger(__name__)

READ_METHODS = ("GET", "HEAD")
LIVE = "dlweb-live"


class ArchiveAddon:
    def __init__(
        self,
        client: ClusterClient,
        settings: harbors.ClientSettings,
        access: Access,
        ca_folder: Path,
        live_allowed: bool = False,
        log_requests: bool = False,
    ) -> None:
        self.client = client
        self.replayer = Replayer(client)
        self.settings = settings
        self.access = access
        self.ca_folder = ca_folder
        self.live_allowed = live_allowed
        self.log_requests = log_requests

    def http_connect(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:  # answered already (proxy authentication asked for)
            return
        if not self.access.allows(_client(flow)):
            flow.response = _forbidden(_client(flow))

    async def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:  # answered already (proxy authentication asked for)
            return
        client = _client(flow)
        if not self.access.allows(client):
            flow.response = _forbidden(client)
            return
        request = flow.request
        if harbors.is_harbor(request.pretty_host):
            flow.response = await self._harbor(client, request)
            return
        url = request.pretty_url
        accept = request.headers.get("accept", "")
        if request.method not in READ_METHODS:
            flow.response = _fault(405, url, accept, "the archive can only be read")
            return
        wanted = request.headers.get("accept-datetime")
        try:
            at = parse_http_date(wanted) if wanted is not None else self._date_of(client)
        except BadTime as exc:
            flow.response = http.Response.make(
                400, f"Accept-Datetime: {exc}\n", {"Content-Type": "text/plain; charset=utf-8"}
            )
            return
        try:
            replayed = await self.replayer.replay(url, at)
        except NotFound as exc:
            if self.log_requests:
                log.info("not archived %s %s %s", client, request.method, url)
            else:
                log.debug("not archived: %s", exc)
            if self.live_allowed and self.settings.get(client).live:
                # Left to mitmproxy, which fetches it from the web; marked in `response`.
                flow.metadata[LIVE] = True
                return
            flow.response = _fault(404, url, accept, "it was never captured")
            return
        except DlwebError as exc:  # ArchiveFault, or no lookup answered (ClusterError)
            log.warning("cannot replay %s: %s", url, exc)
            flow.response = _fault(500, url, accept, "the archive cannot read it now")
            return
        body = b"" if request.method == "HEAD" else replayed.body
        flow.response = _response(replayed.status, replayed.fields, body, len(replayed.body))
        if self.log_requests:
            log.info(
                "replayed %s %s %s: %d, capture of %s",
                client,
                request.method,
                url,
                replayed.status,
                format_iso(replayed.capture.time),
            )

    def response(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(LIVE) and flow.response is not None:
            flow.response.headers["X-Dlweb-Live"] = "fetched from the live web, not archived"

    def _date_of(self, client: str) -> int:
        """The client's date; for the latest capture, the end of time (one cache key for all)."""
        setting = self.settings.get(client)
        return setting.at if setting.at is not None else MAX_TIME

    async def _harbor(self, client: str, request: http.Request) -> http.Response:
        path, _, query = request.path.partition("?")
        asked = harbors.HarborRequest(
            client=client,
            method=request.method,
            host=request.pretty_host,
            path=path or "/",
            query=dict(parse_qsl(query)),
            headers={
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers.fields
            },
            body=request.raw_content or b"",
        )
        answer = await harbors.answer(self, asked)
        return _response(
            answer.status, encoded(answer.all_headers()), answer.body, len(answer.body)
        )


def _response(
    status: int, fields: list[tuple[bytes, bytes]], body: bytes, length: int
) -> http.Response:
    """A response with headers in the order given, repeated names kept (as archived), and the
    body sent raw: as archived, a gzip body stays gzip (its header says so)."""
    response = http.Response.make(status, b"", http.Headers(fields))
    response.raw_content = body
    response.headers["Content-Length"] = str(length)
    return response


def _client(flow: http.HTTPFlow) -> str:
    return str(flow.client_conn.peername[0])


def _forbidden(client: str) -> http.Response:
    return http.Response.make(
        403,
        f"dlweb: clients at {client} may not use this proxy\n",
        {"Content-Type": "text/plain; charset=utf-8"},
    )


def _fault(status: int, url: str, accept: str, reason: str) -> http.Response:
    body, content_type = fault(status, url, accept, reason)
    return http.Response.make(status, body, {"Content-Type": content_type})
