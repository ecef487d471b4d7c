"""`http://captures.dlweb/?url=URL`: a URL's captures, as a page of their histogram per year and
calendar (`&year=2021&month=06[&day=03]` picks the month and the day listed; by default the
latest month with captures), as JSON (`format=json`) or as a Memento TimeMap (`format=link`,
`application/link-format`): the page counts captures per day, the formats list every one. The
URL is an http(s) URL (request.py); in the TimeMap it is written percent-encoded where a URI may
not hold a character (archive/link_format.py), so an archived URL cannot end an entry early."""

import html
import json
from urllib.parse import quote

from archive.errors import DlwebError, NotFound
from archive.link_format import LINK_FORMAT, timemap
from archive.serving import status_of
from archive.structure import Capture
from archive.timestamps import format_iso

from . import calendar, page
from .answer import Answer, HarborContext
from .request import BadParameter, HarborRequest

HOME = "http://captures.dlweb/"


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    shape = request.query.get("format", "html")
    if shape not in ("html", "json", "link"):
        return Answer(400, b"format is html, json or link\n", "text/plain")
    try:
        url = request.url("url")
    except BadParameter as exc:
        if shape == "html":
            return await _page(context, request, "", str(exc))
        return Answer(400, f"{exc}\n".encode(), "text/plain")
    if shape == "html":
        return await _page(context, request, url)
    try:
        captures = await context.client.captures(url)
    except NotFound:
        captures = []
    except DlwebError as exc:
        status = status_of(exc)  # a URL that cannot be archived is the asker's fault
        said = f"the archive cannot list the captures now: {exc}" if status >= 500 else str(exc)
        return Answer(status, f"{said}\n".encode(), "text/plain")
    if shape == "json":
        listed = [{**c.to_json(), "date": format_iso(c.time)} for c in captures]
        body = json.dumps({"url": url, "captures": listed}, indent=1) + "\n"
        return Answer(200 if captures else 404, body.encode(), "application/json")
    if not captures:
        return Answer(404, f"no capture of {url}\n".encode(), "text/plain")
    return Answer(200, _timemap(url, captures).encode(), LINK_FORMAT)


def _timemap(url: str, captures: list[Capture]) -> str:
    """In proxy mode the original URL is its own time gate and names each of its mementos."""
    me = f"http://captures.dlweb/?format=link&url={quote(url, safe='')}"
    return timemap(url, [c.time for c in captures], me, url, lambda time: url)


async def _page(
    context: HarborContext, request: HarborRequest, url: str, refused: str = ""
) -> Answer:
    """The page of a URL's captures; without a URL, the form to give one (and why the URL
    given was `refused`, with 400)."""
    form = (
        '<form action="/" method="get"><label class="wide">URL <input name="url" type="url"'
        f' required value="{html.escape(url)}"></label><button>Show its captures</button></form>'
    )
    if not url:
        said = f'<p class="error" role="alert">{html.escape(refused)}</p>\n' if refused else ""
        body = (
            f"<h1>Captures of a URL</h1>\n{said}{form}\n<p>Give a URL, such as"
            " <code>http://captures.dlweb/?url=http://example.org/</code>.</p>"
        )
        return page.page("captures", body, 400 if refused else 200, current=HOME)
    address = f"{HOME}?url={quote(url, safe='')}"
    opens = calendar.opens_for(context.settings.consent, request.client)
    status, shown = await calendar.section(
        context.client, url, request.query, calendar.nav_for(address), opens
    )
    formats = (
        f'<p class="muted">Every capture as <a href="{html.escape(address)}&amp;format=json">JSON'
        f'</a> or as a <a href="{html.escape(address)}&amp;format=link">Memento TimeMap</a>.</p>'
    )
    heading = f'<h1>Captures of <span class="url-text">{html.escape(url)}</span></h1>'
    body = f"{heading}\n{form}\n{shown}\n{formats}"
    return page.page(f"captures of {url}", body, status, current=HOME)
