"""`http://directory.dlweb/[?threshold=T]`: the sites the crawl scheduler knows and crawled, by
topic and by domain, each opening its captures and its map.

A topic is one of the scheduler's clusters of sites by the phrases of their last crawls
(`GET /api/clusters`, crawler/scheduler/clusters.py; `threshold`, a likeness from above 0 to 1,
is passed on), named by the phrases its sites weigh most; sites like no other are listed apart.
A domain is the one its owner registered (search/domains.py). Each site's start URL opens the
captures harbor's calendar of it (its latest month), and its map the map harbor at its last
crawl. The sites are those of `GET /api/sites` that were crawled and not removed, the first
MAX_SITES.
"""

import html
from collections import defaultdict
from urllib.parse import quote

from archive.scheduler_answers import Site, SiteClusters, Sites
from archive.timestamps import format_iso
from search.domains import host_of, registered_domain

from . import page, site_map
from .answer import Answer, HarborContext
from .request import HarborRequest
from .scheduler_api import SchedulerFailure, ask, failure_page

__all__ = ["HOME", "answer"]

HOME = "http://directory.dlweb/"
MAX_SITES = 10_000
HEADING = "Sites of the archive"


def parse_threshold(text: str) -> float | None:
    """The likeness `threshold` asks for, None when it is no number above 0 and at most 1."""
    try:
        threshold = float(text) if len(text) <= 20 else -1.0
    except ValueError:
        return None
    return threshold if 0.0 < threshold <= 1.0 else None


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    if request.path != "/":
        return Answer(404, b"directory.dlweb has / only\n", "text/plain")
    given = request.query.get("threshold")
    asked: dict[str, str] = {}
    if given is not None:
        threshold = parse_threshold(given)
        if threshold is None:
            said = f"threshold={given[:40]!r} is not a likeness above 0 and at most 1, such as 0.2"
            body = f'<h1>{HEADING}</h1>\n<p class="error" role="alert">{html.escape(said)}</p>'
            return page.page("sites", body, 400, current=HOME)
        asked["threshold"] = repr(threshold)
    try:
        sites = await ask(context, Sites, "/api/sites", {"limit": str(MAX_SITES)})
        clusters = await ask(context, SiteClusters, "/api/clusters", asked)
    except SchedulerFailure as exc:
        return failure_page(HEADING, exc, HOME)
    crawled = [s for s in sites.sites if s.crawls > 0 and s.state != "removed"]
    body = _page(crawled, len(sites.sites) - len(crawled), clusters, len(sites.sites))
    return page.page("sites", body, current=HOME)


def _site(site: Site) -> str:
    """A site's line: its start URL opening its captures, when it was crawled, its map."""
    url = site.start_url
    captures = f"http://captures.dlweb/?url={quote(url, safe='')}"
    last = format_iso(int(site.last_crawl) * 1_000_000)
    crawls = f"{site.crawls} crawl{'s' if site.crawls != 1 else ''}"
    return (
        f'<li><a class="url-text" href="{html.escape(captures)}">{html.escape(url)}</a>'
        f' <span class="muted">{crawls}, the last {last}</span>'
        f' <a href="{html.escape(site_map.address(site.id))}"'
        f' aria-label="Map of {html.escape(url)}">Map</a></li>'
    )


def _listed(sites: list[Site]) -> str:
    return f'<ul class="sites">{"".join(_site(s) for s in sites)}</ul>'


def _topics(crawled: list[Site], clusters: SiteClusters) -> str:
    by_id = {site.id: site for site in crawled}
    parts = ['<h2 id="topics">By topic</h2>']
    placed: set[int] = set()
    for n, found in enumerate(clusters.clusters, 1):
        members = [by_id[i] for i in found.sites if i in by_id]
        if not members:
            continue
        placed.update(site.id for site in members)
        named = ", ".join(found.phrases) or f"topic {n}"
        parts.append(f"<h3>{html.escape(named)} ({len(members)})</h3>{_listed(members)}")
    apart = [site for site in crawled if site.id not in placed]
    if apart:
        parts.append(f"<h3>On topics of their own ({len(apart)})</h3>{_listed(apart)}")
    return "\n".join(parts)


def _domains(crawled: list[Site]) -> str:
    grouped: dict[str, list[Site]] = defaultdict(list)
    for site in crawled:
        grouped[registered_domain(host_of(site.start_url)) or "(no host)"].append(site)
    parts = ['<h2 id="domains">By domain</h2>']
    for domain in sorted(grouped):
        members = grouped[domain]
        parts.append(f"<h3>{html.escape(domain)} ({len(members)})</h3>{_listed(members)}")
    return "\n".join(parts)


def _page(crawled: list[Site], waiting: int, clusters: SiteClusters, listed: int) -> str:
    topics = len([c for c in clusters.clusters if c.sites])
    summary = (
        f"<p>{len(crawled):,} sites crawled, in {topics:,} topic{'s' if topics != 1 else ''}"
        " shared by several sites. Each start URL opens its captures; each map, its pages"
        " and links at its last crawl."
        + (f" {waiting:,} more sites are not crawled yet, or removed." if waiting else "")
        + "</p>"
    )
    cut = (
        f'<p class="note">Only the first {MAX_SITES:,} sites the scheduler knows are listed.</p>'
        if listed >= MAX_SITES
        else ""
    )
    if not crawled:
        return f"<h1>{HEADING}</h1>\n{summary}{cut}"
    jump = (
        '<nav aria-label="Groupings"><a href="#topics">By topic</a> ·'
        ' <a href="#domains">By domain</a></nav>'
    )
    return (
        f"<h1>{HEADING}</h1>\n{summary}{cut}{jump}\n{_topics(crawled, clusters)}\n"
        f"{_domains(crawled)}"
    )
