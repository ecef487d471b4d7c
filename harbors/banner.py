"""The banner: a thin bar the proxy puts atop an archived HTML page for a client that asked for
it (`http://date.dlweb/set?banner=on`). It says when the page was captured, links to the
previous and next captures (each sets the client's date and reloads the page) and to all of
them, and shows the page's temporal coherence: the spread of the capture dates of the resources
it was made of (proxy/coherence.py).

An archived page is hostile, and the bar is in it. So the bar lives in a closed shadow root,
declared in its markup (`<template shadowrootmode="closed">`), which the browser attaches while
it parses the page, before any of the page's later scripts run: the page's scripts cannot reach
into it (`element.shadowRoot` is null), nor read its links, and the page's style sheets do not
apply in it. Its host takes back every property with `all: initial !important` from inside,
which wins over the page's rules, `!important` ones included, so the page can neither hide nor
restyle it (`#dlweb-banner {display: none}`, `* {...}`, `div {...}`). Its script, after it in
the page (and holding nothing the page may not read), shows the root element again if the page
hid it, moves the host out of the body if the page hid the body, and removes the bar (and
itself) inside a frame, where it belongs to the page around it.

The coherence figure is a frame inside the shadow root: a page of `http://api.dlweb`
(figure_page) that asks `/coherence` of its own origin, a second and again until what was served
for the page stays the same, and draws the figure itself. The data is never granted to another
origin (no `Access-Control-Allow-Origin`): a page's scripts cannot read another origin's frame,
nor, with the frame in a closed shadow root, even get hold of it (it is not in `window.frames`,
it has no name, and it sends the page no message). The frame's address names only the page, which
the page knows: Resource Timing shows it to the page's scripts, so the client's date is not in it.

The markup is ASCII only, so that it fits in a page of any ASCII-compatible charset.
"""

import base64
import hashlib
import html
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from archive.timestamps import format_iso

from .calendar import Opens, opens_for
from .consent import Consent

BAR_ID = "dlweb-banner"
FIGURE_ID = "dlweb-coherence"
COHERENCE_HOST = "api.dlweb"
FIGURE_PATH = "/coherence/figure"

# Inside the shadow root: the page's style sheets do not apply here, and the host's rules win over
# theirs, for the host and for the pseudo-elements a page could style on it. Generic font families
# only: a page's @font-face cannot redefine them.
STYLE = """\
:host{all:initial!important;display:block!important;position:relative!important;
z-index:2147483647!important}
:host::before,:host::after{content:none!important;display:none!important}
:host::first-line,:host::first-letter{all:inherit!important}
.bar{display:block;box-sizing:border-box;width:100%;margin:0;padding:3px 8px;background:#1d2327;
color:#fff;font:13px/1.5 system-ui,sans-serif;text-align:left}
a{color:#9ec5f0;text-decoration:underline;cursor:pointer}
a:focus-visible{outline:2px solid #f0b400;outline-offset:1px}
.dlweb-part{display:inline-block;margin-right:14px}
.dlweb-muted{color:#c3c4c7}
iframe{display:inline-block;vertical-align:top;width:60em;max-width:100%;height:1.5em;
margin:0 14px 0 0;border:0;background:#1d2327}
"""

# Right after the host in the page: shows the root element if a page's rule hid it (the bar is
# inside it), moves the host out of a body a page's rule hid (without reloading the figure where
# moveBefore exists), and leaves nothing of the bar in a frame.
SCRIPT = """\
(function () {
  var me = document.currentScript, host = me && me.previousElementSibling;
  if (me) { me.remove(); }
  if (!host || host.id !== "dlweb-banner") { return; }
  if (window.top !== window.self) { host.remove(); return; }
  var root = document.documentElement;
  function shown() {
    var body = document.body;
    if (getComputedStyle(root).display === "none") {
      root.style.setProperty("display", "block", "important");
    }
    if (body && body.parentNode === root && body.contains(host) &&
        getComputedStyle(body).display === "none") {
      (root.moveBefore || root.insertBefore).call(root, host, body);
    }
  }
  shown();
  document.addEventListener("DOMContentLoaded", shown);
  window.addEventListener("load", shown);
})();
"""

