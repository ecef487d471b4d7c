"""The banner addon: for a client that turned the banner on, a bar atop each archived HTML page it
loads (harbors/banner.py), and the record of what was served for that page (proxy/coherence.py),
which `GET http://api.dlweb/coherence?url=PAGE[&at=DATE][&span=1d]` answers to the client itself
(and to no other origin: the bar's figure is a page of api.dlweb, `/coherence/figure?url=PAGE`,
which asks it from its own origin).

The bar goes only where it cannot break the page or mislead:
- into a replayed capture (not a harbor page, not the live web, not a recording), asked for by
  `GET` or `POST` without `Range`, whose status has a page to show (2xx but 204-206, 4xx, 5xx);
- for a top-level page load: `Sec-Fetch-Dest: document`; without Sec-Fetch headers (a browser
  sends none to a plain-HTTP site), a request that asks for `text/html` first with
  `Upgrade-Insecure-Requests: 1`, as navigations do (inside a frame, the bar's script then
  removes it);
- into `text/html` only (not XHTML served as XML), whose bytes a browser reads as ASCII does (not
  UTF-16 or UTF-32, by header or byte-order mark, nor a page with an ESC byte, as ISO-2022-JP
  has), and held in memory (a streamed body of more than 1 MiB gets none);
- in any one coding archive.content_coding reads, at most MAX_DECODED bytes once decoded; it is
  sent decoded, without `Content-Encoding`, with its new `Content-Length` and `Cache-Control:
  no-store` (a page with the bar is not kept as the archived page);
- where the page's tokens give it a place (proxy/placement.py): right after `<body ...>`, else
  right before what starts the body, never in a tag, a comment or a raw-text element, nor in a
  frameset;
- not when a Content-Security-Policy of the page, in a header or a `<meta>` of its head, forbids
  the bar's inline style or script or its frame (proxy/csp.py).
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from mitmproxy import http

import harbors
from archive.content_coding import BadCoding, TooLarge, inflate
from archive.errors import ClientFault
from archive.header_block import media_type
from archive.timestamps import parse_time
from harbors.answer import NO_NEGOTIATION
from harbors.banner import FIGURE_PATH, FIGURE_POLICY, bar, figure_page

from .coherence import Coherence, origin_of, parse_span
from .csp import refusal
from .dates import AT
from .guard import client_of
from .placement import placement
from .replay import MISSED, SERVED, ReadyCapture
from .responses import encoded, made

MAX_DECODED = 8 * 1024 * 1024
API_HOST = "api.dlweb"
COHERENCE = "/coherence"
# Byte-order marks of UTF-16 and UTF-32, whose pages get no bar, and of UTF-8, which a browser drops.
_WIDE_MARKS = (b"\xfe\xff", b"\xff\xfe", b"\x00\x00\xfe\xff")
_UTF8_MARK = b"\xef\xbb\xbf"
_SAFE_ORIGIN_RE = re.compile(r"https?://[a-z0-9.\-\[\]:]+")


class Banner:
    """Records what is served to clients whose banner is on, puts the bar in their pages, and
    answers the coherence API."""

    def __init__(self, settings: harbors.ClientSettings, span: int) -> None:
        self.settings = settings
        self.span = span  # seconds from its page beyond which a resource is marked
        self.coherence = Coherence()

    def request(self, flow: http.HTTPFlow) -> None:
        """Answer `http://api.dlweb/coherence` and its figure page; leave every other request
        to the harbors."""
        request = flow.request
        if flow.response is not None or request.pretty_host.lower().rstrip(".") != API_HOST:
            return
        path, _, query = request.path.partition("?")
        if path not in (COHERENCE, FIGURE_PATH):
            return
        if request.method != "GET":
            flow.response = _json(405, {"error": f"use GET on {path}"})
        elif path == FIGURE_PATH:
            flow.response = _figure(dict(parse_qsl(query)))
        else:
            flow.response = self._coherence(client_of(flow), dict(parse_qsl(query)))

    def _coherence(self, client: str, query: dict[str, str]) -> http.Response:
        url = query.get("url")
        if not url:
            return _json(400, {"error": "give the page's URL: /coherence?url=..."})
        try:
            at = parse_time(query["at"]) if query.get("at") else None
            span = parse_span(query["span"]) if query.get("span") else self.span
        except ClientFault as exc:
            return _json(400, {"error": str(exc)})
        load = self.coherence.load(client, url, at)
        if load is None:
            why = (
                "the banner is on, but this page was not loaded at that date lately"
                if self.settings.get(client).banner
                else "pages are followed only while the banner is on (date.dlweb/set?banner=on)"
            )
            return _json(404, {"error": f"no load of {url} recorded for {client}: {why}"})
        return _json(200, load.report(span))

    def served(self, flow: http.HTTPFlow) -> None:
        """After the replay: note what was served for the client's page, and put the bar in
        the page itself."""
        prepared, at = flow.metadata.get(SERVED), flow.metadata.get(AT)
        missed = bool(flow.metadata.get(MISSED))
        if not (isinstance(prepared, ReadyCapture) or missed) or not isinstance(at, int):
            return
        client = client_of(flow)
        if not self.settings.get(client).banner:
            return
        request = flow.request
        if not navigation(request.headers):
            time = prepared.time if isinstance(prepared, ReadyCapture) else None
            referer = request.headers.get("referer")
            self.coherence.resource(client, request.pretty_url, referer, at, time)
            return
        if not isinstance(prepared, ReadyCapture) or not shown(prepared.status):
            return
        if media_type(_field(prepared.fields, b"content-type")) != "text/html":
            return
        self.coherence.page(client, request.pretty_url, at, prepared.time)
        response = flow.response
        if response is None or request.method not in ("GET", "POST") or "range" in request.headers:
            return  # streamed from its node, or not a whole page
        markup = bar(
            request.pretty_url,
            prepared.time,
            prepared.previous,
            prepared.following,
            at,
            client,
            self.settings.consent,
        )
        page = _with_bar(response, markup)
        if page is not None:
            response.raw_content = page
            response.headers.pop("content-encoding", None)
            response.headers["Content-Length"] = str(len(page))
            response.headers["Cache-Control"] = "no-store"


def navigation(headers: Mapping[str, str]) -> bool:
    """Whether a request loads a top-level page, as far as its header fields (read without
    regard to case) tell."""
    destination: str | None = headers.get("sec-fetch-dest")
    if destination is not None:
        return destination.strip().lower() == "document"
    accept: str = headers.get("accept", "")
    upgrades: str = headers.get("upgrade-insecure-requests", "")
    return upgrades.strip() == "1" and accept.lstrip().lower().startswith("text/html")


def shown(status: int) -> bool:
    """Whether a browser shows the body of an answer of this status."""
    return 200 <= status < 300 and status not in (204, 205, 206) or status >= 400


def _field(fields: list[tuple[bytes, bytes]], name: bytes) -> str:
    """The first value of a header among encoded fields, or ""."""
    for key, value in fields:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _with_bar(response: http.Response, markup: bytes) -> bytes | None:
    """The page's decoded body with the bar in it, or None where the bar must not go."""
    try:
        body = inflate(
            response.headers.get("content-encoding", ""), response.raw_content or b"", MAX_DECODED
        )
    except (BadCoding, TooLarge):  # several codings, a broken one, or too large to go through
        return None
    content_type = response.headers.get("content-type") or ""
    return with_bar(body, content_type, response.headers.get_all("content-security-policy"), markup)


