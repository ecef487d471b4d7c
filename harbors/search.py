"""`http://search.dlweb/`: full-text search of the archived pages, as plain pages (no script).

- `/?q=QUERY[&from=DATE&to=DATE&offset=N&limit=N]`: the hits, best first, a page at a time, each
  with links that open it at its date (through the date harbor, which sets the client's date and
  then opens the URL), list the pages linking to it, the pages similar to it and its text
  history; beside them the facets of every match (domains, years, content types), each a link
  that narrows the query by a clause (`domain:"example.org"`, `year:2019`); a hit that is a
  title a recorded stream announced opens the stream's player from the moment it came on air;
- `/history?url=URL`: the URL's versions in the index, each with what changed in its text;
- `/backlinks?url=URL` and `/similar?url=URL`: the pages linking to it, and those nearest it.

A query or date that cannot be read is told in the page (400); without an index the page says to
run `dlweb search rebuild` (503). The search modules are loaded on a first search only.
"""

import asyncio
import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote, urlencode

from archive.errors import DlwebError
from archive.link_format import escape_uri
from archive.serving import status_of
from archive.timestamps import parse_time

from . import page
from .answer import Answer, HarborContext
from .calendar import Opens, opens_for
from .request import HarborRequest
from .streams import player

if TYPE_CHECKING:
    import tantivy

    from search.backlinks import Backlink, Neighbours
    from search.history import History
    from search.index import Answer as SearchAnswer
    from search.index import Hit

T = TypeVar("T")

__all__ = ["answer", "paging"]

HOME = "http://search.dlweb/"

PAGE_SIZE = 10
MAX_LIMIT = 100
MAX_OFFSET = 10_000  # deeper pages cost a heap of offset + limit hits: narrow the query instead
FACET_NAMES = {"domain": "Domain", "year": "Year", "content_type": "Type"}
HELP = (
    'Words are all required: <code>lighthouse keeper</code>; a phrase: <code>"east wing"</code>;'
    " <code>OR</code>, <code>AND</code>, <code>-word</code> (not), <code>( )</code>;"
    ' a field: <code>title:museum</code>, <code>domain:"bbc.co.uk"</code>,'
    " <code>year:2019</code>, <code>lang:fr</code>. Dates: <code>2019</code>,"
    " <code>2019-05</code>, <code>2019-05-01</code> or ISO 8601, UTC."
)
_OR = re.compile(r"\bOR\b")


def paging(params: dict[str, str]) -> tuple[int, int]:
    """The `offset` (0 to MAX_OFFSET) and `limit` (1 to MAX_LIMIT, PAGE_SIZE if not given)
    parameters; BadQuery when one is not such a whole number."""
    from search.errors import BadQuery

    offset, limit = params.get("offset", "0"), params.get("limit", str(PAGE_SIZE))
    if not offset.isdigit() or int(offset) > MAX_OFFSET:
        raise BadQuery(f"offset={offset!r}: give a whole number from 0 to {MAX_OFFSET:,}")
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
        raise BadQuery(f"limit={limit!r}: give a whole number from 1 to {MAX_LIMIT}")
    return int(offset), int(limit)


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    from search.errors import NoIndex

    routes = {"/": _results, "/history": _history, "/backlinks": _backlinks, "/similar": _similar}
    route = routes.get(request.path)
    if route is None:
        body = "<p>search.dlweb has /, /history, /backlinks and /similar.</p>"
        return _page(request, "Not here", body, 404)
    try:
        return await route(context, request)
    except NoIndex as exc:
        body = (
            f'<p class="error">{html.escape(str(exc))}</p><p>The archive\'s operator must build'
            " the index first: run <code>dlweb search rebuild</code>.</p>"
        )
        return _page(request, "No search index", body, 503)
    except DlwebError as exc:  # a query, a date or a URL that cannot be read; a page not indexed
        return _page(
            request,
            "Cannot answer",
            f'<p class="error">{html.escape(str(exc))}</p>',
            status_of(exc),
        )


async def _index(context: HarborContext) -> "tantivy.Index":
    """The search index, opened on a thread (it reads files)."""
    from search.index import open_index

    return await asyncio.to_thread(open_index, context.search_index)


async def _results(context: HarborContext, request: HarborRequest) -> Answer:
    from search.index import search, time_range

    query = request.query.get("q", "")
    if not query.strip():
        return _page(request, "Search the archive", "")
    offset, limit = paging(request.query)
    start, end = time_range(request.query.get("from"), request.query.get("to"))
    index = await _index(context)
    found = await asyncio.to_thread(search, index, query, limit, offset, start, end, True)
    opens = opens_for(context.settings.consent, request.client)
    return _page(request, query, _hits_html(request, query, found, limit, opens))


