"""The banner addon: for a client that turned the banner on, a bar atop each archived HTML page it
loads (harbors/banner.py), and the record of what was served for that page (proxy/coherence.py),
which `GET http://api.dlweb/coherence?url=PAGE[&at=DATE][&span=1d]` answers.

The bar goes only where it cannot break the page or mislead:
- into a replayed capture (not a harbor page, not the live web, not a recording), asked for by
  `GET` or `POST` without `Range`, whose status has a page to show (2xx but 204-206, 4xx, 5xx);
- for a top-level page load: `Sec-Fetch-Dest: document`; without Sec-Fetch headers (a browser
  sends none to a plain-HTTP site), a request that asks for `text/html` first with
  `Upgrade-Insecure-Requests: 1`, as navigations do (inside a frame, the bar's script then
  removes it);
- into `text/html` only (not XHTML served as XML, not UTF-16 or UTF-32), not into a frameset,
  and held in memory (a streamed body of more than 1 MiB gets none);
- identity, gzip or deflate content, at most MAX_DECODED bytes once decoded; it is sent
  decoded, without `Content-Encoding`, with its new `Content-Length` and `Cache-Control:
  no-store` (a page with the bar is not kept as the archived page);
- not when the page's Content-Security-Policy (header or `<meta>`) would block the bar's inline
  style or script: a `style-src`, `script-src` (their `-elem` forms) or `default-src` without
  `'unsafe-inline'`, or whose nonce, hash or `'strict-dynamic'` makes it ignored.
It goes right after `<body ...>`, else after `</head>`, else after the doctype and `<html>`.
"""

import json
import re
import zlib
from html import unescape
from typing import Any
from urllib.parse import parse_qsl

from mitmproxy import http

import harbors
from archive.errors import ClientFault
from archive.header_block import media_type
from archive.timestamps import parse_time
from harbors.answer import NO_NEGOTIATION
from harbors.banner import bar

from .coherence import Coherence, parse_span
from .dates import AT
from .guard import client_of
from .replay import MISSED, SERVED, Prepared
from .responses import encoded, made

