"""`http://date.dlweb/`: the researcher picks the date to browse at, per client address."""

import html
import time
from urllib.parse import quote, urlsplit

from archive.timestamps import BadTime, format_iso, parse_time

from .answer import Answer, HarborContext
from .request import HarborRequest
from .settings import ClientSetting

HTML = "text/html; charset=utf-8"


def _page(context: HarborContext, request: HarborRequest, note: str = "") -> Answer:
    setting = context.settings.get(request.client)
    shown = "the latest capture" if setting.at is None else format_iso(setting.at)
    current = format_iso(setting.at if setting.at is not None else time.time_ns() // 1000)
    day, clock = current[:10], current[11:19]
    back = request.query.get("back") or request.headers.get("referer", "")
    live = ""
    if context.live_allowed:
        live = _switch("Live web for pages the archive lacks", "live", setting.live, back)
        live += _switch(
            "Recording (every page you browse comes from the live web and is archived)",
            "record",
            setting.record,
            back,
        )
    body = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>dlweb: browsing date</title></head>
<body><h1>Browsing date</h1>
{f"<p><b>{html.escape(note)}</b></p>" if note else ""}
<p>You ({html.escape(request.client)}) see every page as it was at <b>{html.escape(shown)}</b>
(the closest capture to that date).</p>
<form action="/set" method="get">
<label>Day: <input type="date" name="day" value="{day}" required></label>
<label>time (UTC): <input type="time" name="time" value="{clock}" step="1"></label>
<input type="hidden" name="back" value="{html.escape(back)}">
<button>Browse at this date</button></form>
<p>Or type any date: <form action="/set" method="get" style="display:inline">
<input name="at" placeholder="2024, 202405, 2024-05-01T12:00:00Z">
<input type="hidden" name="back" value="{html.escape(back)}"><button>Go</button></form></p>
<p><a href="/set?at=latest&amp;back={quote(back)}">Browse the latest captures</a></p>
{live}
{f'<p><a href="{html.escape(back)}">Back to {html.escape(back)}</a></p>' if back else ""}
</body></html>
"""
    return Answer(200 if not note else 400, body.encode(), HTML)


def _switch(what: str, name: str, on: bool, back: str) -> str:
    """A paragraph saying whether a setting is on, with the link that turns it the other way."""
    state, other = ("on", "off") if on else ("off", "on")
    return (
        f"<p>{html.escape(what)}: <b>{state}</b>. "
        f'<a href="/set?{name}={other}&amp;back={quote(back)}">Turn it {other}</a></p>\n'
    )


def answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path != "/set":
        return _page(context, request)
    setting = context.settings.get(request.client)
    at_text = request.query.get("at")
    if at_text is None and "day" in request.query:  # the calendar's day, and time if given
        at_text = f"{request.query['day']}T{request.query.get('time') or '00:00:00'}"
    at = setting.at
    if at_text is not None:
        try:
            at = None if at_text == "latest" else parse_time(at_text)
        except BadTime as exc:
            return _page(context, request, str(exc))
    live = request.query["live"] == "on" if "live" in request.query else setting.live
    record = request.query["record"] == "on" if "record" in request.query else setting.record
    banner = request.query["banner"] == "on" if "banner" in request.query else setting.banner
    turned_on = any(request.query.get(name) == "on" for name in ("live", "record"))
    if turned_on and not context.live_allowed:
        return Answer(
            403, b"The operator of this archive does not allow the live web.\n", "text/plain"
        )
    context.settings.set(request.client, ClientSetting(at, live, record, banner))
    back = request.query.get("back", "")
    target = back if urlsplit(back).scheme in ("http", "https") else "http://date.dlweb/"
    return Answer(303, b"", HTML, [("Location", target)])
