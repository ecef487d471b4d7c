"""`http://map.dlweb/?site=ID[&at=DATE][&nodes=N]`: a site's pages and the links between them
as one of its crawls found them, drawn on the server (svg_graph.py), each page a link that opens
it at that date.

The graph is the scheduler's (`GET /api/sites/{id}/graph`): the crawl begun last at or before
`at` (4 to 14 digits, YYYYMMDDhhmmss, or ISO 8601), the last crawl without it. At most `nodes`
pages are drawn (DEFAULT_NODES, up to MAX_NODES), those the crawl met first, and a note says how
many were left out. Below the drawing the same pages are listed by level, the plain way to read
the map. A page opens through the date harbor, at `at`, else at the end of the crawl, as the
calendars' links do (calendar.py). Every parameter is checked: a bad one gets the page with the
form and what is wrong (400); an unknown site or a site without a crawl at that date, 404.
"""

import html
from urllib.parse import quote, urlencode

from archive.scheduler_answers import CrawlGraph
from archive.timestamps import BadTime, format_iso, parse_time

from . import page, svg_graph
from .answer import Answer, HarborContext
from .calendar import Opens, opens_for
from .request import HarborRequest
from .scheduler_api import SchedulerFailure, ask, failure_page

__all__ = ["HOME", "address", "answer"]

HOME = "http://map.dlweb/"
DIRECTORY = "http://directory.dlweb/"
DEFAULT_NODES = 80
MAX_NODES = 400
_LONGEST_ID = 12  # digits of a site's number, at most


class BadMapQuery(ValueError):
    """A parameter of the map that cannot be read; the message names it."""


def address(site: int) -> str:
    return f"{HOME}?site={site}"


def parse_query(query: dict[str, str]) -> tuple[int | None, int | None, int]:
    """The site's number (None: not given), the date (UTC microseconds; None: the last crawl)
    and the pages to draw; BadMapQuery saying which is wrong."""
    site_text, at_text = query.get("site", ""), query.get("at", "")
    nodes_text = query.get("nodes", str(DEFAULT_NODES))
    site = _whole(site_text) if site_text else None
    if site_text and (site is None or site < 1):
        raise BadMapQuery(f"site={site_text[:40]!r} is not a site number (1, 2, ...)")
    try:
        at = parse_time(at_text) if at_text else None
    except BadTime as exc:
        raise BadMapQuery(f"at: {exc.reason}") from None
    nodes = _whole(nodes_text)
    if nodes is None or not 1 <= nodes <= MAX_NODES:
        raise BadMapQuery(
            f"nodes={nodes_text[:40]!r} is not a number of pages from 1 to {MAX_NODES}"
        )
    return site, at, nodes


def _whole(text: str) -> int | None:
    digits = text.isascii() and text.isdigit() and len(text) <= _LONGEST_ID
    return int(text) if digits else None


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path != "/":
        return Answer(404, b"map.dlweb has / only: /?site=ID&at=DATE\n", "text/plain")
    query = request.query
    try:
        site, at, nodes = parse_query(query)
    except BadMapQuery as exc:
        return _form_page(query, str(exc))
    if site is None:
        return _form_page(query, "")
    asked = {"pages": str(nodes)} | ({} if at is None else {"at": format_iso(at)})
    try:
        graph = await ask(context, CrawlGraph, f"/api/sites/{site}/graph", asked)
    except SchedulerFailure as exc:
        return failure_page(f"Map of site {site}", exc, DIRECTORY)
    opens = opens_for(context.settings.consent, request.client)
    shown_at = at if at is not None else int(graph.finished) * 1_000_000
    return _map_page(graph, shown_at, nodes, query, opens)


def _form(query: dict[str, str]) -> str:
    values = {key: html.escape(query.get(key, "")) for key in ("site", "at")}
    return (
        '<form action="/" method="get">'
        f'<label>Site number <input name="site" inputmode="numeric" required'
        f' value="{values["site"]}"></label>'
        f'<label>Date (YYYYMMDDhhmmss) <input name="at" value="{values["at"]}"></label>'
        "<button>Show the map</button></form>"
    )


