"""The bar in hostile archived pages, through the real proxy and in headless Chromium: it goes only
where the page's body starts (never in a tag, an attribute, a comment, a raw-text element or a
frameset) and never where a Content-Security-Policy of the page forbids it; in Chromium the page's
style sheets can neither hide nor restyle it and the page's scripts cannot read it; and the
coherence of a client's pages is read by no other origin, while the bar's figure still shows it.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from deploy.testing.cluster import Cluster
from deploy.testing.waits import eventually
from tests.accessibility import Browser, Tab
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.proxy.conftest import Proxy, Version, archive, header_block, start_proxy
from tests.proxy.test_banner import NAVIGATION, put_setting

SITE = "http://hostile.example"
WHEN = "2021-06-15T12:00:00Z"
HTML = ("Content-Type", "text/html; charset=utf-8")
BAR = "|BAR|"  # where the bar must go in a page below (removed from the archived page)
HOST = b'<div id="dlweb-banner"><template shadowrootmode="closed">'

# Pages where `<body` is anywhere but in the page's body tag, and pages with no body tag.
PLACED = {
    "/attribute": '<!DOCTYPE html><html><head><meta name="description" content="<body onload='
    'alert(1)>"><title>t</title></head><body class="real">|BAR|<p>page</p></body></html>',
    "/earlier-tag": "<html data-x='<body class=fake>'><head><title>t</title></head>"
    "<body>|BAR|<p>page</p>",
    "/comment": "<html><head><!-- <body class=fake> --></head><body>|BAR|<p>page</p>",
    "/script": '<html><head><script>var s = "<body class=fake>";</script></head>'
    "<body>|BAR|<p>page</p>",
    "/script-escape": "<html><head><script><!--<script></script><body class=fake>--></script>"
    "</head><body class=real>|BAR|<p>page</p>",
    "/title": "<html><head><title>a <body class=fake> b</title></head><body>|BAR|<p>page</p>",
    "/textarea": "<html><head><title>t</title></head><body>|BAR|<textarea><body class=fake>"
    "</textarea><p>page</p>",
    "/template": "<html><head><template><body class=fake><p>inert</p></template></head>"
    "<body class=real>|BAR|<p>page</p>",
    "/noscript": "<html><head><noscript><body class=fake></noscript></head><body>|BAR|<p>page</p>",
    "/case-and-spacing": '<HTML><HEAD><TITLE>t</TITLE></HEAD><BODY\n\tCLASS = "x"\n>|BAR|<P>page',
    "/no-body-tag": "<!DOCTYPE html><html><head><title>t</title></head>\n|BAR|<p>page</p></html>",
    "/text-first": "<!DOCTYPE html>|BAR|Hello, page",
}
# Pages where the bar has no place: it would break the frameset, or would be inside a token.
UNPLACED = {
    "/frameset": '<html><head><title>t</title></head><frameset cols="50%,50%">'
    '<frame src="/a"><frame src="/b"></frameset></html>',
    "/frameset-late": "<html><head></head><div></div><frameset><frame src='/a'></frameset>",
    "/open-attribute": '<html><head><meta content="x><body><p>never closed',
    "/open-script": "<html><head><script>var s = '<body>';",
}
# Pages whose policy forbids the bar, or allows it; each runs a script of its own if it may.
RUNS = "<script>document.title = 'ran'</script>"
FORBIDDING = {
    "/csp-script-src": (("Content-Security-Policy", "script-src 'self'"),),
    "/csp-default-src": (("Content-Security-Policy", "default-src 'self'"),),
    "/csp-nonce": (("Content-Security-Policy", "script-src 'unsafe-inline' 'nonce-abc'"),),
    "/csp-hash": (("Content-Security-Policy", "script-src 'unsafe-inline' 'sha256-AAAA'"),),
    "/csp-style": (("Content-Security-Policy", "style-src 'self'"),),
    "/csp-frames": (("Content-Security-Policy", "default-src 'self' 'unsafe-inline'"),),
    "/csp-two": (("Content-Security-Policy", "img-src *, script-src 'none'"),),
}
META = '<meta http-equiv="Content-Security-Policy" content="{}">'
META_FORBIDDING = {
    "/meta-before": f"<html><head>{META.format('script-src &#39;self&#39;')}<title>t</title>"
    f"</head><body>{RUNS}<p>page</p>",
    "/meta-after-head": f"<html><head><title>t</title></head>{META.format('default-src none')}"
    f"{RUNS}<p>page</p>",
    "/meta-after-trap": "<html><head><meta name=x content='<body>'>"
    f"{META.format('script-src none')}<title>t</title></head><body>{RUNS}<p>page</p>",
    "/meta-uppercase": "<HTML><HEAD><META HTTP-EQUIV=content-security-policy CONTENT="
    f"\"default-src 'self'\"><TITLE>t</TITLE></HEAD><BODY>{RUNS}",
}
ALLOWING = {
    "/csp-loose": (("Content-Security-Policy", "default-src * 'unsafe-inline'"),),
    "/csp-report-only": (("Content-Security-Policy-Report-Only", "default-src 'none'"),),
}
# Style sheets that try to hide or restyle the bar.
PLAIN = "<html><head><title>t</title></head><body><p>page</p></body></html>"
STYLED = {
    "/css-plain": "",
    "/css-id": "#dlweb-banner { display: none !important }",
    "/css-everything": "* { display: none !important }",
    "/css-divs": "div { display: none; color: red !important; font-size: 40px !important;"
    " background: yellow !important; height: 0 !important; overflow: hidden !important }",
    "/css-pseudo": '#dlweb-banner::before { content: "captured 1999"; display: block;'
    " font-size: 40px } #dlweb-banner::first-line { letter-spacing: 9px; color: red }",
    "/css-hidden": "html, body, div { visibility: hidden !important; opacity: 0 }",
}
# A page that tries every way a script has to read the bar: a watcher set before it, the host's
# shadow root, its markup, the document's markup, and a shadow root of its own on the host.
SNOOP = """<html><head><title>t</title><script>
var seen = [];
new MutationObserver(function (records) {
  records.forEach(function (r) { r.addedNodes.forEach(function (n) {
    seen.push(n.outerHTML || n.textContent || ""); }); });
}).observe(document, {childList: true, subtree: true});
function attempt(how) { try { return String(how()); } catch (e) { return e.name; } }
window.addEventListener("load", function () {
  var host = document.getElementById("dlweb-banner"), read = {seen: seen.join("\\n")};
  read.shadowRoot = attempt(function () { return host.shadowRoot; });
  read.inner = attempt(function () { return host.innerHTML; });
  read.html = attempt(function () {
    return document.documentElement.getHTML({serializableShadowRoots: true}); });
  read.open = attempt(function () { return host.attachShadow({mode: "open"}).innerHTML; });
  read.closed = attempt(function () {
    var root = host.attachShadow({mode: "closed"});
    return root.innerHTML + "|" + root.childNodes.length; });
  document.body.dataset.read = JSON.stringify(read);
});
</script></head><body><p>page</p></body></html>"""
# Another site's page that asks the API and the figure about the victim's page.
VICTIM = "http://victim.example/"
EVIL = f"""<html><head><title>t</title></head><body><p>evil</p><script>
var asked = {{}};
function note(name) {{
  return [function (text) {{ asked[name] = "read:" + text.slice(0, 80); }},
          function (error) {{ asked[name] = "blocked:" + error.name; }}];
}}
var api = "http://api.dlweb/coherence?url=" + encodeURIComponent("{VICTIM}");
var figure = "http://api.dlweb/coherence/figure?url=" + encodeURIComponent("{VICTIM}");
Promise.all([
  fetch(api).then(function (r) {{ return r.text(); }}).then(...note("api")),
  fetch(figure).then(function (r) {{ return r.text(); }}).then(...note("figure")),
  fetch(api, {{credentials: "include"}}).then(function (r) {{ return r.text(); }})
    .then(...note("credentials")),
]).then(function () {{ document.body.dataset.asked = JSON.stringify(asked); }});
</script></body></html>"""
VICTIM_PAGE = (
    '<html><head><title>victim</title><link rel="stylesheet" href="/style.css"></head>'
    '<body><p>victim</p><img src="/logo.png"></body></html>'
)

# What a page's scripts can see of the bar's links (none), and whether the bar shows.
PAGE_READS_LINKS = 'document.documentElement.outerHTML.includes("captures.dlweb")'
BAR_SHOWN = """function () {
  var bar = this.querySelector(".bar"), box = bar.getBoundingClientRect();
  var style = getComputedStyle(bar), host = getComputedStyle(this.host);
  var hit = this.elementFromPoint(box.left + 4, box.top + box.height / 2);
  return {
    links: Array.from(this.querySelectorAll("a"), (a) => a.textContent.trim()),
    inside: box.top >= 0 && box.left >= 0 && box.bottom <= innerHeight && box.right <= innerWidth,
    height: box.height,
    display: [host.display, style.display], visibility: style.visibility,
    opacity: [host.opacity, style.opacity], color: [style.color, style.backgroundColor],
    font: [style.fontSize, style.fontFamily, style.letterSpacing],
    before: getComputedStyle(this.host, "::before").content,
    hit: !!hit && this.contains(hit),
    root: getComputedStyle(document.documentElement).display,
  };
}"""


def _versions() -> list[Version]:
    pages: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {}
    for path, page in {**PLACED, **UNPLACED}.items():
        pages[path] = ((HTML,), page.replace(BAR, ""))
    for path, headers in {**FORBIDDING, **ALLOWING}.items():
        pages[path] = ((HTML, *headers), f"<html><head><title>t</title></head><body>{RUNS}")
    for path, page in META_FORBIDDING.items():
        pages[path] = ((HTML,), page)
    for path, rules in STYLED.items():
        pages[path] = ((HTML,), PLAIN.replace("</title>", f"</title><style>{rules}</style>"))
    pages["/snoop"] = ((HTML,), SNOOP)
    versions = [
        Version(SITE + path, WHEN, 200, header_block(200, "OK", *headers), body.encode())
        for path, (headers, body) in pages.items()
    ]
    versions.append(
        Version("http://evil.example/", WHEN, 200, header_block(200, "OK", HTML), EVIL.encode())
    )
    victim = {
        "": ("text/html", VICTIM_PAGE.encode()),
        "style.css": ("text/css", b"p {}"),
        "logo.png": ("image/png", b"\x89PNG logo"),
    }
    versions += [
        Version(VICTIM + path, WHEN, 200, header_block(200, "OK", ("Content-Type", kind)), body)
        for path, (kind, body) in victim.items()
    ]
    return versions


@pytest.fixture(scope="module")
def proxy(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Proxy]:
    """A proxy on a one-node cluster holding every page above; the client at 127.0.0.1 (the
    tests' and Chromium's) has its banner on."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, _versions()))
    folder = tmp_path_factory.mktemp("banner")
    started = start_proxy(cluster, folder / "proxy", folder / "proxy.log")
    put_setting(started, banner=True)
    yield started
    started.stop()


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        yield session


