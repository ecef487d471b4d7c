"""The scheduler's HTTP side: HIP for the agents, the operator's JSON API and a status page."""

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from archive.answers import Answer
from archive.errors import DlwebError
from archive.scheduler_answers import Domains, SecondAgentSent, Site, Sites, Stream, Streams
from archive.serving import json_body, token_guard
from archive.timestamps import BadTime, parse_time
from archive.urlkey import canonical_url

from ..delimitation import Delimitation
from ..site_graph import MAX_PAGES
from .clusters import DEFAULT_THRESHOLD, SiteTopics, cluster
from .crawl_graph import crawl_at, crawl_graph, read_graph_file
from .service import Scheduler
from .status_page import status_page
from .steering import checked_domain, checked_urls
from .stream_registry import STREAM_STATES

__all__ = ["build_app"]

SCHEDULER = web.AppKey("scheduler", Scheduler)
TOKEN = web.AppKey("token", str)
TOPICS = web.AppKey("topics", SiteTopics)
MAX_BODY = 64 * 1024
MAX_INJECTION = 16 * 2**20  # the body of /api/urls/inject: 10,000 URLs of 1.6 KB
T = TypeVar("T")
routes = web.RouteTableDef()


def _answered(answer: Answer, status: int = 200) -> web.Response:
    return web.json_response(answer.to_json(), status=status)


def _scheduler(request: web.Request) -> Scheduler:
    return request.app[SCHEDULER]


def _numbered(request: web.Request, what: str, find: Callable[[int], T | None]) -> T:
    """The site or stream whose number the path gives; 404 when there is none."""
    raw = request.match_info["id"]
    found = find(int(raw)) if raw.isdigit() else None
    if found is None:
        raise web.HTTPNotFound(reason=f"no {what} {raw[:40]!r}")
    return found


def _site_of(request: web.Request) -> Site:
    return _numbered(request, "site", _scheduler(request).store.site)


@routes.get("/api/status")
async def status(request: web.Request) -> web.Response:
    return _answered(_scheduler(request).status())


@routes.get("/api/sites")
async def list_sites(request: web.Request) -> web.Response:
    state = request.query.get("state") or None
    try:
        limit = min(int(request.query.get("limit", "1000")), 100_000)
        offset = int(request.query.get("offset", "0"))
    except ValueError:
        raise web.HTTPBadRequest(reason="limit and offset must be whole numbers") from None
    sites = _scheduler(request).store.sites(state=state, limit=limit, offset=offset)
    return _answered(Sites(tuple(sites)))


@routes.get("/api/sites/{id}")
async def show_site(request: web.Request) -> web.Response:
    return _answered(_scheduler(request).site_detail(_site_of(request)))


@routes.post("/api/sites")
async def add_site(request: web.Request) -> web.Response:
    body = await json_body(request, MAX_BODY)
    # A BadOrder or a BadUrl is a 400 naming what to change (archive/serving.py status_of).
    delimitation = Delimitation.from_order(body)
    canonical_url(delimitation.start_url)
    seed = body.get("seed", False)
    priority = body.get("priority", 0.0)
    if (
        not isinstance(seed, bool)
        or isinstance(priority, bool)
        or not isinstance(priority, int | float)
    ):
        raise web.HTTPBadRequest(reason="seed must be true or false, priority a number")
    try:
        site = _scheduler(request).register(
            delimitation.start_url,
            delimitation.accept,
            delimitation.reject,
            max_depth=delimitation.max_depth,
            priority=float(priority),
            source="operator",
            seed=seed,
        )
    except DlwebError as exc:
        raise web.HTTPConflict(reason=str(exc)) from None
    return _answered(site, status=201)


def _site_of_id(request: web.Request, site_id: int) -> Site:
    site = _scheduler(request).store.site(site_id)
    assert site is not None
    return site


async def _to_state(request: web.Request, state: str) -> web.Response:
    site = _site_of(request)
    _scheduler(request).store.set_state(site.id, state)
    return _answered(_site_of_id(request, site.id))


@routes.post("/api/sites/{id}/blacklist")
async def blacklist(request: web.Request) -> web.Response:
    return await _to_state(request, "blacklisted")


@routes.delete("/api/sites/{id}")
async def remove(request: web.Request) -> web.Response:
    return await _to_state(request, "removed")


@routes.post("/api/sites/{id}/inject")
async def inject(request: web.Request) -> web.Response:
    """Crawl this site next, with this priority (also takes a site off the blacklist)."""
    site = _site_of(request)
    body = await json_body(request, MAX_BODY)
    priority = body.get("priority", site.priority)
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        raise web.HTTPBadRequest(reason="priority must be a number")
    store = _scheduler(request).store
    store.set_priority(site.id, float(priority))
    if site.state != "crawling":
        store.set_state(site.id, "queued", next_crawl=time.time())
    _scheduler(request).wake()
    return _answered(_site_of_id(request, site.id))


@routes.post("/api/urls/inject")
async def inject_urls(request: web.Request) -> web.Response:
    """URLs into the next crawls of their sites (steering.py), each with its score and campaign;
    for each, the site it went to and whether that site was created, or why it was refused."""
    body = await json_body(request, MAX_INJECTION)
    urls = checked_urls(body.get("urls"))
    return _answered(_scheduler(request).steering.inject(urls))


@routes.get("/api/blacklist")
async def show_blacklist(request: web.Request) -> web.Response:
    return _answered(_scheduler(request).steering.blacklist())


@routes.post("/api/blacklist")
async def add_to_blacklist(request: web.Request) -> web.Response:
    body = await json_body(request, MAX_INJECTION)
    return _answered(_scheduler(request).steering.add_patterns(body))