def with_bar(
    body: bytes, content_type: str, policies: Sequence[str], markup: bytes
) -> bytes | None:
    """A decoded HTML page with the bar in it, or None where it must not go: its charset, its
    tokens or its Content-Security-Policy (the header's `policies` and its `<meta>`) forbid it."""
    if re.search(r"charset\s*=\s*[\"']?utf-?(16|32)", content_type.lower()):
        return None
    if body.startswith(_WIDE_MARKS) or b"\x1b" in body:
        return None
    place = placement(body.decode("latin-1"), len(_UTF8_MARK) if body.startswith(_UTF8_MARK) else 0)
    if place.at is None or any(refusal(policy) for policy in [*policies, *place.policies]):
        return None
    return body[: place.at] + markup + body[place.at :]


def _figure(query: dict[str, str]) -> http.Response:
    """The coherence figure page of `url`, which only that page's origin may frame."""
    url = query.get("url")
    if not url:
        return _json(400, {"error": f"give the page's URL: {FIGURE_PATH}?url=..."})
    page = origin_of(url)
    ancestor = page if _SAFE_ORIGIN_RE.fullmatch(page) else "'none'"
    body = figure_page(url)
    headers = [
        ("Content-Type", "text/html; charset=utf-8"),
        NO_NEGOTIATION,
        ("Content-Security-Policy", f"{FIGURE_POLICY}; frame-ancestors {ancestor}"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]
    return made(200, encoded(headers), body, len(body))


def _json(status: int, data: Any) -> http.Response:
    body = (json.dumps(data, indent=1) + "\n").encode()
    # The client's own pages and dates: for no other origin (no CORS grant), not even as a
    # resource of another origin's page (CORP), nor read as anything but JSON.
    headers = [
        ("Content-Type", "application/json"),
        NO_NEGOTIATION,
        ("X-Content-Type-Options", "nosniff"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]
    return made(status, encoded(headers), body, len(body))