FIGURE_STYLE = """\
html{color-scheme:dark}
body{margin:0;padding:4px 8px;background:#1d2327;color:#fff;font:13px/1.5 system-ui,sans-serif}
.framed body{padding:0;overflow:hidden}
.framed p{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.framed ol{display:none}
a{color:#9ec5f0}
a:focus-visible{outline:2px solid #f0b400;outline-offset:1px}
p{margin:0}
ol{margin:6px 0;padding-left:2.5em}
.beyond{color:#f0b400;font-weight:bold}
.muted{color:#c3c4c7}
"""

# Asks `/coherence` of its own origin (no grant to another needed) until the answer stays the
# same STEADY times, a second apart, and writes the figure with text nodes only.
FIGURE_SCRIPT = """\
(function () {
  var STEADY = 3, MOST = 60;
  var figure = document.getElementById("dlweb-coherence");
  var list = document.getElementById("dlweb-resources");
  var whole = document.getElementById("dlweb-whole");
  var asked = 0, last = "", steady = 0;
  if (window.top !== window.self) { document.documentElement.className = "framed"; }
  else { whole.removeAttribute("href"); }
  function element(name, text, kind) {
    var made = document.createElement(name);
    if (text) { made.textContent = text; }
    if (kind) { made.className = kind; }
    return made;
  }
  function when(iso) { return iso.replace("T", " ").replace(/(\\.\\d+)?Z$/, " UTC"); }
  function minute(iso) { return iso.replace("T", " ").slice(0, 16); }
  function offset(seconds) {
    var size = Math.abs(seconds), sign = seconds < 0 ? "-" : "+";
    if (size >= 86400) { return sign + (size / 86400).toFixed(1) + " d"; }
    if (size >= 3600) { return sign + (size / 3600).toFixed(1) + " h"; }
    if (size >= 60) { return sign + Math.round(size / 60) + " min"; }
    return sign + size + " s";
  }
  function show(data) {
    var count = data.resources.length;
    figure.setAttribute("data-count", String(count));
    figure.setAttribute("data-earliest", data.earliest);
    figure.setAttribute("data-latest", data.latest);
    figure.setAttribute("data-beyond", String(data.beyond));
    figure.setAttribute("data-missing", String(data.missing.length));
    figure.textContent = count + " resource" + (count === 1 ? "" : "s") + ", captured " +
      minute(data.earliest) + " to " + minute(data.latest) + " UTC; ";
    figure.appendChild(element("span", data.beyond + " more than " + data.span +
      " from the page", data.beyond ? "beyond" : ""));
    if (data.missing.length) {
      figure.appendChild(document.createTextNode("; " + data.missing.length +
        " not archived"));
    }
    list.textContent = "";
    data.resources.forEach(function (resource) {
      list.appendChild(element("li", (resource.beyond ? "! " : "") + when(resource.date) +
        " (" + offset(resource.offset_seconds) + ") " + resource.url,
        resource.beyond ? "beyond" : ""));
    });
    data.missing.forEach(function (url) {
      list.appendChild(element("li", "not archived: " + url, "muted"));
    });
  }
  function ask() {
    asked += 1;
    fetch("/coherence" + location.search, {cache: "no-store"}).then(function (answer) {
      return answer.ok ? answer.text() : Promise.reject(answer.status);
    }).then(function (text) {
      steady = text === last ? steady + 1 : 0;
      if (!steady) { last = text; show(JSON.parse(text)); }
      if (steady < STEADY && asked < MOST) { setTimeout(ask, 1000); }
    }, function () {
      figure.textContent = "not available";
    });
  }
  ask();
})();
"""


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


# The figure page runs its own script and style only, reads only its own origin, and may be
# framed only by the page it describes (the proxy adds `frame-ancestors`).
FIGURE_POLICY = (
    f"default-src 'none'; script-src {_hash(FIGURE_SCRIPT)}; style-src {_hash(FIGURE_STYLE)}; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'"
)


