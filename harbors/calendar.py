"""A URL's captures as a researcher looks over them, for the captures and date harbors: a
histogram of captures per year (SVG), the chosen year's months and a heat map of the chosen
month's days (HTML tables), then the captures of that month or of one day of it.

Everything is drawn on the server, without a script, from counts per day that the storage node
makes from the structure file (`ClusterClient.capture_days`): a URL of 100,000 captures makes a
page of a few kilobytes, and only the captures listed are read. Each day and each capture links
to the date harbor, which sets the client's date to it and opens the page: the link carries a
token for that client, that date and that page (consent.py), so it works with one click.
"""

import html
import re
from calendar import Calendar, month_abbr, month_name, monthrange
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from urllib.parse import parse_qsl, quote, urlencode

from archive.cluster import ClusterClient
from archive.errors import ClientFault, DlwebError, NotFound
from archive.link_format import escape_uri
from archive.serving import status_of
from archive.structure import Capture, DayCount
from archive.timestamps import format_digits, format_iso, from_micros, to_micros

from .consent import Consent

__all__ = ["BadChoice", "Choice", "Opens", "choose", "opens_for", "section", "set_link"]

LISTED = 100  # captures listed under the calendar at most
HEAT_LEVELS = 4
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# The histogram's geometry, in SVG units: a slot a year, bars up to BAR_TOP high.
SLOT, BAR_WIDTH, BAR_TOP, HEIGHT = 36, 26, 96, 124
_YEAR = re.compile(r"[0-9]{4}")
_SMALL = re.compile(r"[0-9]{1,2}")

# The address of the harbor's own page with these parameters (the URL is already in it).
Nav = Callable[[dict[str, str]], str]
# The link that sets the client's date to a time and opens a page (set_link, for one client).
Opens = Callable[[int, str], str]


class BadChoice(ClientFault):
    """A year, month or day that cannot be read."""


@dataclass(frozen=True)
class Choice:
    """The month the calendar shows, and the day whose captures are listed (None: all the
    month's)."""

    year: int
    month: int
    day: int | None = None

    def span(self) -> tuple[int, int]:
        """The first and last microsecond of the chosen day, or month."""
        if self.day is not None:
            first = last = self.day
        else:
            first, last = 1, monthrange(self.year, self.month)[1]
        start = to_micros(datetime(self.year, self.month, first, tzinfo=UTC))
        end = to_micros(datetime(self.year, self.month, last, 23, 59, 59, 999_999, tzinfo=UTC))
        return start, end

    def name(self) -> str:
        month = f"{month_name[self.month]} {self.year}"
        return month if self.day is None else f"{self.day} {month}"

    def where(self) -> str:
        """ "on 3 June 2021", or "in June 2021" when no day is chosen."""
        return f"on {self.name()}" if self.day is not None else f"in {self.name()}"


def nav_for(address: str) -> Nav:
    """The links of a calendar on the page at `address` (which has a query already): the same
    page with other parameters added."""

    def nav(params: dict[str, str]) -> str:
        return f"{address}&{urlencode(params)}"

    return nav


def set_link(consent: Consent, client: str, at: int, back: str) -> str:
    """The date harbor's link that sets the client's date to `at` and opens `back` (a time
    with a fraction of a second in ISO 8601, so that it names that very capture), with the
    link token that lets that client, and no other, do that and nothing else."""
    when = format_digits(at) if at % 1_000_000 == 0 else quote(format_iso(at))
    page = escape_uri(back)
    token = consent.link_token(client, at, page)
    return f"http://date.dlweb/set?at={when}&back={quote(page, safe='')}&token={token}"


def opens_for(consent: Consent, client: str) -> Opens:
    """The links of one client's page that set its date and open a page."""

    def opens(at: int, back: str) -> str:
        return set_link(consent, client, at, back)

    return opens