MAX_DECODED = 8 * 1024 * 1024
API_HOST = "api.dlweb"
COHERENCE = "/coherence"
# What the bar's place is looked for among: comments and elements whose text may hold `<body`
# without being the page's body tag (each skipped to its end), `<body ...>`, `</head>`, and
# `<frameset`.
_RAW = (b"script", b"style", b"textarea", b"title", b"xmp", b"noscript", b"template")
_OPENING_RE = re.compile(
    rb"<!--|<(" + b"|".join(_RAW) + rb")(?=[\s/>])"
    rb"|<body(?=[\s/>])(?:[^>\"']|\"[^\"]*\"|'[^']*')*>|</head\s*>|<frameset(?=[\s/>])",
    re.IGNORECASE,
)
_ENDS = {name: re.compile(rb"</" + name + rb"\s*>", re.IGNORECASE) for name in _RAW}
_ENDS[b"!--"] = re.compile(rb"-->")
_START_RE = re.compile(
    rb"\A(?:\s|<\?xml[^>]*>|<!doctype[^>]*>|<!--.*?-->)*"
    rb"(?:<html\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>)?",
    re.IGNORECASE | re.DOTALL,
)
_META_RE = re.compile(rb"<meta\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE)
_ATTRIBUTE_RE = re.compile(
    rb"""([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE
)
_INLINE_DIRECTIVES = (
    ("script-src-elem", "script-src", "default-src"),
    ("style-src-elem", "style-src", "default-src"),
)
_OVERRIDING = ("'nonce-", "'sha256-", "'sha384-", "'sha512-", "'strict-dynamic'")


class Banner:
    """Records what is served to clients whose banner is on, puts the bar in their pages, and
    answers the coherence API."""

    def __init__(self, settings: harbors.ClientSettings, span: int) -> None:
        self.settings = settings
        self.span = span  # seconds from its page beyond which a resource is marked
        self.coherence = Coherence()

    def request(self, flow: http.HTTPFlow) -> None:
        """Answer `http://api.dlweb/coherence`; leave every other request to the harbors."""
        request = flow.request
        if flow.response is not None or request.pretty_host.lower().rstrip(".") != API_HOST:
            return
        path, _, query = request.path.partition("?")
        if path != COHERENCE:
            return
        if request.method != "GET":
            flow.response = _json(405, {"error": "use GET on /coherence"})
            return
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
        if not (isinstance(prepared, Prepared) or missed) or not isinstance(at, int):
            return
        client = client_of(flow)
        if not self.settings.get(client).banner:
            return
        request = flow.request
        if not _navigation(request):
            time = prepared.time if isinstance(prepared, Prepared) else None
            referer = request.headers.get("referer")
            self.coherence.resource(client, request.pretty_url, referer, at, time)
            return
        if not isinstance(prepared, Prepared) or not _shown(prepared.status):
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


def _navigation(request: http.Request) -> bool:
    """Whether the request loads a top-level page, as far as its headers tell."""
    headers = request.headers
    destination: str | None = headers.get("sec-fetch-dest")
    if destination is not None:
        return destination.strip().lower() == "document"
    accept: str = headers.get("accept", "")
    upgrades: str = headers.get("upgrade-insecure-requests", "")
    return upgrades.strip() == "1" and accept.lstrip().lower().startswith("text/html")


def _shown(status: int) -> bool:
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
    content_type = (response.headers.get("content-type") or "").lower()
    if re.search(r"charset\s*=\s*[\"']?utf-?(16|32)", content_type):
        return None
    if any(
        _forbids_inline(policy) for policy in response.headers.get_all("content-security-policy")
    ):
        return None
    body = _decoded(response.raw_content or b"", response.headers.get("content-encoding", ""))
    if body is None or body.startswith((b"\xfe\xff", b"\xff\xfe", b"\x00\x00\xfe\xff")):
        return None
    at = _insertion_point(body)
    if at is None or _meta_forbids_inline(body[:at]):
        return None
    return body[:at] + markup + body[at:]


def _decoded(body: bytes, coding: str) -> bytes | None:
    """The body without its content coding, or None for a coding not read here (br, zstd,
    several), a broken one, or one that decodes past MAX_DECODED."""
    coding = coding.strip().lower()
    if coding in ("", "identity"):
        return body if len(body) <= MAX_DECODED else None
    if coding in ("gzip", "x-gzip"):
        tries = [zlib.MAX_WBITS | 16]
    elif coding == "deflate":  # zlib-wrapped as the standard says, or raw as some servers send
        tries = [zlib.MAX_WBITS, -zlib.MAX_WBITS]
    else:
        return None
    for wbits in tries:
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, MAX_DECODED + 1)
        except zlib.error:
            continue
        if inflater.eof and len(out) <= MAX_DECODED:
            return out
        return None
    return None


def _insertion_point(body: bytes) -> int | None:
    """Where the bar goes: after `<body ...>`, else after `</head>`, else after the doctype
    and `<html>`; None in a frameset, which a body's content would break, or where a comment
    or a script never closed holds the rest of the page. In one pass, however long the page."""
    after_head, at = None, 0
    while (found := _OPENING_RE.search(body, at)) is not None:
        tag = found.group(0)[:6].lower()
        if tag.startswith(b"<body"):
            return found.end()
        if tag.startswith(b"<frame"):
            return None
        if tag.startswith(b"</head"):
            after_head, at = after_head or found.end(), found.end()
            continue
        name = found.group(1).lower() if found.group(1) else b"!--"
        end = _ENDS[name].search(body, found.end())
        if end is None:  # the rest is that element's text
            return after_head
        at = end.end()
    if after_head is not None:
        return after_head
    start = _START_RE.match(body)
    return start.end() if start else 0


def _forbids_inline(header: str) -> bool:
    """Whether a Content-Security-Policy (several policies joined by commas) would block an
    inline style or script."""
    for policy in header.split(","):
        directives: dict[str, list[str]] = {}
        for directive in policy.split(";"):
            tokens = directive.strip().lower().split()
            if tokens:
                directives.setdefault(tokens[0], tokens[1:])
        for names in _INLINE_DIRECTIVES:
            sources = next((directives[name] for name in names if name in directives), None)
            if sources is None:
                continue
            if "'unsafe-inline'" not in sources or any(
                source.startswith(_OVERRIDING) for source in sources
            ):
                return True
    return False


def _meta_forbids_inline(head: bytes) -> bool:
    """Whether a `<meta http-equiv="Content-Security-Policy">` before the bar forbids it."""
    for meta in _META_RE.finditer(head):
        attributes = {
            found.group(1).lower(): next(v for v in found.groups()[1:] if v is not None)
            for found in _ATTRIBUTE_RE.finditer(meta.group(0))
        }
        equiv = attributes.get(b"http-equiv", b"").strip().lower()
        if equiv == b"content-security-policy" and _forbids_inline(
            unescape(attributes.get(b"content", b"").decode("latin-1"))
        ):
            return True
    return False


def _json(status: int, data: Any) -> http.Response:
    body = (json.dumps(data, indent=1) + "\n").encode()
    headers = [
        ("Content-Type", "application/json"),
        NO_NEGOTIATION,
        # The bar of a page of any origin reads it; it holds only the asking client's pages.
        ("Access-Control-Allow-Origin", "*"),
        ("Cache-Control", "no-store"),
    ]
    return made(status, encoded(headers), body, len(body))