def _hits_html(
    request: HarborRequest, query: str, found: "SearchAnswer", limit: int, opens: Opens
) -> str:
    """The facets, the hits and the links to the pages before and after."""
    if not found.hits:
        said = "No page matches" if not found.total else "No more pages match"
        return f"<p>{said} <b>{html.escape(query)}</b>.</p>"
    first, last = found.offset + 1, found.offset + len(found.hits)
    parts = [
        _facets_html(request, query, found),
        f'<p class="total">Hits {first:,} to {last:,} of {found.total:,} matching page'
        f" versions for <b>{html.escape(query)}</b>.</p>",
        f'<ol class="hits" start="{first}">',
    ]
    for hit in found.hits:
        parts.append(_hit_html(hit, opens))
    parts.append("</ol>")
    moves = []
    if found.offset > 0:
        back = max(found.offset - limit, 0)
        moves.append(f'<a rel="prev" href="{_link(request, offset=back)}">previous</a>')
    if last < found.total:
        moves.append(f'<a rel="next" href="{_link(request, offset=last)}">next</a>')
    parts.append(f'<p class="pages">{" ".join(moves)}</p>')
    return "\n".join(parts)


def _hit_html(hit: "Hit", opens: Opens) -> str:
    """One hit: its title, URL, date, type and snippet, and its links. A stream's title opens the
    stream's player from the moment the title came on air, and links to the stream's timeline."""
    from search.stream_titles import STREAM_TITLE_TYPE

    about = quote(escape_uri(hit.url), safe="")
    if hit.content_type == STREAM_TITLE_TYPE:
        opened = html.escape(_open_at(opens, player(hit.url, "icy"), hit.time))
        links = (
            f'<a class="open" href="{opened}">play from this moment</a>'
            f'<a class="timeline" href="http://streams.dlweb/?url={about}">the stream\'s'
            " timeline</a>"
        )
    else:
        opened = html.escape(_open_at(opens, hit.url, hit.time))
        links = (
            f'<a class="open" href="{opened}">open at this date</a>'
            f'<a class="backlinks" href="/backlinks?url={about}">pages linking here</a>'
            f'<a class="similar" href="/similar?url={about}">similar pages</a>'
            f'<a class="history" href="/history?url={about}">text history</a>'
        )
    return (
        f'<li class="hit"><a class="title" href="{opened}">'
        f"{html.escape(hit.title or '(no title)')}</a><br>"
        f'<span class="url">{html.escape(hit.url)}</span> '
        f'<span class="date">{html.escape(hit.time)}</span> '
        f'<span class="type">{html.escape(hit.content_type)}</span><br>'
        f'<span class="snippet">{hit.snippet_html}</span><br>'  # escaped, words in <b>
        f'<span class="links">{links}</span></li>'
    )


def _facets_html(request: HarborRequest, query: str, found: "SearchAnswer") -> str:
    """Each facet's values with their counts, each a link to the query narrowed to it."""
    parts = ['<div class="facets">']
    for facet, name in FACET_NAMES.items():
        values = found.facets.get(facet, {})
        if not values:
            continue
        parts.append(f'<h2>{name}</h2><ul class="facet" id="facet-{facet}">')
        for value, count in values.items():
            clause = f"year:{value}" if facet == "year" else f'{facet}:"{value}"'
            shown = html.escape(value)
            if clause in query:  # already narrowed to it
                parts.append(f'<li><b>{shown}</b> <span class="count">{count:,}</span></li>')
                continue
            narrowed = f"({query}) {clause}" if _OR.search(query) else f"{query} {clause}"
            href = _link(request, q=narrowed, offset=0)
            parts.append(
                f'<li><a href="{href}">{shown}</a> <span class="count">{count:,}</span></li>'
            )
        parts.append("</ul>")
    parts.append("</div>")
    return "".join(parts)


def _link(request: HarborRequest, **changed: str | int) -> str:
    """This page's address with some parameters changed (offset 0 left out), escaped for HTML."""
    params = {name: request.query.get(name, "") for name in ("q", "from", "to", "limit")}
    params |= {name: str(value) for name, value in changed.items()}
    kept = {n: v for n, v in params.items() if v and (n, v) != ("offset", "0")}
    return html.escape("/?" + urlencode(kept))


def _open_at(opens: Opens, url: str, when: str) -> str:
    """The link that sets the client's date to `when` in the date harbor, which then opens
    `url`: the page as captured then."""
    return opens(parse_time(when), url)