@routes.delete("/api/blacklist")
async def remove_from_blacklist(request: web.Request) -> web.Response:
    body = await json_body(request, MAX_INJECTION)
    return _answered(_scheduler(request).steering.remove_patterns(body))


@routes.get("/api/domains")
async def domains(request: web.Request) -> web.Response:
    return _answered(Domains(tuple(_scheduler(request).store.domains())))


@routes.put("/api/domains/{domain}")
async def set_domain(request: web.Request) -> web.Response:
    """A domain's budget and delay bounds, applied to the next orders of its sites."""
    settings = checked_domain(request.match_info["domain"], await json_body(request, MAX_BODY))
    _scheduler(request).store.set_domain(settings)
    return _answered(settings)


@routes.post("/api/sites/{id}/second-agent")
async def second_agent(request: web.Request) -> web.Response:
    site = _site_of(request)
    try:
        name = await _scheduler(request).send_second(site.id)
    except DlwebError as exc:
        raise web.HTTPConflict(reason=str(exc)) from None
    return _answered(SecondAgentSent(site.id, name))


@routes.get("/api/streams")
async def list_streams(request: web.Request) -> web.Response:
    state = request.query.get("state") or None
    if state is not None and state not in STREAM_STATES:
        raise web.HTTPBadRequest(reason=f"state must be one of {', '.join(STREAM_STATES)}")
    streams = _scheduler(request).store.streams(state=state, limit=100_000)
    return _answered(Streams(tuple(streams)))


def _stream_of(request: web.Request) -> Stream:
    return _numbered(request, "stream", _scheduler(request).store.stream)


@routes.get("/api/streams/{id}")
async def show_stream(request: web.Request) -> web.Response:
    return _answered(_scheduler(request).streams.detail(_stream_of(request)))


def _url_of(body: dict[str, Any]) -> str:
    url = body.get("url")
    if not isinstance(url, str) or not url:
        raise web.HTTPBadRequest(reason="url must be the stream's URL")
    return url


@routes.post("/api/streams")
async def add_stream(request: web.Request) -> web.Response:
    """Record a stream: registered if new, handed to a streaming agent with a free slot."""
    body = await json_body(request, MAX_BODY)
    site = body.get("site")
    if site is not None and (type(site) is not int or site < 1):
        raise web.HTTPBadRequest(reason="site must be a site id")
    # A BadUrl is a 400 naming what is wrong, an unknown site a 404 (archive/serving.py).
    stream = _scheduler(request).streams.add(_url_of(body), site)
    return _answered(stream)


@routes.post("/api/streams/stop")
async def stop_stream(request: web.Request) -> web.Response:
    body = await json_body(request, MAX_BODY)
    stream = await _scheduler(request).streams.stop(_url_of(body))
    return _answered(stream)


@routes.post("/api/campaign")
async def campaign(request: web.Request) -> web.Response:
    body = await json_body(request, MAX_BODY)
    try:
        _scheduler(request).set_campaign(str(body.get("state", "")))
    except DlwebError as exc:
        raise web.HTTPBadRequest(reason=str(exc)) from None
    return _answered(_scheduler(request).status())


@routes.get("/api/clusters")
async def clusters(request: web.Request) -> web.Response:
    """The crawled sites grouped by the phrases of their last crawls (clusters.py)."""
    try:
        threshold = float(request.query.get("threshold", DEFAULT_THRESHOLD))
    except ValueError:
        threshold = -1.0
    if not 0.0 < threshold <= 1.0:
        raise web.HTTPBadRequest(reason="threshold must be a number above 0, at most 1")
    topics = request.app[TOPICS].topics(_scheduler(request).store)
    return _answered(cluster(topics, threshold))


@routes.get("/api/sites/{id}/graph")
async def site_graph(request: web.Request) -> web.Response:
    """The site's page graph as the crawl begun last at or before `at` (4 to 14 digits,
    YYYYMMDDhhmmss, or ISO 8601; by default its last crawl) found it, its first `pages` pages
    (1 to 20,000, all by default) and the links between them (crawl_graph.py)."""
    site = _site_of(request)
    at_text = request.query.get("at", "")
    try:
        at = parse_time(at_text) if at_text else None
    except BadTime as exc:
        raise web.HTTPBadRequest(reason=f"at: {exc.reason}") from None
    pages_text = request.query.get("pages", str(MAX_PAGES))
    digits = pages_text.isascii() and pages_text.isdigit() and len(pages_text) <= 6
    pages = int(pages_text) if digits else 0
    if not 1 <= pages <= MAX_PAGES:
        raise web.HTTPBadRequest(reason=f"pages must be a whole number from 1 to {MAX_PAGES:,}")
    crawl = crawl_at(_scheduler(request).store, site, at)
    graph = await asyncio.to_thread(read_graph_file, crawl)
    return _answered(crawl_graph(site, crawl, graph, pages))


@routes.post("/api/agents/{name}/clone")
async def clone(request: web.Request) -> web.Response:
    try:
        return web.json_response(await _scheduler(request).clone(request.match_info["name"]))
    except DlwebError as exc:
        raise web.HTTPNotFound(reason=str(exc)) from None


@routes.get("/")
async def page(request: web.Request) -> web.Response:
    return web.Response(text=status_page(_scheduler(request)), content_type="text/html")


def build_app(scheduler: Scheduler, token: str) -> web.Application:
    app = web.Application(
        middlewares=[token_guard(lambda request: request.app[TOKEN], "scheduler")],
        client_max_size=MAX_INJECTION,
    )
    app[SCHEDULER] = scheduler
    app[TOKEN] = token
    app[TOPICS] = SiteTopics()
    scheduler.hip.add_routes(app)
    app.add_routes(routes)
    return app
