"""Each agent's monitoring page: the site it crawls, its queues, its pace, its errors, its last URLs."""

import html
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from archive.config import HttpTimeouts
from archive.connections import app_runner

__all__ = ["start_monitor"]

Status = Callable[[], dict[str, Any]]

_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>dlweb crawler agent {name}</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 12px;text-align:left}}</style>
</head><body><h1>Crawler agent {name}</h1>
<table>{rows}</table>
<h2>Queues by level</h2><table><tr><th>level</th><th>URLs waiting</th></tr>{queues}</table>
<h2>Errors</h2><table>{errors}</table>
<h2>Last URLs</h2><ol>{last}</ol>
<p><a href="/status.json">as JSON</a></p></body></html>
"""


def _row(name: str, value: object) -> str:
    return f"<tr><th>{html.escape(name)}</th><td>{html.escape(str(value))}</td></tr>"


def render(status: dict[str, Any]) -> str:
    crawl = status.get("crawl", {})
    rows = "".join(
        _row(label, value)
        for label, value in (
            ("state", status.get("state", "")),
            ("current site", crawl.get("site", "") or "none"),
            ("pages/s", crawl.get("pages_per_second", 0)),
            ("pages", crawl.get("pages", 0)),
            ("fetched", crawl.get("fetched", 0)),
            ("sites done", crawl.get("sites_done", 0)),
            ("memory (RSS, MB)", status.get("rss_mb", "")),
        )
    )
    queues = "".join(
        f"<tr><td>{html.escape(level)}</td><td>{n}</td></tr>"
        for level, n in crawl.get("queues", {}).items()
    )
    errors = "".join(_row(kind, n) for kind, n in status.get("errors", {}).items()) or _row(
        "none", ""
    )
    last = "".join(f"<li>{html.escape(url)}</li>" for url in crawl.get("last_urls", []))
    return _PAGE.format(
        name=html.escape(str(status.get("name", ""))),
        rows=rows,
        queues=queues,
        errors=errors,
        last=last,
    )


async def start_monitor(
    host: str, port: int, status: Status, timeouts: HttpTimeouts
) -> web.AppRunner:
    """Serve the page and /status.json; the runner's address tells the port chosen."""

    async def page(_: web.Request) -> web.Response:
        return web.Response(text=render(status()), content_type="text/html")

    async def as_json(_: web.Request) -> web.Response:
        return web.Response(text=json.dumps(status(), indent=1), content_type="application/json")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/status.json", as_json)
    runner = app_runner(app, timeouts)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