async def _page(client: aiohttp.ClientSession, proxy: Proxy, url: str) -> bytes:
    """The page as the proxy sends it to the client's browser loading it."""
    async with client.get(url, proxy=proxy.url, headers=NAVIGATION) as answer:
        assert answer.status == 200, url
        return await answer.read()


def _bar_at(page: bytes, archived: bytes) -> int | None:
    """Where the bar was put in the archived page, or None if it was sent as archived."""
    if page == archived:
        return None
    at = page.find(HOST)
    added = len(page) - len(archived)
    assert at >= 0 and page[at + added - 9 : at + added] == b"</script>", page[:300]
    assert page[:at] + page[at + added :] == archived
    return at


async def _chromium_page(browser: Browser, url: str) -> Tab:
    return await browser.open(url, (900, 400))


async def test_the_bar_goes_only_where_the_page_body_starts(
    proxy: Proxy, client: aiohttp.ClientSession
) -> None:
    for path, page in {**PLACED, **UNPLACED}.items():
        archived = page.replace(BAR, "").encode()
        at = _bar_at(await _page(client, proxy, SITE + path), archived)
        wanted = page.find(BAR) if BAR in page else None
        assert at == wanted, f"{path}: the bar at {at}, not {wanted}"


async def test_no_page_can_read_the_bar_nor_keep_it_from_showing_in_chromium(proxy: Proxy) -> None:
    async with Browser(proxy.url) as browser:
        for path in PLACED:
            tab = await _chromium_page(browser, SITE + path)
            assert await tab.evaluate(PAGE_READS_LINKS) is False, path
            shown = await tab.in_shadow_root("#dlweb-banner", BAR_SHOWN)
            assert shown["links"] == ["all captures", "hide the bar"], (path, shown)
            assert shown["inside"] and shown["height"] > 10 and shown["hit"], (path, shown)