async def _about_url(
    context: HarborContext,
    request: HarborRequest,
    read: Callable[["tantivy.Index", str], T],
    title: str,
    render: Callable[[str, T, Opens], str],
) -> Answer:
    """A page about one URL of the index (its history, backlinks or similar pages): the URL
    asked checked before the index is opened, then read on a thread."""
    from search.keys import asked_key

    url = request.url("url")
    asked_key(url)
    found = await asyncio.to_thread(read, await _index(context), url)
    opens = opens_for(context.settings.consent, request.client)
    return _page(request, f"{title} {url}", render(url, found, opens))


async def _history(context: HarborContext, request: HarborRequest) -> Answer:
    from search.history import history

    return await _about_url(context, request, history, "Text history of", _history_html)


async def _backlinks(context: HarborContext, request: HarborRequest) -> Answer:
    from search.backlinks import backlinks

    return await _about_url(context, request, backlinks, "Pages linking to", _backlinks_html)


async def _similar(context: HarborContext, request: HarborRequest) -> Answer:
    from search.backlinks import similar

    return await _about_url(context, request, similar, "Pages similar to", _similar_html)


def _page_at(opens: Opens, url: str, time: str, title: str) -> str:
    """A page of a list: its title, opening it at its date, then its URL and date."""
    return (
        f'<a href="{html.escape(_open_at(opens, url, time))}">{html.escape(title or "(no title)")}</a>'
        f' <span class="url">{html.escape(url)}</span>'
        f' <span class="date">{html.escape(time)}</span>'
    )


def _history_html(url: str, found: "History", opens: Opens) -> str:
    count = len(found.versions)
    said = (
        f"{count:,} version{'s' if count != 1 else ''} in the index, oldest first: each is"
        " the capture where the page changed."
        + ("" if found.complete else " Only the newest are shown.")
    )
    items = []
    for version in found.versions:
        change = version.change
        if change is None:
            said_of = "<p>the first version indexed</p>"
        else:
            lines = [f'<li class="added">+ {html.escape(s)}</li>' for s in change.added]
            lines += [f'<li class="removed">− {html.escape(s)}</li>' for s in change.removed]
            listed = f"<ul>{''.join(lines)}</ul>" if lines else ""
            said_of = f"<p>{html.escape(change.summary())}</p>{listed}"
        opened = html.escape(_open_at(opens, version.url, version.time))
        items.append(
            f'<li class="version"><a class="open" href="{opened}">'
            f"{html.escape(version.time)}</a> <b>{html.escape(version.title or '(no title)')}</b>"
            f' <span class="url">{html.escape(version.url)}</span>'
            f' <code title="SHA-256 of the payload">{html.escape(version.digest[:16])}</code>'
            f"{said_of}</li>"
        )
    return _listing(f"Text history of {found.url}", said, items, '<ol class="versions">')


def _backlinks_html(url: str, found: "list[Backlink]", opens: Opens) -> str:
    items = []
    for link in found:
        anchors = ", ".join(f"“{html.escape(text)}”" for text in link.anchors)
        items.append(
            f"<li>{_page_at(opens, link.url, link.time, link.title)}<br>"
            f"{anchors or '(no anchor text)'}</li>"
        )
    said = f"{len(found):,} archived pages link there, newest first."
    return _listing(f"Pages linking to {url}", said, items)


def _similar_html(url: str, near: "Neighbours", opens: Opens) -> str:
    items = [
        f"<li>{_page_at(opens, page.url, page.time, page.title)} {page.distance} bits apart</li>"
        for page in near.pages
    ]
    said = (
        f"{len(near.pages):,} pages within {near.max_distance} bits of 64 of its version of"
        f" {html.escape(near.time)}, nearest first."
    )
    return _listing(f"Pages similar to {near.url}", said, items)


def _listing(heading: str, said: str, items: list[str], opened: str = "<ol>") -> str:
    """A list of pages under its heading (text) and what it lists (HTML), `items` in `opened`."""
    return "\n".join(
        [f"<h2>{html.escape(heading)}</h2>", f"<p>{said}</p>{opened}", *items, "</ol>"]
    )


def _page(request: HarborRequest, title: str, body: str, status: int = 200) -> Answer:
    """A whole page: the search form (with what was asked), the help line, then `body`."""
    asked = {name: html.escape(request.query.get(name, "")) for name in ("q", "from", "to")}
    text = f"""<div class="search"><h1><a href="/">Search the archive</a></h1>
<form action="/" method="get" role="search">
<label class="query">Words <input name="q" type="search" value="{asked["q"]}"></label>
<label>From <input name="from" size="10" value="{asked["from"]}" placeholder="2019"></label>
<label>To <input name="to" size="10" value="{asked["to"]}" placeholder="2021-06"></label>
<button>Search</button></form>
<p class="help">{HELP}</p>
{body}
</div>"""
    return page.page(f"search: {title}", text, status, current=HOME)
