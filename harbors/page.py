"""The frame of every harbor page: one small style sheet, served by every harbor at
STYLESHEET (no CDN, no framework), a bar naming the harbors, and markup that reads without
JavaScript, on a laptop or a phone, with a keyboard or a screen reader."""

import html

from .answer import Answer

STYLESHEET = "/dlweb.css"
HTML = "text/html; charset=utf-8"
HARBORS = (
    ("http://date.dlweb/", "Date"),
    ("http://captures.dlweb/", "Captures"),
    ("http://search.dlweb/", "Search"),
    ("http://directory.dlweb/", "Sites"),
    ("http://streams.dlweb/", "Streams"),
    ("http://status.dlweb/", "Status"),
)

CSS = b"""\
:root { --ink: #1d2327; --muted: #50575e; --line: #c3c4c7; --back: #fff; --panel: #f6f7f7;
  --accent: #1a5fb4; --heat0: #ebedf0; --heat1: #9ec5f0; --heat2: #5a9be0; --heat3: #1a5fb4;
  --heat4: #0b3a75; color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: var(--back); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible {
  outline: 3px solid #f0b400; outline-offset: 2px; }
.bar { background: var(--ink); color: #fff; padding: .4rem 1rem; }
.bar a { color: #fff; margin-right: 1rem; text-decoration: none; font-weight: 600; }
.bar a[aria-current="page"] { text-decoration: underline; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
form { margin: .5rem 0 1rem; display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
label { display: flex; flex-direction: column; font-size: .9rem; color: var(--muted); }
input, select, button { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line);
  border-radius: 4px; }
button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
th { background: var(--panel); }
.note { background: #fcf9e8; border-left: 4px solid #dba617; padding: .5rem .75rem; }
.error { background: #fcf0f1; border-left: 4px solid #d63638; padding: .5rem .75rem; }
.muted { color: var(--muted); }
.histogram { display: block; max-width: 100%; height: auto; margin: .5rem 0; }
.histogram .bar { fill: var(--heat2); }
.histogram .chosen .bar, .histogram a:hover .bar { fill: var(--heat4); }
.histogram .empty .bar { fill: var(--line); }
.histogram text { font-size: 11px; fill: var(--ink); }
.histogram a:focus-visible { outline: 3px solid #f0b400; }
.scroll { overflow-x: auto; }
.months th, .months td, .calendar th, .calendar td { text-align: center; }
.months a, .calendar a { color: inherit; }
.calendar { table-layout: fixed; max-width: 28rem; }
.calendar td { padding: 0; height: 2.8rem; border: 2px solid var(--back); }
.calendar td a { display: block; padding: .25rem 0; font-weight: 600; text-decoration: none; }
.calendar td a:hover { text-decoration: underline; }
.calendar .count { display: block; font-size: .7rem; font-weight: normal; }
.months .heat0, .calendar .heat0 { background: var(--heat0); color: var(--muted); }
.months .heat1, .calendar .heat1 { background: var(--heat1); color: var(--ink); }
.months .heat2, .calendar .heat2 { background: var(--heat2); color: var(--ink); }
.months .heat3, .calendar .heat3 { background: var(--heat3); color: #fff; }
.months .heat4, .calendar .heat4 { background: var(--heat4); color: #fff; }
.months .chosen, .calendar .chosen { outline: 3px solid var(--ink); outline-offset: -3px; }
.calendar .current { box-shadow: inset 0 0 0 3px #f0b400; }
.calendar .pad { background: transparent; border-bottom: 0; }
.months-nav a { margin-right: 1rem; }
.url-text { overflow-wrap: anywhere; }
label.wide { flex: 1 1 20rem; }
label.wide input { width: 100%; }
@media (max-width: 40rem) { main { padding: .5rem; } .bar a { margin-right: .6rem; } }
.nodes { list-style: none; padding: 0; margin: .5rem 0; display: grid; gap: .75rem;
  grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); }
.node { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
.node h3 { margin: 0; font-size: 1.05rem; overflow-wrap: anywhere; }
.node p { margin: .25rem 0; }
.state { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-weight: 600;
  background: #fcf9e8; color: #6b4c00; }
.state[data-state="alive"] { background: #edfaef; color: #14532d; }
.state[data-state="unreachable"], .state[data-state="dead"] { background: #fcf0f1;
  color: #8a1f21; }
.gauge { display: flex; height: 1.1rem; margin: .4rem 0 .2rem; overflow: hidden;
  border: 1px solid var(--muted); border-radius: 3px; background: var(--heat0); }
.swatch { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em;
  border: 1px solid var(--muted); background: var(--heat0); }
.gauge-archive, .swatch-archive { background: var(--accent); }
.gauge-other, .swatch-other { background: #6b7075; }
.status-tables { display: grid; gap: 0 2rem;
  grid-template-columns: repeat(auto-fit, minmax(min(18rem, 100%), 1fr)); }
.figures td { text-align: right; font-variant-numeric: tabular-nums; }
.figures th.cause { padding-left: 1.5rem; font-weight: normal; }
.figures tr.alert th, .figures tr.alert td { background: #fcf0f1; color: #8a1f21;
  font-weight: 600; }
.search .help { color: var(--muted); font-size: .9rem; }
.search .query { flex: 1 1 18rem; }
.search .query input { width: 100%; }
.search .facets { float: right; width: 15rem; margin: 0 0 1rem 2rem; }
.search .facets h2 { font-size: 1rem; margin: .75rem 0 .25rem; }
.search .facets ul { list-style: none; padding-left: 0; margin: 0; }
.search .hit { margin-bottom: 1rem; }
.search .url { color: #1e6b1e; overflow-wrap: anywhere; }
.search .date, .search .type, .search .count { color: var(--muted); }
.search .links a, .search .pages a { display: inline-block; margin-right: 1rem; }
.search .added { color: #1e6b1e; }
.search .removed { color: #a00; }
main code { overflow-wrap: anywhere; }
form.switch, form.inline { margin: .25rem 0; align-items: center; }
.recent form { margin: 0; }
.confirm { border: 2px solid var(--accent); border-radius: 6px; padding: 0 1rem; margin: 1rem 0; }
input, select { max-width: 100%; }
.streams h2, .streams h1, .player h1 { overflow-wrap: anywhere; }
.player audio, .player video { width: 100%; max-width: 40rem; }
@media (max-width: 40rem) { .search .facets { float: none; width: auto; margin: 0 0 1rem; } }
.site-map { display: block; margin: .5rem 0; font-size: 12px; }
.site-map .links path { fill: none; stroke: #8c8f94; stroke-width: 1; }
.site-map marker path { fill: #8c8f94; stroke: none; }
.site-map rect { fill: var(--panel); stroke: var(--muted); }
.site-map .level0 rect { fill: var(--heat1); }
.site-map .unreached rect { stroke-dasharray: 4 3; }
.site-map text { fill: var(--ink); }
.site-map a:hover rect, .site-map a:focus rect { stroke: var(--accent); stroke-width: 2; }
.site-map a:focus-visible { outline: none; }
.site-map a:focus-visible rect { stroke: #f0b400; stroke-width: 4; }
.sites li { margin: .2rem 0; }
"""


def stylesheet() -> Answer:
    return Answer(200, CSS, "text/css; charset=utf-8", [("Cache-Control", "max-age=3600")])


def page(title: str, body: str, status: int = 200, current: str = "", head: str = "") -> Answer:
    """A harbor page around `body` (HTML, its archived strings already escaped); `current` is
    the harbor's address in the bar, marked as the page the reader is on."""
    marked = ' aria-current="page"'
    links = " ".join(
        f'<a href="{address}"{marked if address == current else ""}>{name}</a>'
        for address, name in HARBORS
    )
    document = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dlweb: {html.escape(title)}</title>
<link rel="stylesheet" href="{STYLESHEET}">{head}</head>
<body><header class="bar"><nav aria-label="Archive harbors">{links}</nav></header>
<main>
{body}
</main></body></html>
"""
    return Answer(status, document.encode(), HTML)
