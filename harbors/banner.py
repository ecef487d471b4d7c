"""The banner: a thin bar the proxy puts atop an archived HTML page for a client that asked for
it (`http://date.dlweb/set?banner=on`). It says when the page was captured, links to the
previous and next captures (each sets the client's date and reloads the page) and to all of
them, and, once the page has loaded, its temporal coherence: the spread of the capture dates of
the resources it was made of, from `http://api.dlweb/coherence` (proxy/coherence.py).

The bar is plain markup that reads without JavaScript; a small script adds the coherence
figure after the page's `load` event, since the page's resources are asked for after its HTML
is sent, and removes the bar (and itself) inside a frame, where it belongs to the page around it. Every
name it uses is prefixed `dlweb-`, its style is scoped to its own id, and it is ASCII only, so
that it fits in a page of any ASCII-compatible charset.
"""

import html
from urllib.parse import quote

from archive.timestamps import format_iso

from .calendar import Opens, opens_for
from .consent import Consent

BAR_ID = "dlweb-banner"
FIGURE_ID = "dlweb-coherence"

STYLE = """\
#dlweb-banner{all:initial;display:block;box-sizing:border-box;position:relative;
z-index:2147483647;width:100%;margin:0;padding:3px 8px;background:#1d2327;color:#fff;
font:13px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;text-align:left}
#dlweb-banner *{box-sizing:border-box;margin:0;padding:0;border:0;float:none;
font:inherit;color:inherit;background:none;text-transform:none;letter-spacing:normal}
#dlweb-banner a{color:#9ec5f0;text-decoration:underline;cursor:pointer}
#dlweb-banner a:focus-visible{outline:2px solid #f0b400;outline-offset:1px}
#dlweb-banner .dlweb-part{display:inline-block;margin-right:14px}
#dlweb-banner .dlweb-muted{color:#c3c4c7}
#dlweb-banner details{display:inline-block;margin-left:6px}
#dlweb-banner summary{display:list-item;cursor:pointer;color:#9ec5f0}
#dlweb-banner ol{display:block;max-height:40vh;overflow:auto;margin:4px 0 2px 18px;
list-style:decimal}
#dlweb-banner li{display:list-item;white-space:nowrap}
#dlweb-banner .dlweb-beyond{color:#f0b400;font-weight:bold}
"""

# Reads the bar's data, asks the proxy what was served for the page once it has loaded, and
# writes the figure with text nodes only (no markup parsed: a page's Trusted Types still hold).
SCRIPT = """\
(function () {
  var bar = document.getElementById("dlweb-banner"), me = document.currentScript;
  if (!bar) { return; }
  if (window.top !== window.self) {
    var style = document.getElementById("dlweb-banner-style");
    if (style) { style.remove(); }
    bar.remove();
    if (me) { me.remove(); }
    return;
  }
  var figure = document.getElementById("dlweb-coherence");
  var get = window.fetch ? window.fetch.bind(window) : null;
  function element(name, text, kind) {
    var made = document.createElement(name);
    if (text) { made.textContent = text; }
    if (kind) { made.className = kind; }
    return made;
  }
  function when(iso) { return iso.replace("T", " ").replace(/(\\.\\d+)?Z$/, " UTC"); }
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
    figure.textContent = "";
    var text = "Coherence: " + count + " resource" + (count === 1 ? "" : "s") +
      ", captured " + when(data.earliest) + " to " + when(data.latest) + "; ";
    figure.appendChild(document.createTextNode(text));
    figure.appendChild(element("span", data.beyond + " more than " + data.span +
      " from the page", data.beyond ? "dlweb-beyond" : ""));
    if (data.missing.length) {
      figure.appendChild(document.createTextNode("; " + data.missing.length +
        " not archived"));
    }
    if (!count && !data.missing.length) { return; }
    var details = element("details"), list = element("ol");
    details.appendChild(element("summary", "list"));
    data.resources.forEach(function (resource) {
      var item = element("li", (resource.beyond ? "! " : "") + when(resource.date) + " (" +
        offset(resource.offset_seconds) + ") " + resource.url,
        resource.beyond ? "dlweb-beyond" : "");
      list.appendChild(item);
    });
    data.missing.forEach(function (url) {
      list.appendChild(element("li", "not archived: " + url, "dlweb-muted"));
    });
    details.appendChild(list);
    figure.appendChild(details);
  }
  function ask() {
    if (!get) { return; }
    var api = (location.protocol === "https:" ? "https:" : "http:") +
      "//api.dlweb/coherence?url=" + encodeURIComponent(bar.getAttribute("data-url")) +
      "&at=" + encodeURIComponent(bar.getAttribute("data-at"));
    get(api, {credentials: "omit", cache: "no-store"}).then(function (answer) {
      return answer.ok ? answer.json() : Promise.reject(answer.status);
    }).then(show, function () {
      figure.textContent = "Coherence: not available";
    });
  }
  if (document.readyState === "complete") { ask(); } else {
    window.addEventListener("load", ask);
  }
})();
"""


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


def bar(
    url: str,
    time: int,
    previous: int | None,
    following: int | None,
    at: int,
    client: str,
    consent: Consent,
) -> bytes:
    """The bar for the capture of `url` at `time`, browsed at date `at` by `client` (whose
    link tokens its neighbours' links carry): its style, markup and script, in ASCII."""
    back = quote(url, safe="")
    opens = opens_for(consent, client)
    # No text between the three elements: the frame's script leaves nothing of the bar behind.
    markup = f"""<style id="dlweb-banner-style">{STYLE}</style>\
<div id="{BAR_ID}" role="region" aria-label="dlweb: archived page" data-url="{html.escape(url)}" \
data-at="{format_iso(at)}" data-date="{format_iso(time)}">
<span class="dlweb-part">Archived page, captured <time datetime="{format_iso(time)}">\
{_when(time)}</time></span>
{_neighbour(url, previous, "prev", "&larr; previous capture", "no earlier capture", opens)}
{_neighbour(url, following, "next", "next capture &rarr;", "no later capture", opens)}
<a class="dlweb-part" href="http://captures.dlweb/?url={back}">all captures</a>
<span class="dlweb-part" id="{FIGURE_ID}">Coherence: shown once the page has loaded \
(needs JavaScript)</span>
<a class="dlweb-part" href="http://date.dlweb/set?banner=off&amp;back={back}">hide the bar</a>
</div><script>{SCRIPT}</script>"""
    return markup.encode("ascii", "xmlcharrefreplace")
