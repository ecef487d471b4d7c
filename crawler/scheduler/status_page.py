"""The scheduler's status page: the campaign, its agents (with their state as last polled), the
queue, the sites by authority with the depth of their next crawls, the last crawls and the
streams, as HTML that refreshes itself every five seconds."""

import html
import time

from archive.scheduler_answers import CrawlerAgent

from .service import Scheduler
from .store import Store

__all__ = ["agent_row", "status_page"]

PAGE_SITES = 50


def status_page(scheduler: Scheduler) -> str:
    store = scheduler.store
    state = scheduler.status()
    now = time.time()
    agents = _table(
        ["agent", "connected", "site"],
        [[a.name, "yes" if a.connected else "no", a.site or ""] for a in state.agents],
    )
    polled = _table(
        ["agent", "uptime", "memory", "crawling", "pages", "polled"],
        [agent_row(a, now) for a in state.agents],
    )
    queue = _queue(store, now)
    ranks = _ranks(scheduler, now)
    recent = _recent(store, now)
    counts = _table(["", "sites"], [[k, v] for k, v in sorted(state.counts.items())])
    stream_agents = _table(
        ["streaming agent", "connected", "capacity", "streams"],
        [
            [a.name, "yes" if a.connected else "no", a.capacity, a.streams]
            for a in state.stream_agents
        ],
    )
    streams = _streams(store, now)
    policy_agents = _table(
        ["agent", "role", "connected", "work", "done"],
        [
            [a.name, a.role, "yes" if a.connected else "no", a.work, a.done]
            for a in state.policy_agents
        ],
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='5'>"
        "<title>dlweb scheduler</title><style>body{font-family:sans-serif;margin:2em}"
        "td,th{padding:2px 10px;text-align:left}</style></head><body>"
        f"<h1>Scheduler: campaign {html.escape(state.campaign)}</h1>{counts}"
        f"<h2>Agents</h2>{agents}<h2>Agents as last polled</h2>{polled}"
        f"<h2>Queue</h2>{queue}<h2>Recently crawled</h2>{recent}"
        f"<h2>Sites by authority, and their next crawls</h2>{ranks}"
        f"<h2>Streaming agents</h2>{stream_agents}<h2>Streams</h2>{streams}"
        "<h2>Connectivity agents (work: crawls whose links they resolve) and feed aggregators"
        f" (work: feeds they poll)</h2>{policy_agents}"
        "<p><a href='/api/status'>status as JSON</a> · <a href='/api/sites'>sites as JSON</a>"
        " · <a href='/api/streams'>streams as JSON</a></p>"
        "</body></html>"
    )


def agent_row(agent: CrawlerAgent, now: float) -> list[object]:
    """An agent's row: its state as it last answered the poll, and whether it did."""
    row: list[object] = [agent.name]
    status = agent.status
    if status is None:
        row += ["", "", "", ""]
    else:
        row += [
            _due(status.uptime),
            f"{status.rss_mb:.1f} MB",
            ", ".join(status.sites) or status.state,
            status.pages if status.sites else "",
        ]
    if agent.unanswered:
        row.append(f"no answer: {agent.unanswered}")
    else:
        row.append(f"{_due(now - agent.polled)} ago" if agent.polled else "not yet")
    return row


def _queue(store: Store, now: float) -> str:
    queued = sorted(
        store.sites(state="queued", limit=100_000), key=lambda s: (-s.priority, s.next_crawl)
    )[:PAGE_SITES]
    return _table(
        ["site", "start URL", "priority", "due in"],
        [[s.id, s.start_url, f"{s.priority:.3f}", _due(s.next_crawl - now)] for s in queued],
    )


def _ranks(scheduler: Scheduler, now: float) -> str:
    ranked = sorted(scheduler.store.sites(state="idle", limit=100_000), key=lambda s: -s.authority)[
        :PAGE_SITES
    ]
    hints = [scheduler.depth_hint(site) for site in ranked]
    return _table(
        [
            "site",
            "start URL",
            "relevance",
            "hub",
            "authority",
            "crawls",
            "interval",
            "next crawl in",
            "next depth",
        ],
        [
            [
                s.id,
                s.start_url,
                f"{s.relevance:.2f}",
                f"{s.hub:.3f}",
                f"{s.authority:.3f}",
                s.crawls,
                _due(s.interval),
                _due(s.next_crawl - now),
                f"{hint.depth} of {hint.full}: {hint.reason}" if hint.cut else hint.depth,
            ]
            for s, hint in zip(ranked, hints, strict=True)
        ],
    )


def _recent(store: Store, now: float) -> str:
    crawled = sorted(
        (s for s in store.sites(limit=100_000) if s.last_crawl), key=lambda s: -s.last_crawl
    )[:PAGE_SITES]
    return _table(
        ["site", "start URL", "state", "crawled", "change", "crawls"],
        [
            [
                s.id,
                s.start_url,
                s.state,
                f"{_due(now - s.last_crawl)} ago",
                f"{s.change_rate:.2f}",
                s.crawls,
            ]
            for s in crawled
        ],
    )


def _streams(store: Store, now: float) -> str:
    return _table(
        ["stream", "URL", "site", "state", "agent", "recorded until", "gaps"],
        [
            [
                s.id,
                s.url,
                s.site or "",
                s.state,
                s.agent,
                f"{_due(now - s.last_recorded)} ago" if s.last_recorded else "",
                s.gaps,
            ]
            for s in store.streams(limit=PAGE_SITES)
        ],
    )


def _table(headings: list[str], rows: list[list[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headings)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _due(seconds: float) -> str:
    if seconds <= 0:
        return "now"
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
