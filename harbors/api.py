"""`http://api.dlweb/`: the harbors' settings and the archive's captures as JSON, for programs.

- `GET /date`: `{"date": ISO or null, "live": bool, "record": bool, "banner": bool, "token":
  TOKEN}`, the asking client's setting and its token (consent.py), which no other origin can
  read: the harbors grant no cross-origin access;
- `PUT` or `POST /date` with the token in the `X-Dlweb-Token` header (a page cannot send it
  without a CORS preflight, and the harbors grant none) and `{"date": ISO, 14 digits or null,
  "live": bool, "record": bool, "banner": bool}`: change it (each field optional; live and record
  only where the operator allows the live web). 403 without the token; a body over 64 KiB, 413;
  one that is not such a JSON object (nested beyond orjson's 1024 levels included), 400;
- `GET /captures?url=URL`: every capture of a URL;
- `GET /capture?url=URL[&at=DATE]`: the capture the client would see (its date, or `at`), with
  its archived headers and its first, last, previous and next captures' dates;
- `GET /links?url=URL[&at=DATE]` and `GET /text?url=URL[&at=DATE]`: the links and the text of
  that capture, when it is an HTML document;
- `GET /cdx?url=URL[&matchType=...&output=...]`: pywb's CDX server API (search/cdx.py): captures
  as CDXJ, JSON lines, text or a link list; a prefix, host or domain query reads the URL-key index
  of the search index folder (`dlweb search rebuild`);
- `GET /backlinks?url=URL`: the archived pages that link to a URL, each with its latest linking
  version's date and title and its anchor texts; `GET /similar?url=URL[&limit=N]`: the pages
  nearest the URL's latest indexed version by simhash (search/backlinks.py). Both read the search
  index: 503 where none was built, and /similar 404 for a URL it does not hold;
- `GET /search?q=QUERY[&offset=N&limit=N&from=DATE&to=DATE]`: the hits of a full-text query
  (search/index.py), `{query, total, offset, hits, facets}`, the facets (domain, year,
  content_type) counted over every match; `GET /history?url=URL`: the URL's indexed versions,
  oldest first, each with what changed in its text (search/history.py). A query, date, offset or
  limit that cannot be read: 400.

`GET /coherence?url=PAGE[&at=&span=]`, the dates of the resources a page loaded for the date
banner, is answered by the proxy itself (proxy/banner_addon.py) before the harbors see the request.
"""

import asyncio
import json
from typing import Any

from archive import jsonwire
from archive.errors import DlwebError
from archive.reading import CaptureQuery
from archive.serving import status_of
from archive.timestamps import MAX_TIME, BadTime, format_iso, parse_time

from . import document
from .answer import Answer, HarborContext
from .request import MAX_BODY, BadParameter, HarborRequest
from .search import paging
from .settings import ClientSetting

JSON = "application/json"
TOKEN_HEADER = "X-Dlweb-Token"
NO_STORE = ("Cache-Control", "no-store")  # the answer holds the client's token


def _json(status: int, data: Any, *headers: tuple[str, str]) -> Answer:
    return Answer(status, (json.dumps(data, indent=1) + "\n").encode(), JSON, list(headers))


def _setting_json(setting: ClientSetting) -> dict[str, Any]:
    return {
        "date": None if setting.at is None else format_iso(setting.at),
        "live": setting.live,
        "record": setting.record,
        "banner": setting.banner,
    }


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path == "/date":
        if request.method == "GET":
            setting = _setting_json(context.settings.get(request.client))
            token = context.settings.consent.form_token(request.client)
            return _json(200, {**setting, "token": token}, NO_STORE)
        if request.method in ("PUT", "POST"):
            return _put_date(context, request)
        refused = {"error": "use GET, or PUT or POST with your token, on /date"}
        return _json(405, refused, ("Allow", "GET, PUT, POST"))
    if request.path == "/captures" and request.method == "GET":
        try:
            url = _url(request)
            captures = await context.client.captures(url)
        except DlwebError as exc:
            return _json(status_of(exc), {"error": str(exc)})
        listed = [{**c.to_json(), "date": format_iso(c.time)} for c in captures]
        return _json(200, {"url": url, "captures": listed})
    if request.path in ("/capture", "/links", "/text") and request.method == "GET":
        return await _document(context, request)
    if request.path == "/cdx" and request.method == "GET":
        return await _cdx(context, request)
    if request.path in ("/backlinks", "/similar") and request.method == "GET":
        return await _links(context, request)
    if request.path in ("/search", "/history") and request.method == "GET":
        return await _search(context, request)
    return _json(404, {"error": f"no {request.method} {request.path} here; see GET /date"})


def _url(request: HarborRequest) -> str:
    """The page's URL the request names (request.py); BadParameter when it names none."""
    url = request.url("url")
    if not url:
        raise BadParameter(f"give the URL: {request.path}?url=...")
    return url


