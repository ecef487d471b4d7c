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
@media (max-width: 40rem) { main { padding: .5rem; } .bar a { margin-right: .6rem; } }
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
