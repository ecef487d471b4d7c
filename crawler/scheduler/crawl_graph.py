"""A site's page graph at a date, for `GET /api/sites/{id}/graph`: the graph file of the crawl
begun last at or before the date (crawler/site_graph.py writes it beside the crawl's signature
file, and the report names it), read bounded in size and cut to the pages asked for."""

import json
from pathlib import Path

from aiohttp import web

from archive.scheduler_answers import Crawl, CrawlGraph, Site
from archive.timestamps import format_iso

from ..site_graph import MAX_PAGES, SiteGraph
from .store import Store

__all__ = ["MAX_GRAPH_FILE", "SEARCHED_CRAWLS", "crawl_at", "crawl_graph", "graph_file_of"]

SEARCHED_CRAWLS = 500  # a site's last crawls looked through for the one at a date
MAX_GRAPH_FILE = 16 * 2**20  # bytes: a larger graph file is refused, not read


def crawl_at(store: Store, site: Site, at: int | None) -> Crawl:
    """The crawl of `site` begun last at or before `at` (UTC microseconds; None: its last
    crawl); 404 saying so when there is none among its last SEARCHED_CRAWLS."""
    crawls = store.crawls(site.id, limit=SEARCHED_CRAWLS)
    for crawl in crawls:
        if at is None or crawl.started * 1_000_000 <= at:
            return crawl
    if not crawls:
        raise web.HTTPNotFound(reason=f"site {site.id} was never crawled")
    asked = "" if at is None else f" begun at or before {format_iso(at)}"
    first = format_iso(int(crawls[-1].started * 1_000_000))
    raise web.HTTPNotFound(
        reason=f"site {site.id} has no crawl{asked}: the earliest of its last {len(crawls)}"
        f" crawls began {first}"
    )


def graph_file_of(crawl: Crawl) -> Path:
    """The graph file the crawl's report names; 404 when it names none."""
    graph = crawl.report.get("graph")
    name = graph.get("file") if isinstance(graph, dict) else None
    if not isinstance(name, str) or not name:
        raise web.HTTPNotFound(reason=f"crawl {crawl.id} of site {crawl.site} has no site graph")
    return Path(name)


def read_graph_file(crawl: Crawl) -> SiteGraph:
    """The crawl's graph from its file: 404 when the file is gone, 422 when it is larger than
    MAX_GRAPH_FILE, 500 when it is no graph. The messages name the crawl, never the file."""
    path = graph_file_of(crawl)
    which = f"the site graph of crawl {crawl.id} of site {crawl.site}"
    try:
        size = path.stat().st_size
        if size > MAX_GRAPH_FILE:
            raise web.HTTPUnprocessableEntity(
                reason=f"{which} is {size:,} bytes, more than the {MAX_GRAPH_FILE:,} the"
                " scheduler reads"
            )
        with path.open("rb") as file:
            data = file.read(MAX_GRAPH_FILE + 1)
    except FileNotFoundError:
        raise web.HTTPNotFound(reason=f"{which} is not on the scheduler's disk") from None
    except OSError as exc:
        raise web.HTTPInternalServerError(
            reason=f"{which} cannot be read: {exc.strerror}"
        ) from None
    if len(data) > MAX_GRAPH_FILE:  # it grew since
        raise web.HTTPUnprocessableEntity(reason=f"{which} is larger than the scheduler reads")
    try:
        return SiteGraph.from_json(json.loads(data))
    except (ValueError, RecursionError) as exc:
        raise web.HTTPInternalServerError(reason=f"{which} is not a site graph: {exc}") from None


def crawl_graph(site: Site, crawl: Crawl, graph: SiteGraph, pages: int = MAX_PAGES) -> CrawlGraph:
    """The answer: the graph's first `pages` pages (the start page and those the crawl met
    first) and the links between them."""
    kept = list(graph.pages)[:pages]
    edges = tuple(sorted((a, b) for a, b in graph.edges if a < len(kept) and b < len(kept)))
    return CrawlGraph(
        site=site.id,
        start_url=site.start_url,
        crawl=crawl.id,
        started=crawl.started,
        finished=crawl.finished,
        pages=tuple(kept),
        edges=edges,
        total_pages=len(graph.pages),
        total_edges=len(graph.edges),
        truncated=graph.truncated,
    )