async def test_no_bar_where_a_content_security_policy_of_the_page_forbids_it(
    proxy: Proxy, client: aiohttp.ClientSession
) -> None:
    archived = f"<html><head><title>t</title></head><body>{RUNS}".encode()
    for path in FORBIDDING:
        assert await _page(client, proxy, SITE + path) == archived, path
    for path, page in META_FORBIDDING.items():
        assert await _page(client, proxy, SITE + path) == page.encode(), path
    for path in ALLOWING:
        assert _bar_at(await _page(client, proxy, SITE + path), archived) is not None, path
    # The page's own policy holds in the browser: a bar before its <meta> would have moved it
    # into the body, where browsers ignore it, and the page's script would have run.
    async with Browser(proxy.url) as browser:
        for path in META_FORBIDDING:
            tab = await _chromium_page(browser, SITE + path)
            assert await tab.evaluate("document.title") == "t", path


async def test_page_style_sheets_neither_hide_nor_restyle_the_bar_in_chromium(
    proxy: Proxy,
) -> None:
    async with Browser(proxy.url) as browser:
        shown = {}
        for path in STYLED:
            tab = await _chromium_page(browser, SITE + path)
            shown[path] = await tab.in_shadow_root("#dlweb-banner", BAR_SHOWN)
        plain = shown.pop("/css-plain")
        assert plain["inside"] and plain["height"] > 10 and plain["hit"], plain
        for path, seen in shown.items():
            assert seen == plain, f"{path}: {seen} differs from the plain page's {plain}"