def _when(micros: int) -> str:
    return format_iso(micros).replace("T", " ").removesuffix("Z") + " UTC"


def _neighbour(url: str, time: int | None, rel: str, label: str, none: str, opens: Opens) -> str:
    if time is None:
        return f'<span class="dlweb-part dlweb-muted">{none}</span>'
    target = opens(time, url)
    return (
        f'<a class="dlweb-part" rel="{rel}" href="{html.escape(target)}">'
        f"{label} ({_when(time)[:10]})</a>"
    )


def figure_url(url: str) -> str:
    """The figure page of `url`, over the page's own scheme (an HTTPS page may not frame HTTP)."""
    scheme = "https" if urlsplit(url).scheme.lower() == "https" else "http"
    return f"{scheme}://{COHERENCE_HOST}{FIGURE_PATH}?url={quote(url, safe='')}"


@dataclass(frozen=True)
class BarLinks:
    """Where the bar's links lead: a neighbour capture (`opens`), all the captures, the coherence
    figure's frame (None: the bar has no figure) and the page without the bar."""

    opens: Opens
    captures: str
    figure: str | None
    hide: str


def bar(
    url: str,
    time: int,
    previous: int | None,
    following: int | None,
    at: int,
    client: str,
    consent: Consent,
) -> bytes:
    """The proxy's bar for the capture of `url` at `time`, browsed by `client` (whose link tokens
    its neighbours' links carry), in ASCII. `at`, the date browsed at, is not written in: the
    page may read its bytes (a script of the page can ask for it again)."""
    back = quote(url, safe="")
    links = BarLinks(
        opens_for(consent, client),
        f"http://captures.dlweb/?url={back}",
        figure_url(url),
        f"http://date.dlweb/set?banner=off&back={back}",
    )
    return linked_bar(url, time, previous, following, links)


def linked_bar(
    url: str, time: int, previous: int | None, following: int | None, links: BarLinks
) -> bytes:
    """The bar for the capture of `url` at `time`, its links leading where `links` say: its host
    and closed shadow root, then its script, in ASCII."""
    figure = links.figure
    frame = (
        ""
        if figure is None
        else f'<iframe id="{FIGURE_ID}" title="Temporal coherence of this page"'
        f' src="{html.escape(figure)}"></iframe>\n'
    )
    # No text between the host and the script: in a frame, the script leaves nothing behind.
    markup = f"""<div id="{BAR_ID}"><template shadowrootmode="closed"><style>{STYLE}</style>\
<div class="bar" role="region" aria-label="dlweb: archived page">
<span class="dlweb-part">Archived page, captured <time datetime="{format_iso(time)}">\
{_when(time)}</time></span>
{_neighbour(url, previous, "prev", "&larr; previous capture", "no earlier capture", links.opens)}
{_neighbour(url, following, "next", "next capture &rarr;", "no later capture", links.opens)}
<a class="dlweb-part" href="{html.escape(links.captures)}">all captures</a>
{frame}<a class="dlweb-part" href="{html.escape(links.hide)}">hide the bar</a>
</div></template></div><script>{SCRIPT}</script>"""
    return markup.encode("ascii", "xmlcharrefreplace")


def figure_page(url: str) -> bytes:
    """The page that shows the temporal coherence of the client's latest load of `url`: one
    line in the bar's frame, whose link opens the whole list (this page on its own)."""
    address = html.escape(f"{FIGURE_PATH}?url={quote(url, safe='')}")
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Temporal coherence of {html.escape(url)}</title><style>{FIGURE_STYLE}</style></head><body>
<p><a id="dlweb-whole" href="{address}" target="_blank" rel="noopener">Coherence</a>:
<span id="{FIGURE_ID}">measured while the page loads (needs JavaScript)</span></p>
<ol id="dlweb-resources"></ol><script>{FIGURE_SCRIPT}</script></body></html>
""".encode()
