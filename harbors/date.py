"""`http://date.dlweb/`: the researcher picks the date to browse at, per client address.

The page shows the captures of the page the client came from (`back`, else its Referer) in a
calendar whose days set the date, the dates this client set lately, and its switches (the date
banner; the live web and recording where the operator allows them).

`/set` changes the setting with the client's consent only (consent.py): a POST of one of the
page's forms, which carry the client's form token, or a GET of a link carrying the link token of
that date and that page (the calendars', search hits', stream times', the banner's). Anything
else (a link typed or printed, a request an archived page makes: an image, a form, a fetch; a
form with another client's token) changes nothing and gets the page with what was asked in a
form that does it with one click. `back` is an http(s) URL (request.py); after a change the
harbor goes back to it only when the archive holds captures of it or a harbor serves it, so that
`/set` sends nobody elsewhere: otherwise the page says so and links to it.
"""

import html
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from urllib.parse import quote, urlsplit

from archive.errors import ClientFault, DlwebError
from archive.link_format import escape_uri
from archive.timestamps import MAX_TIME, format_iso, parse_time

from . import calendar, page
from .answer import Answer, HarborContext
from .request import BadParameter, HarborRequest, is_harbor, web_url
from .settings import ClientSetting

HOME = "http://date.dlweb/"
RECENT = 5  # dates kept per client
RECENT_CLIENTS = 1024  # clients whose dates are kept, those who set one last
SWITCHES = {"banner": "the date banner", "live": "the live web", "record": "recording"}

# Each client's last dates set, the latest first (None: the latest captures). In memory: they
# help a researcher go back and forth between a few dates, and a restart may forget them.
_recent: "OrderedDict[str, list[int | None]]" = OrderedDict()


@dataclass(frozen=True)
class Change:
    """What a `/set` request asks for: a date (if `dated`; `at` None for the latest captures)
    and switches turned on (True) or off."""

    dated: bool = False
    at: int | None = None
    switches: dict[str, bool] = field(default_factory=dict)

    def applied(self, setting: ClientSetting) -> ClientSetting:
        return ClientSetting(
            self.at if self.dated else setting.at,
            self.switches.get("live", setting.live),
            self.switches.get("record", setting.record),
            self.switches.get("banner", setting.banner),
        )

    def fields(self) -> list[tuple[str, str]]:
        """The form fields that ask for this change again."""
        fields = []
        if self.dated:
            fields.append(("at", "latest" if self.at is None else format_iso(self.at)))
        return fields + [(name, "on" if on else "off") for name, on in self.switches.items()]

    def words(self) -> str:
        """The change in words, such as "browse at 2019-03-01T00:00:00Z, turn the banner on"."""
        parts = []
        if self.dated:
            at = self.at
            parts.append(
                "browse the latest captures" if at is None else f"browse at {format_iso(at)}"
            )
        for name, on in self.switches.items():
            parts.append(f"turn {SWITCHES[name]} {'on' if on else 'off'}")
        return ", ".join(parts)


def _change(fields: dict[str, str]) -> Change:
    """The change a `/set` request's fields ask for; BadTime or BadParameter when one cannot be
    read."""
    switches = {}
    for name in SWITCHES:
        value = fields.get(name)
        if value is not None:
            if value not in ("on", "off"):
                raise BadParameter(f"{name}={value[:20]!r}: give on or off")
            switches[name] = value == "on"
    text = fields.get("at")
    if text is None and "day" in fields:  # the calendar's day, and time if given
        text = f"{fields['day']}T{fields.get('time') or '00:00:00'}"
    if text is None:
        return Change(switches=switches)
    return Change(True, None if text == "latest" else parse_time(text), switches)


def _back(request: HarborRequest, fields: dict[str, str]) -> str:
    """The page to go back to: `back` (BadParameter when it is not an http(s) URL), else the
    Referer when it is one and not this harbor's own page, else nothing."""
    given = request.url("back", fields)
    if given:
        return given
    try:
        referer = web_url("referer", request.headers.get("referer", ""))
    except BadParameter:
        return ""
    return "" if (urlsplit(referer).hostname or "").lower().rstrip(".") == "date.dlweb" else referer


def _remember(client: str, at: int | None) -> None:
    dates = [at, *(other for other in _recent.pop(client, []) if other != at)]
    _recent[client] = dates[:RECENT]
    while len(_recent) > RECENT_CLIENTS:
        _recent.popitem(last=False)


