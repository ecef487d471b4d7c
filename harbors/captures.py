"""`http://captures.dlweb/?url=URL`: every capture of a URL, as a page, as JSON (`format=json`)
or as a Memento TimeMap (`format=link`, `application/link-format`)."""

import html
import json
from urllib.parse import quote

from archive.errors import DlwebError, NotFound
from archive.structure import Capture
from archive.timestamps import format_digits, format_http_date, format_iso

from .answer import Answer, HarborContext
from .request import HarborRequest

LINK_FORMAT = "application/link-format"


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    url = request.query.get("url", "")
    shape = request.query.get("format", "html")
    if shape not in ("html", "json", "link"):
        return Answer(400, b"format is html, json or link\n", "text/plain")
    if not url:
        return _page("", [], "Give a URL: http://captures.dlweb/?url=http://example.org/")
    try:
        captures = await context.client.captures(url)
    except NotFound:
        captures = []
    except DlwebError as exc:
        return Answer(
            500, f"the archive cannot list the captures now: {exc}\n".encode(), "text/plain"
        )
    if shape == "json":
        listed = [{**c.to_json(), "date": format_iso(c.time)} for c in captures]
        body = json.dumps({"url": url, "captures": listed}, indent=1) + "\n"
        return Answer(200 if captures else 404, body.encode(), "application/json")
    if shape == "link":
        if not captures:
            return Answer(404, f"no capture of {url}\n".encode(), "text/plain")
        return Answer(200, _timemap(url, captures).encode(), LINK_FORMAT)
    return _page(url, captures, "" if captures else f"{url} is not in the archive.")


def _timemap(url: str, captures: list[Capture]) -> str:
    me = f"http://captures.dlweb/?format=link&url={quote(url, safe='')}"
    first, last = format_http_date(captures[0].time), format_http_date(captures[-1].time)
    lines = [
        f'<{url}>; rel="original"',
        f'<{me}>; rel="self"; type="{LINK_FORMAT}"; from="{first}"; until="{last}"',
        f'<{url}>; rel="timegate"',
    ]
    for index, capture in enumerate(captures):
        rel = "memento"
        if index == 0:
            rel = "first memento"
        if index == len(captures) - 1:
            rel = "last memento" if index else "first last memento"
        lines.append(f'<{url}>; rel="{rel}"; datetime="{format_http_date(capture.time)}"')
    return ",\n".join(lines) + "\n"


def _page(url: str, captures: list[Capture], note: str) -> Answer:
    rows = "".join(
        f'<tr><td><a href="http://date.dlweb/set?at={format_digits(c.time)}&amp;back='
        f'{html.escape(quote(url, safe=""))}">{format_iso(c.time)}</a></td>'
        f"<td>{c.status}</td><td>{c.kind.name.lower()}</td></tr>"
        for c in captures
    )
    body = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>dlweb: captures of {html.escape(url)}</title></head>
<body><h1>Captures of {html.escape(url) or "a URL"}</h1>
<form><input name="url" size="60" value="{html.escape(url)}"><button>List</button></form>
{f"<p>{html.escape(note)}</p>" if note else ""}
{f"<p>{len(captures)} captures; pick one to browse at its date.</p>" if captures else ""}
<table><tr><th>date (UTC)</th><th>status</th><th>kind</th></tr>{rows}</table>
</body></html>
"""
    return Answer(200 if captures or not url else 404, body.encode(), "text/html; charset=utf-8")
