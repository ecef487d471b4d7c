"""`http://date.dlweb/`: the researcher picks the date to browse at, per client address.

The page shows the captures of the page the client came from (`back`, else its Referer) in a
calendar whose days set the date, the dates this client set lately, and its switches (the date
banner; the live web and recording where the operator allows them). `/set` changes the setting
and goes back to the page; a `back` that is not an http(s) URL is refused, never followed.
"""

import html
import time
from collections import OrderedDict
from urllib.parse import quote, urlencode, urlsplit

from archive.timestamps import BadTime, format_iso, parse_time

from . import calendar, page
from .answer import Answer, HarborContext
from .request import HarborRequest, is_harbor
from .settings import ClientSetting

HOME = "http://date.dlweb/"
RECENT = 5  # dates kept per client
RECENT_CLIENTS = 1024  # clients whose dates are kept, those who set one last

# Each client's last dates set, the latest first (None: the latest captures). In memory: they
# help a researcher go back and forth between a few dates, and a restart may forget them.
_recent: "OrderedDict[str, list[int | None]]" = OrderedDict()


class BadBack(ValueError):
    """A `back` parameter that is not an http or https URL."""


def _back(request: HarborRequest) -> str:
    """The page to go back to: `back` (BadBack when it is not an http(s) URL), else the Referer
    when it is one and not this harbor's own page, else nothing."""
    given = request.query.get("back")
    if given is not None:
        if not _web_page(given):
            raise BadBack(
                f"back={given[:200]!r} is not an http or https URL: the date harbor goes back"
                " only to a web page"
            )
        return given
    referer = request.headers.get("referer", "")
    if not _web_page(referer):
        return ""
    return "" if (urlsplit(referer).hostname or "").lower().rstrip(".") == "date.dlweb" else referer


def _web_page(url: str) -> bool:
    """Whether `url` is an http or https URL with a host."""
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def _remember(client: str, at: int | None) -> None:
    dates = [at, *(other for other in _recent.pop(client, []) if other != at)]
    _recent[client] = dates[:RECENT]
    while len(_recent) > RECENT_CLIENTS:
        _recent.popitem(last=False)


def _set_href(back: str, **params: str) -> str:
    return "/set?" + urlencode({**params, "back": back})


async def _page(
    context: HarborContext, request: HarborRequest, back: str, note: str = "", status: int = 200
) -> Answer:
    setting = context.settings.get(request.client)
    shown = "the latest capture" if setting.at is None else format_iso(setting.at)
    current = format_iso(setting.at if setting.at is not None else time.time_ns() // 1000)
    day, clock = current[:10], current[11:19]
    kept = html.escape(back)
    hidden = f'<input type="hidden" name="back" value="{kept}">'
    parts = ["<h1>Browsing date</h1>"]
    if note:
        text = html.escape(note)
        parts.append(f'<p class="error" role="alert"><span class="url-text">{text}</span></p>')
    parts.append(
        f"<p>You ({html.escape(request.client)}) see every page as it was at"
        f" <b>{html.escape(shown)}</b> (the closest capture to that date).</p>\n"
        '<form action="/set" method="get">'
        f'<label>Day <input type="date" name="day" value="{day}" required></label>'
        f'<label>Time (UTC) <input type="time" name="time" value="{clock}" step="1"></label>'
        f"{hidden}<button>Browse at this date</button></form>\n"
        '<form action="/set" method="get"><label>Or any date <input name="at"'
        ' placeholder="2024, 202405, 2024-05-01T12:00:00Z"></label>'
        f"{hidden}<button>Go</button></form>\n"
        f'<p><a href="{html.escape(_set_href(back, at="latest"))}">Browse the latest'
        " captures</a></p>"
    )
    recent = _recent.get(request.client, [])
    if recent:
        items = "".join(
            f'<li><a href="{html.escape(_set_href(back, at="latest" if at is None else format_iso(at)))}">'
            f"{'the latest captures' if at is None else format_iso(at)}</a></li>"
            for at in recent
        )
        parts.append(f'<h2>Dates you used lately</h2>\n<ul class="recent">{items}</ul>')
    if back and not is_harbor(urlsplit(back).hostname or ""):
        address = f"{HOME}?back={quote(back, safe='')}"

        found, shown_calendar = await calendar.section(
            context.client, back, request.query, calendar.nav_for(address), setting.at, setting.at
        )
        status = max(status, found)
        parts.append(f'<h2>Captures of <span class="url-text">{kept}</span></h2>\n{shown_calendar}')
    parts.append("<h2>Settings</h2>")
    parts.append(_switch("Date banner atop archived pages", "banner", setting.banner, back))
    if context.live_allowed:
        parts.append(_switch("Live web for pages the archive lacks", "live", setting.live, back))
        parts.append(
            _switch(
                "Recording (every page you browse comes from the live web and is archived)",
                "record",
                setting.record,
                back,
            )
        )
    if back:
        parts.append(f'<p><a class="url-text" href="{kept}">Back to {kept}</a></p>')
    return page.page("browsing date", "\n".join(parts), status, current=HOME)


def _switch(what: str, name: str, on: bool, back: str) -> str:
    """A paragraph saying whether a setting is on, with the link that turns it the other way."""
    state, other = ("on", "off") if on else ("off", "on")
    return (
        f"<p>{html.escape(what)}: <b>{state}</b>. "
        f'<a href="{html.escape(_set_href(back, **{name: other}))}">Turn it {other}</a></p>'
    )


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    try:
        back = _back(request)
    except BadBack as exc:
        return await _page(context, request, "", str(exc), 400)
    if request.path != "/set":
        return await _page(context, request, back)
    for name in ("live", "record", "banner"):
        if request.query.get(name, "on") not in ("on", "off"):
            said = f"{name}={request.query[name][:20]!r}: give on or off"
            return await _page(context, request, back, said, 400)
    setting = context.settings.get(request.client)
    at_text = request.query.get("at")
    if at_text is None and "day" in request.query:  # the calendar's day, and time if given
        at_text = f"{request.query['day']}T{request.query.get('time') or '00:00:00'}"
    at = setting.at
    if at_text is not None:
        try:
            at = None if at_text == "latest" else parse_time(at_text)
        except BadTime as exc:
            return await _page(context, request, back, str(exc), 400)
    live = request.query["live"] == "on" if "live" in request.query else setting.live
    record = request.query["record"] == "on" if "record" in request.query else setting.record
    banner = request.query["banner"] == "on" if "banner" in request.query else setting.banner
    turned_on = any(request.query.get(name) == "on" for name in ("live", "record"))
    if turned_on and not context.live_allowed:
        return Answer(
            403, b"The operator of this archive does not allow the live web.\n", "text/plain"
        )
    context.settings.set(request.client, ClientSetting(at, live, record, banner))
    if at_text is not None:
        _remember(request.client, at)
    target = request.query.get("back") or HOME
    return Answer(303, b"", page.HTML, [("Location", target)])