async def _document(context: HarborContext, request: HarborRequest) -> Answer:
    try:
        url = _url(request)
        if "at" in request.query:
            at = parse_time(request.query["at"])
        else:
            chosen = context.settings.get(request.client).at
            at = chosen if chosen is not None else MAX_TIME
        reading = await context.reader.read(CaptureQuery(url, at))
        if request.path == "/capture":
            return _json(200, {"url": url, **document.metadata(reading.found, reading.header)})
        body = await document.body(context.reader, reading)
        what = request.path.lstrip("/")
        found = await asyncio.to_thread(document.extracted, what, url, reading.header, body)
        return _json(200, {"url": url, what: found})
    except DlwebError as exc:
        return _json(status_of(exc), {"error": str(exc)})


async def _cdx(context: HarborContext, request: HarborRequest) -> Answer:
    """pywb's CDX API: the lines in the content type of their output; an error as JSON."""
    from search.cdx import answer, parse_query  # here: only this route needs search's modules

    try:
        query = parse_query(request.query_pairs)
        body = await answer(context.client, query, context.search_index)
    except DlwebError as exc:
        return _json(status_of(exc), {"error": str(exc)})
    return Answer(200, body.encode(), query.content_type)


async def _links(context: HarborContext, request: HarborRequest) -> Answer:
    """Backlinks or similar pages, from the search index (read on a thread: it blocks)."""
    from search.backlinks import backlinks, similar
    from search.errors import NoIndex
    from search.index import open_index
    from search.keys import asked_key

    try:
        url = request.url("url")
        asked_key(url)
        limit = _limit(request.query.get("limit"))
        index = await asyncio.to_thread(open_index, context.search_index)
        if request.path == "/backlinks":
            found = await asyncio.to_thread(backlinks, index, url)
            listed = [link.as_json() for link in (found[:limit] if limit else found)]
            return _json(200, {"url": url, "total": len(found), "backlinks": listed})
        near = await asyncio.to_thread(similar, index, url, limit or 10)
        return _json(200, near.as_json())
    except NoIndex as exc:
        return _json(503, {"error": str(exc)})
    except DlwebError as exc:
        return _json(status_of(exc), {"error": str(exc)})


async def _search(context: HarborContext, request: HarborRequest) -> Answer:
    """A full-text query's hits and facets, or a URL's text history, from the search index (read
    on a thread: it blocks)."""
    from search.errors import BadQuery, NoIndex
    from search.history import history
    from search.index import open_index, search, time_range
    from search.keys import asked_key

    try:
        if request.path == "/history":
            url = request.url("url")
            asked_key(url)  # a bad URL is told before the index is opened
            index = await asyncio.to_thread(open_index, context.search_index)
            found = await asyncio.to_thread(history, index, url)
            return _json(200, found.as_json())
        query = request.query.get("q", "")
        if not query.strip():
            raise BadQuery("give a query: /search?q=...")
        offset, limit = paging(request.query)
        start, end = time_range(request.query.get("from"), request.query.get("to"))
        index = await asyncio.to_thread(open_index, context.search_index)
        hits = await asyncio.to_thread(search, index, query, limit, offset, start, end, True)
        return _json(200, hits.as_json(query))
    except NoIndex as exc:
        return _json(503, {"error": str(exc)})
    except DlwebError as exc:
        return _json(status_of(exc), {"error": str(exc)})


def _limit(text: str | None) -> int | None:
    """The `limit` parameter: a whole number of 1 or more, or None."""
    from search.errors import BadLinkQuery

    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise BadLinkQuery(f"limit={text!r}: give a whole number >= 1")
    return int(text)


def _put_date(context: HarborContext, request: HarborRequest) -> Answer:
    """A change of the client's setting, with its token only (consent.py)."""
    given = request.headers.get(TOKEN_HEADER.lower(), "")
    if not context.settings.consent.allows_form(request.client, given):
        said = f"give your token in the {TOKEN_HEADER} header: GET /date tells it"
        return _json(403, {"error": f"{'a wrong token' if given else 'no token'}: {said}"})
    if len(request.body) > MAX_BODY:
        return _json(413, {"error": f"the body is larger than {MAX_BODY:,} bytes"})
    try:
        data = jsonwire.loads(request.body or b"{}")
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object")
        setting = context.settings.get(request.client)
        at = setting.at
        if "date" in data:
            text = data["date"]
            if text is not None and not isinstance(text, str):
                raise ValueError("date must be a string or null")
            at = None if text is None else parse_time(text)
        live = data.get("live", setting.live)
        record = data.get("record", setting.record)
        banner = data.get("banner", setting.banner)
        if not all(isinstance(value, bool) for value in (live, record, banner)):
            raise ValueError("live, record and banner must be true or false")
    except (ValueError, BadTime) as exc:
        return _json(400, {"error": str(exc)})
    if (data.get("live") is True or data.get("record") is True) and not context.live_allowed:
        return _json(403, {"error": "the operator of this archive does not allow the live web"})
    new = ClientSetting(at, live, record, banner)
    context.settings.set(request.client, new)
    return _json(200, _setting_json(new))