async def test_a_page_script_cannot_reach_the_bar_through_its_shadow_root(proxy: Proxy) -> None:
    async with Browser(proxy.url) as browser:
        tab = await _chromium_page(browser, SITE + "/snoop")
        read: dict[str, Any] = json.loads(await tab.evaluate("document.body.dataset.read"))
    for name, text in read.items():
        assert "captures.dlweb" not in text and "date.dlweb" not in text, (name, text)
    assert read["shadowRoot"] == "null" and read["inner"] == "", read
    assert read["open"] == "NotSupportedError", read
    # A closed shadow root asked for again comes back emptied of the bar.
    assert read["closed"] == "|0", read


async def test_no_other_origin_reads_a_clients_coherence_while_the_bar_figure_shows_it(
    proxy: Proxy, client: aiohttp.ClientSession
) -> None:
    async with Browser(proxy.url) as browser:
        victim = await _chromium_page(browser, VICTIM)
        evil = await _chromium_page(browser, "http://evil.example/")

        async def asked() -> bool:
            return bool(await evil.evaluate("!!document.body.dataset.asked"))

        await eventually(asked, "the other site's page to ask the API")
        seen = json.loads(await evil.evaluate("document.body.dataset.asked"))
        assert seen == {
            "api": "blocked:TypeError",
            "figure": "blocked:TypeError",
            "credentials": "blocked:TypeError",
        }, seen

        figure_url = f"http://api.dlweb/coherence/figure?url={quote(VICTIM, safe='')}"
        figure = await browser.frame(figure_url)

        async def counted() -> bool:
            count = await figure.evaluate(
                'document.getElementById("dlweb-coherence").dataset.count'
            )
            return bool(count == "2")

        await eventually(counted, "the bar's figure to count the victim page's two resources")
        # What the page's scripts can list of what the bar loads names the page, not the date.
        loaded = await victim.evaluate(
            'performance.getEntriesByType("resource").map((e) => e.name)'
            '.filter((name) => name.includes("dlweb"))'
        )
        assert loaded == [figure_url], loaded

    async with client.get(
        "http://api.dlweb/coherence", params={"url": VICTIM}, proxy=proxy.url
    ) as answer:
        assert answer.status == 200 and json.loads(await answer.read())["url"] == VICTIM
        assert "Access-Control-Allow-Origin" not in answer.headers
        assert answer.headers["Cross-Origin-Resource-Policy"] == "same-origin"
    async with client.get(figure_url, proxy=proxy.url) as answer:
        assert answer.status == 200 and "Access-Control-Allow-Origin" not in answer.headers
        policy = answer.headers["Content-Security-Policy"]
        assert policy.endswith("; frame-ancestors http://victim.example"), policy