def _form(
    token: str,
    back: str,
    fields: list[tuple[str, str]],
    button: str,
    lead: str = "",
    kind: str = "",
) -> str:
    """A form that POSTs a change to `/set` with the client's form token and `back`; `lead` is
    the markup before its button (its inputs, already escaped)."""
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(value)}">'
        for name, value in [*fields, ("back", back), ("token", token)]
    )
    marks = f' class="{kind}"' if kind else ""
    return (
        f'<form action="/set" method="post"{marks}>{lead}{hidden}'
        f"<button>{html.escape(button)}</button></form>"
    )


def _messages(error: str, note: str) -> list[str]:
    """The error and the note shown atop the page."""
    parts = []
    if error:
        text = html.escape(error)
        parts.append(f'<p class="error" role="alert"><span class="url-text">{text}</span></p>')
    if note:
        parts.append(
            f'<p class="note" role="status"><span class="url-text">{html.escape(note)}</span></p>'
        )
    return parts


def _date_forms(request: HarborRequest, setting: ClientSetting, token: str, back: str) -> str:
    """The date the client browses at, and the forms that pick another."""
    shown = "the latest capture" if setting.at is None else format_iso(setting.at)
    current = format_iso(setting.at if setting.at is not None else time.time_ns() // 1000)
    day, clock = current[:10], current[11:19]
    picked = (
        f'<label>Day <input type="date" name="day" value="{day}" required></label>'
        f'<label>Time (UTC) <input type="time" name="time" value="{clock}" step="1"></label>'
    )
    typed = (
        '<label>Or any date <input name="at" placeholder="2024, 202405, 2024-05-01T12:00:00Z">'
        "</label>"
    )
    return (
        f"<p>You ({html.escape(request.client)}) see every page as it was at"
        f" <b>{html.escape(shown)}</b> (the closest capture to that date).</p>\n"
        f"{_form(token, back, [], 'Browse at this date', picked)}\n"
        f"{_form(token, back, [], 'Go', typed)}\n"
        f"{_form(token, back, [('at', 'latest')], 'Browse the latest captures')}"
    )


def _recent_dates(client: str, token: str, back: str) -> list[str]:
    """The dates this client used lately, each a form that browses at it again."""
    recent = _recent.get(client, [])
    if not recent:
        return []
    items = "".join(
        "<li>"
        + _form(
            token,
            back,
            [("at", "latest" if at is None else format_iso(at))],
            "the latest captures" if at is None else format_iso(at),
            kind="inline",
        )
        + "</li>"
        for at in recent
    )
    return [f'<h2>Dates you used lately</h2>\n<ul class="recent">{items}</ul>']


async def _captures(
    context: HarborContext, request: HarborRequest, setting: ClientSetting, back: str
) -> tuple[int, str]:
    """The calendar of the captures of `back`, and the status it was found with."""
    address = f"{HOME}?back={quote(back, safe='')}"
    opens = calendar.opens_for(context.settings.consent, request.client)
    found, shown_calendar = await calendar.section(
        context.client,
        back,
        request.query,
        calendar.nav_for(address),
        opens,
        setting.at,
        setting.at,
    )
    kept = html.escape(back)
    return found, f'<h2>Captures of <span class="url-text">{kept}</span></h2>\n{shown_calendar}'


def _settings(context: HarborContext, setting: ClientSetting, back: str, token: str) -> list[str]:
    """The client's switches, the live web and recording only where the operator allows them."""
    parts = ["<h2>Settings</h2>"]
    parts.append(_switch("Date banner atop archived pages", "banner", setting.banner, back, token))
    if context.live_allowed:
        parts.append(
            _switch("Live web for pages the archive lacks", "live", setting.live, back, token)
        )
        parts.append(
            _switch(
                "Recording (every page you browse comes from the live web and is archived)",
                "record",
                setting.record,
                back,
                token,
            )
        )
    return parts


async def _page(
    context: HarborContext,
    request: HarborRequest,
    back: str,
    error: str = "",
    status: int = 200,
    note: str = "",
    confirm: Change | None = None,
) -> Answer:
    """The date page: `error` or `note` atop it, and the `confirm`ation of a change asked for
    without the client's consent."""
    setting = context.settings.get(request.client)
    token = context.settings.consent.form_token(request.client)
    parts = ["<h1>Browsing date</h1>", *_messages(error, note)]
    if confirm is not None:
        parts.append(_confirmation(confirm, back, token))
    parts.append(_date_forms(request, setting, token, back))
    parts.extend(_recent_dates(request.client, token, back))
    if back and not is_harbor(urlsplit(back).hostname or ""):
        found, section = await _captures(context, request, setting, back)
        status = max(status, found)
        parts.append(section)
    parts.extend(_settings(context, setting, back, token))
    if back:
        target = html.escape(escape_uri(back))
        parts.append(f'<p><a class="url-text" href="{target}">Back to {html.escape(back)}</a></p>')
    return page.page("browsing date", "\n".join(parts), status, current=HOME)


def _confirmation(change: Change, back: str, token: str) -> str:
    """The change asked for in words, and the form that makes it with the client's token."""
    asked = change.words()
    asked = asked[:1].upper() + asked[1:] + (f" and open {back}" if back else "")
    return (
        '<section class="confirm" aria-labelledby="confirm">'
        '<h2 id="confirm">Confirm the change</h2>'
        "<p>Nothing is changed until you confirm here: the request did not come from your"
        " harbor pages.</p>"
        f'<p class="url-text">{html.escape(asked)}?</p>'
        f"{_form(token, back, change.fields(), 'Yes, change it')}</section>"
    )


def _switch(what: str, name: str, on: bool, back: str, token: str) -> str:
    """A setting's state, and the button that turns it the other way."""
    state, other = ("on", "off") if on else ("off", "on")
    lead = f"<span>{html.escape(what)}: <b>{state}</b>.</span>"
    return _form(token, back, [(name, other)], f"Turn it {other}", lead, "switch")


def _consented(
    context: HarborContext, request: HarborRequest, change: Change, back: str, token: str
) -> bool:
    """Whether the client consented to the change: a POST with its form token, or a GET with
    the link token of this date and page, asking nothing more."""
    consent, client = context.settings.consent, request.client
    if request.method == "POST":
        return consent.allows_form(client, token)
    if change.switches or not change.dated or change.at is None:
        return False
    return consent.allows_link(client, change.at, back, token)


async def _held(context: HarborContext, url: str, at: int | None) -> bool:
    """Whether the archive holds a capture of `url` (the answer the replay of the page asks
    for next, kept by the cluster client's cache)."""
    try:
        await context.client.closest(url, MAX_TIME if at is None else at)
    except DlwebError:
        return False
    return True


async def _went_back(
    context: HarborContext, request: HarborRequest, back: str, setting: ClientSetting
) -> Answer:
    """After a change: to `back` when the archive holds it or a harbor serves it, else the page
    that says so and links to it; to the page without a `back`."""
    if not back:
        return Answer(303, b"", page.HTML, [("Location", HOME)])
    if is_harbor(urlsplit(back).hostname or "") or await _held(context, back, setting.at):
        return Answer(303, b"", page.HTML, [("Location", escape_uri(back))])
    note = f"Done. The archive holds no capture of {back}: the link at the end opens it anyway."
    shown = await _page(context, request, back, note=note)
    return replace(shown, status=200)  # the change is made; the calendar's 404 is about `back`


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    try:
        fields = request.fields()
        back = _back(request, fields)
    except ClientFault as exc:
        return await _page(context, request, "", str(exc), exc.status)
    if request.path != "/set":
        return await _page(context, request, back)
    if request.method not in ("GET", "POST"):
        said = "/set takes a GET of a harbor's link or a POST of the date page's forms"
        refused = await _page(context, request, back, said, 405)
        return replace(refused, headers=[("Allow", "GET, POST")])
    try:
        change = _change(fields)
    except ClientFault as exc:
        return await _page(context, request, back, str(exc), exc.status)
    if not change.dated and not change.switches:
        return await _page(context, request, back)
    if (change.switches.get("live") or change.switches.get("record")) and not context.live_allowed:
        return Answer(
            403, b"The operator of this archive does not allow the live web.\n", "text/plain"
        )
    token = fields.get("token", "")
    if not _consented(context, request, change, back, token):
        return await _page(context, request, back, status=403 if token else 200, confirm=change)
    setting = change.applied(context.settings.get(request.client))
    context.settings.set(request.client, setting)
    if change.dated:
        _remember(request.client, change.at)
    return await _went_back(context, request, back, setting)