def _form_page(query: dict[str, str], refused: str) -> Answer:
    """The form to ask for a map, and why the query was `refused` (400) when it was."""
    said = f'<p class="error" role="alert">{html.escape(refused)}</p>\n' if refused else ""
    body = (
        f"<h1>Map of a site</h1>\n{said}{_form(query)}\n<p>Pick a site in the"
        f' <a href="{DIRECTORY}">directory of sites</a>, or give its number.</p>'
    )
    return page.page("map of a site", body, 400 if refused else 200, current=DIRECTORY)


def _map_page(
    graph: CrawlGraph, at: int, nodes: int, query: dict[str, str], opens: Opens
) -> Answer:
    when = format_iso(at)
    drawn = svg_graph.layout(len(graph.pages), graph.edges, nodes)
    start = graph.start_url
    drawing = svg_graph.svg(
        drawn,
        graph.pages,
        lambda url: opens(at, url),
        lambda url: f"{url} at {when}",
        lambda url: svg_graph.label_of(url, start),
        f"The pages of {start} and their links, as crawl {graph.crawl} found them",
    )
    body = (
        f'<div class="site-map-page"><h1>Map of <span class="url-text">{html.escape(start)}'
        f"</span></h1>\n{_form(query)}\n{_summary(graph, when, drawn, nodes)}"
        f'<div class="scroll">{drawing}</div>\n{_listed(graph, drawn, at, opens)}</div>'
    )
    return page.page(f"map of {start}", body, current=DIRECTORY)


def _summary(graph: CrawlGraph, when: str, drawn: svg_graph.Layout, nodes: int) -> str:
    crawled = (
        f"<p>As crawl {graph.crawl} found it, from {_second(graph.started)} to"
        f" {_second(graph.finished)}: {graph.total_pages:,} pages,"
        f" {graph.total_edges:,} links between them. Each page opens as it was at {when}."
        f' <a href="http://captures.dlweb/?url={quote(graph.start_url, safe="")}">Captures of'
        f" the start page</a>.</p>\n"
    )
    notes = []
    shown = len(drawn.placed)
    if shown < graph.total_pages:
        more = ""
        if nodes < MAX_NODES:
            bigger = urlencode({"site": graph.site, "at": when, "nodes": MAX_NODES})
            more = f' <a href="/?{html.escape(bigger)}">Draw up to {MAX_NODES}</a>.'
        notes.append(
            f"Only {shown:,} of the {graph.total_pages:,} pages are drawn and listed: those"
            f" the crawl met first.{more}"
        )
    if graph.truncated:
        notes.append("The crawl kept the graph of only the first pages it met: the site has more.")
    return "".join(f'<p class="note">{note}</p>\n' for note in notes) + crawled


def _second(seconds: float) -> str:
    return format_iso(int(seconds) * 1_000_000)


def _listed(graph: CrawlGraph, drawn: svg_graph.Layout, at: int, opens: Opens) -> str:
    """The drawn pages as lists, a list a level, each page with the number of its links."""
    out: dict[int, int] = {}
    for a, _ in graph.edges:
        out[a] = out.get(a, 0) + 1
    parts = ["<h2>The pages, by links from the start page</h2>"]
    for level, placed in drawn.by_level():
        if level is None:
            heading = "Reached by no link from the start page"
        elif level == 0:
            heading = "The start page"
        else:
            heading = f"{level} link{'s' if level > 1 else ''} away"
        items = "".join(
            f'<li><a class="url-text" href="{html.escape(opens(at, graph.pages[n.page]))}">'
            f"{html.escape(graph.pages[n.page])}</a>"
            f' <span class="muted">(links to {out.get(n.page, 0)} of these pages)</span></li>'
            for n in placed
        )
        parts.append(f"<h3>{heading} ({len(placed)})</h3><ul>{items}</ul>")
    return "\n".join(parts)