def choose(query: dict[str, str], days: list[DayCount], near: int | None = None) -> Choice:
    """The month and day asked for by `year`, `month` and `day`; without them, the month of
    `near` (UTC microseconds) when it has captures, else the latest month with captures.
    BadChoice when one cannot be read."""
    year_text, month_text, day_text = (query.get(key) for key in ("year", "month", "day"))
    if year_text is None:
        if month_text is not None or day_text is not None:
            raise BadChoice("give the year with the month or the day: year=2021&month=06")
        held = {(d.day.year, d.day.month) for d in days}
        if near is not None:
            moment = from_micros(near)
            if (moment.year, moment.month) in held:
                return Choice(moment.year, moment.month)
        return Choice(days[-1].day.year, days[-1].day.month)
    if not _YEAR.fullmatch(year_text) or year_text == "0000":
        raise BadChoice(f"year={year_text[:20]!r}: give a year of four digits, such as 2021")
    year = int(year_text)
    if month_text is None:
        if day_text is not None:
            raise BadChoice("give the month with the day: year=2021&month=06&day=03")
        in_year = [d.day.month for d in days if d.day.year == year]
        return Choice(year, in_year[-1] if in_year else 1)
    if not _SMALL.fullmatch(month_text) or not 1 <= int(month_text) <= 12:
        raise BadChoice(f"month={month_text[:20]!r}: give a month from 01 to 12")
    month = int(month_text)
    if day_text is None:
        return Choice(year, month)
    last = monthrange(year, month)[1]
    if not _SMALL.fullmatch(day_text) or not 1 <= int(day_text) <= last:
        raise BadChoice(
            f"day={day_text[:20]!r}: {month_name[month]} {year} has days from 01 to {last}"
        )
    return Choice(year, month, int(day_text))


async def section(
    client: ClusterClient,
    url: str,
    query: dict[str, str],
    nav: Nav,
    opens: Opens,
    near: int | None = None,
    current: int | None = None,
) -> tuple[int, str]:
    """The HTTP status and the HTML of a URL's histogram, calendar and listed captures, with
    a message saying what is wrong when something is (400, 404 or 500, never a traceback).
    `near` picks the month shown by default; `current` is the client's date, marked."""
    try:
        days = await client.capture_days(url)
        if not days:
            raise NotFound(f"{url} is not in the archive")
    except DlwebError as exc:
        return _failure(exc)
    try:
        choice = choose(query, days, near)
    except BadChoice as exc:
        shown = choose({}, days, near)
        summary = _summary(url, days, opens)
        return 400, "\n".join((_error(str(exc)), summary, _histogram(days, shown, nav)))
    start, end = choice.span()
    try:
        # Records of other kinds (WARC requests and metadata) are read too: room for them.
        listed = (await client.captures_between(url, start, end, 3 * LISTED))[:LISTED]
    except DlwebError as exc:
        return _failure(exc)
    parts = [
        _summary(url, days, opens),
        *_outside(url, days, current),
        _histogram(days, choice, nav),
        _months(days, choice, nav),
        _month(url, days, choice, nav, opens, current),
    ]
    counted = sum(d.count for d in days if start <= d.first <= end)
    if counted:
        parts.append(_listed(url, days, choice, listed, counted, nav, opens))
        return 200, "\n".join(parts)
    if not any(d.day.year == choice.year for d in days):
        where = f"in {choice.year}"
    else:
        where = choice.where()
    first, last = format_iso(days[0].first), format_iso(days[-1].last)
    message = (
        f"No capture of {url} {where}: it was captured from {first} to {last}."
        " Pick a year, a month or a day that has some."
    )
    return 404, "\n".join((_error(message), *parts))


def _error(text: str) -> str:
    return f'<p class="error" role="alert"><span class="url-text">{html.escape(text)}</span></p>'


def _failure(exc: DlwebError) -> tuple[int, str]:
    """The status and message of a URL not archived, or of a cluster that cannot answer."""
    status = status_of(exc)
    if status >= 500:
        return status, _error(f"The archive cannot count the captures now: {exc}")
    return status, _error(str(exc))


def _summary(url: str, days: list[DayCount], opens: Opens) -> str:
    total = sum(d.count for d in days)
    first, last = days[0].first, days[-1].last
    return (
        f'<p class="summary">{total:,} capture{"s" if total != 1 else ""} on {len(days):,}'
        f' day{"s" if len(days) != 1 else ""}, the first <a href="{html.escape(opens(first, url))}">'
        f'{format_iso(first)}</a>, the last <a href="{html.escape(opens(last, url))}">'
        f"{format_iso(last)}</a>.</p>"
    )


def _outside(url: str, days: list[DayCount], current: int | None) -> list[str]:
    """A note when the client's date is before the URL's first capture or after its last:
    the page it sees is that capture, however far."""
    if current is None or days[0].first <= current <= days[-1].last:
        return []
    when, edge = ("before", days[0].first) if current < days[0].first else ("after", days[-1].last)
    which = "first" if when == "before" else "last"
    return [
        f'<p class="note">Your date, {format_iso(current)}, is {when} the {which} capture of'
        f' <span class="url-text">{html.escape(url)}</span> ({format_iso(edge)}): you see that'
        " one.</p>"
    ]


