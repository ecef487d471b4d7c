"""`http://streams.dlweb/`: the recorded live streams, each with its time ranges, gaps, drift and
titles, and a player.

`/` lists the streams the recorders entered in the registry; `/?url=URL` shows one stream's
timeline; `/play?url=URL` is a page with an `<audio>` (a `<video>` for HLS) element that plays
the stream through the proxy at the client's date. Every time shown links to the date harbor,
which sets the date and opens the player. `format=json` gives the same as JSON. A `url` that is
not an http(s) URL is refused (400): it would be the player's source and a link.
"""

import html
import json
from typing import Any
from urllib.parse import quote

from archive.errors import DlwebError
from archive.link_format import escape_uri
from archive.streams import Timeline, recorded_streams, stream_logs, timeline
from archive.timestamps import format_iso

from . import page
from .answer import Answer, HarborContext
from .calendar import Opens, opens_for
from .request import BadParameter, HarborRequest

__all__ = ["answer", "player"]

HOME = "http://streams.dlweb/"


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    shape = request.query.get("format", "html")
    if shape not in ("html", "json"):
        return Answer(400, b"format is html or json\n", "text/plain")
    try:
        url = request.url("url")
    except BadParameter as exc:
        return Answer(400, f"{exc}\n".encode(), "text/plain; charset=utf-8")
    if request.path == "/play":
        if not url:
            return Answer(400, b"play which stream? /play?url=URL\n", "text/plain")
        return _player(url, request.query.get("kind", "audio"))
    if request.path != "/":
        return Answer(404, b"streams.dlweb has / and /play\n", "text/plain")
    try:
        urls = [url] if url else await recorded_streams(context.client)
        lines = [line for u in urls if (line := timeline(await stream_logs(context.client, u)))]
    except DlwebError as exc:
        return Answer(
            500, f"the archive cannot list the streams now: {exc}\n".encode(), "text/plain"
        )
    status = 404 if url and not lines else 200
    if shape == "json":
        body = json.dumps({"streams": [_as_json(line) for line in lines]}, indent=1) + "\n"
        return Answer(status, body.encode(), "application/json")
    opens = opens_for(context.settings.consent, request.client)
    return page.page("recorded streams", _page(url, lines, opens), status, current=HOME)


def _as_json(line: Timeline) -> dict[str, Any]:
    return {
        "url": line.url,
        "protocol": line.protocol,
        "start": format_iso(line.start),
        "end": format_iso(line.end),
        "spans": [
            {"start": format_iso(s.start), "end": format_iso(s.end), "recording": s.recording}
            for s in line.spans
        ],
        "gaps": [
            {
                "start": format_iso(g.start),
                "end": format_iso(g.end),
                "kind": g.kind,
                "why": g.message,
            }
            for g in line.gaps
        ],
        "titles": [{"at": format_iso(t.time), "title": t.title} for t in line.titles],
        "drift": line.drift.ratio,
        "drift_text": line.drift.describe(),
    }


def player(url: str, protocol: str) -> str:
    """The address of the page that plays the stream `url` (recorded by `protocol`) at the
    client's date: opened through the date harbor, from a moment of it."""
    kind = "video" if protocol == "hls" else "audio"
    return f"http://streams.dlweb/play?kind={kind}&url={quote(escape_uri(url), safe='')}"


def _listen(url: str, at: int, protocol: str, text: str, opens: Opens) -> str:
    """A link that sets the date and opens the player of the stream."""
    return f'<a href="{html.escape(opens(at, player(url, protocol)))}">{html.escape(text)}</a>'


def _page(url: str, lines: list[Timeline], opens: Opens) -> str:
    parts = []
    for line in lines:
        details = f"?url={quote(escape_uri(line.url), safe='')}"
        spans = "".join(
            f"<li>{_listen(line.url, s.start, line.protocol, format_iso(s.start), opens)}"
            f" to {format_iso(s.end)}</li>"
            for s in line.spans
        )
        gaps = "".join(
            f"<li>{format_iso(g.start)} to {format_iso(g.end)}: {html.escape(g.kind)}"
            f" ({html.escape(g.message)})</li>"
            for g in line.gaps
        )
        titles = "".join(
            f"<li>{_listen(line.url, t.time, line.protocol, format_iso(t.time), opens)}"
            f" {html.escape(t.title)}</li>"
            for t in line.titles
        )
        parts.append(
            f'<section><h2><a href="{html.escape(details)}">{html.escape(line.url)}</a></h2>'
            f"<p>{html.escape(line.protocol)}, recorded {format_iso(line.start)} to"
            f" {format_iso(line.end)}; {html.escape(line.drift.describe())}</p>"
            f"<h3>Recorded</h3><ul>{spans}</ul>"
            f"<h3>Gaps</h3><ul>{gaps or '<li>none</li>'}</ul>"
            f"<h3>Titles</h3><ul>{titles or '<li>none logged</li>'}</ul></section>"
        )
    note = "" if lines else f"<p>{html.escape(url or 'No stream')} was not recorded.</p>"
    return f'<div class="streams"><h1>Recorded streams</h1>{note}{"".join(parts)}</div>'


def _player(url: str, kind: str) -> Answer:
    element = "video" if kind == "video" else "audio"
    source, named = html.escape(escape_uri(url)), html.escape(url)
    body = f"""<div class="player"><h1>{named}</h1>
<p>As it was on air at the date set at <a href="http://date.dlweb/">date.dlweb</a>.</p>
<{element} id="player" src="{source}" controls autoplay aria-label="{named} at the date set">
<a href="{source}">Open the recording</a></{element}></div>
"""
    return page.page(url, body, current=HOME)