def _heat(count: int, most: int) -> int:
    """The heat level of a count, 0 for none, else 1 to HEAT_LEVELS against the largest."""
    if not count:
        return 0
    return max(1, min(HEAT_LEVELS, -(-HEAT_LEVELS * count // most)))


def _histogram(days: list[DayCount], choice: Choice, nav: Nav) -> str:
    """Captures per year, a bar each from the first year to the last, as an SVG drawing whose
    bars link to their year; a year without captures has an empty slot."""
    years: Counter[int] = Counter()
    for d in days:
        years[d.day.year] += d.count
    first, last = min(years), max(years)
    most = max(years.values())
    every = 1 if last - first < 20 else 5  # the years written under the bars
    bars = []
    for slot, year in enumerate(range(first, last + 1)):
        x = slot * SLOT + (SLOT - BAR_WIDTH) // 2
        label = ""
        if (year - first) % every == 0 or year == choice.year:
            label = (
                f'<text x="{x + BAR_WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle"'
                f' aria-hidden="true">{year}</text>'
            )
        count = years.get(year, 0)
        if not count:
            bars.append(
                f'<g class="year empty"><rect class="bar" x="{x}" y="{BAR_TOP - 1}"'
                f' width="{BAR_WIDTH}" height="1"/>{label}</g>'
            )
            continue
        high = max(2, round(BAR_TOP * count / most))
        words = f"{count:,} capture{'s' if count != 1 else ''} in {year}"
        chosen = ' aria-current="true"' if year == choice.year else ""
        bars.append(
            f'<a class="year{" chosen" if chosen else ""}" href="{html.escape(nav({"year": str(year)}))}"'
            f' aria-label="{words}" data-year="{year}" data-count="{count}"{chosen}>'
            f"<title>{words}</title>"
            f'<rect class="bar" x="{x}" y="{BAR_TOP - high}" width="{BAR_WIDTH}"'
            f' height="{high}"/>{label}</a>'
        )
    width = (last - first + 1) * SLOT
    return (
        '<h2 id="per-year">Captures per year</h2>\n'
        f'<svg class="histogram" role="group" aria-labelledby="per-year"'
        f' viewBox="0 0 {width} {HEIGHT}" width="{width}" height="{HEIGHT}">'
        f"{''.join(bars)}</svg>"
    )


def _months(days: list[DayCount], choice: Choice, nav: Nav) -> str:
    """The chosen year's months, each with its count and a link to its calendar."""
    months: Counter[int] = Counter()
    for d in days:
        if d.day.year == choice.year:
            months[d.day.month] += d.count
    most = max(months.values(), default=1)
    heads, cells = [], []
    for month in range(1, 13):
        heads.append(
            f'<th scope="col"><abbr title="{month_name[month]}">{month_abbr[month]}</abbr></th>'
        )
        count = months.get(month, 0)
        level = f"heat{_heat(count, most)}"
        chosen = month == choice.month
        marks = f' class="{level}{" chosen" if chosen else ""}"'
        if not count:
            cells.append(f"<td{marks}>0</td>")
            continue
        words = f"{count:,} capture{'s' if count != 1 else ''} in {month_name[month]} {choice.year}"
        link = nav({"year": str(choice.year), "month": f"{month:02d}"})
        current = ' aria-current="true"' if chosen else ""
        cells.append(
            f'<td{marks} data-count="{count}"><a href="{html.escape(link)}"'
            f' aria-label="{words}"{current}>{count:,}</a></td>'
        )
    return (
        # Focusable, so that a keyboard scrolls it where the twelve months are wider than the
        # window.
        '<div class="scroll" tabindex="0" role="region" aria-labelledby="per-month">'
        f'<table class="months"><caption id="per-month">Captures per month in {choice.year}'
        f"</caption><thead><tr>{''.join(heads)}</tr></thead>"
        f"<tbody><tr>{''.join(cells)}</tr></tbody></table></div>"
    )


def _month(
    url: str, days: list[DayCount], choice: Choice, nav: Nav, opens: Opens, current: int | None
) -> str:
    """The chosen month's heat map: a table of its weeks, each day with captures a link that
    sets the client's date to the day's first capture and opens the page."""
    counts = {d.day: d for d in days if (d.day.year, d.day.month) == (choice.year, choice.month)}
    most = max((d.count for d in counts.values()), default=1)
    today = None if current is None else from_micros(current).date()
    heads = "".join(
        f'<th scope="col"><abbr title="{name}">{name[:3]}</abbr></th>' for name in WEEKDAYS
    )
    rows = []
    for week in Calendar().monthdayscalendar(choice.year, choice.month):
        cells = []
        for number in week:
            if not number:
                cells.append('<td class="pad"></td>')
                continue
            day = date(choice.year, choice.month, number)
            held = counts.get(day)
            marks = " chosen" if number == choice.day else ""
            marks += " current" if day == today else ""
            if held is None:
                words = f"no capture on {day.isoformat()}"
                cells.append(f'<td class="day heat0{marks}" aria-label="{words}">{number}</td>')
                continue
            words = f"{held.count:,} capture{'s' if held.count != 1 else ''} on {day.isoformat()}"
            at = ' aria-current="date"' if day == today else ""
            cells.append(
                f'<td class="day heat{_heat(held.count, most)}{marks}" data-day="{day.isoformat()}"'
                f' data-count="{held.count}"><a href="{html.escape(opens(held.first, url))}"'
                f' aria-label="{words}"{at}>{number}<span class="count" aria-hidden="true">'
                f"{held.count:,}</span></a></td>"
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<h2 id="month">{month_name[choice.month]} {choice.year}</h2>\n'
        f"{_neighbours(days, choice, nav)}"
        '<p class="muted">A day opens the page as its first capture that day was (UTC).</p>\n'
        f'<table class="calendar" aria-labelledby="month"><thead><tr>{heads}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _neighbours(days: list[DayCount], choice: Choice, nav: Nav) -> str:
    """Links to the nearest months with captures before and after the chosen one."""
    months = sorted({(d.day.year, d.day.month) for d in days})
    chosen = (choice.year, choice.month)
    before = [m for m in months if m < chosen]
    after = [m for m in months if m > chosen]
    links = []
    for rel, found, text in (("prev", before[-1:], "Earlier: "), ("next", after[:1], "Later: ")):
        for year, month in found:
            link = nav({"year": str(year), "month": f"{month:02d}"})
            links.append(
                f'<a rel="{rel}" href="{html.escape(link)}">{text}{month_name[month]} {year}</a>'
            )
    return f'<p class="months-nav">{" ".join(links)}</p>\n' if links else ""


def _listed(
    url: str,
    days: list[DayCount],
    choice: Choice,
    listed: list[Capture],
    counted: int,
    nav: Nav,
    opens: Opens,
) -> str:
    """The captures of the chosen month or day (the first LISTED), each a link that browses it
    at its date; and a form that lists one day's."""
    where = choice.where()
    shown = f"The first {len(listed):,} of {counted:,}" if len(listed) < counted else f"{counted:,}"
    rows = "".join(
        f'<tr><td><a href="{html.escape(opens(c.time, url))}">{format_iso(c.time)}</a></td>'
        f"<td>{c.status}</td><td>{c.kind.name.lower()}</td></tr>"
        for c in listed
    )
    held = [d.day.day for d in days if (d.day.year, d.day.month) == (choice.year, choice.month)]
    options = '<option value="">every day</option>' + "".join(
        f'<option value="{n:02d}"{" selected" if n == choice.day else ""}>{n}</option>'
        for n in held
    )
    every = nav({"year": str(choice.year), "month": f"{choice.month:02d}"})
    action, _, fields = every.partition("?")
    hidden = "".join(
        f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
        for name, value in parse_qsl(fields, keep_blank_values=True)
    )
    whole = (
        f' <a href="{html.escape(every)}">All of {month_name[choice.month]} {choice.year}</a>'
        if choice.day is not None
        else ""
    )
    return (
        f'<h2 id="listed">Captures {where}</h2>\n'
        f"<p>{shown} capture{'s' if counted != 1 else ''}; pick one to browse the page at its"
        f" date.{whole}</p>\n"
        f'<form action="{html.escape(action)}" method="get">{hidden}'
        f'<label>Day of {month_name[choice.month]}<select name="day">{options}</select></label>'
        "<button>List the captures</button></form>\n"
        '<table class="captures" aria-labelledby="listed"><thead><tr><th scope="col">date (UTC)'
        '</th><th scope="col">status</th><th scope="col">kind</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
