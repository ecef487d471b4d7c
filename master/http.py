"""The master's HTTP interface: status (JSON and a page), location queries and admin actions."""

import html
import json
import logging
from typing import Any

from aiohttp import web

from archive.cluster import KINDS
from archive.hashing import is_valid_name
from archive.master_answers import ClusterStatus
from archive.serving import json_body, json_error, starts_work, token_guard

from .service import Master

log = logging.getLogger(__name__)

MASTER = web.AppKey("master", Master)
MAX_BODY = 64 * 1024
STRUCTURE_PAGE = 10_000
PROBLEMS_PAGE = 1_000  # files below target looked up at a time while a list of them streams
routes = web.RouteTableDef()


_guard = token_guard(lambda request: request.app[MASTER].options.config.write_token, "master")


async def _body(request: web.Request) -> dict[str, Any]:
    return await json_body(request, MAX_BODY)


def _rate(body: dict[str, Any], key: str, default: float) -> float:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise web.HTTPBadRequest(reason=f"{key} must be a non-negative number")
    return float(value)


@routes.get("/status")
async def get_status(request: web.Request) -> web.Response:
    status = request.app[MASTER].admin.status()
    if "text/html" in request.headers.get("Accept", "") and "format" not in request.query:
        return web.Response(text=_status_page(status), content_type="text/html")
    return web.json_response(status.to_json())


def _status_page(status: ClusterStatus) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(getattr(node, key)))}</td>"
            for key in ("id", "address", "state", "domain", "reliability", "files", "bytes", "free")
        )
        + f"<td>{html.escape(node.reason or '')}</td></tr>"
        for node in status.nodes
    )
    repairs, causes, placing = status.repairs, status.below_target_causes, status.placing
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>dlweb cluster {html.escape(status.cluster)}</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:.2em .8em;text-align:left}}</style>
</head><body><h1>Cluster {html.escape(status.cluster)}</h1>
<p>{status.files.content} contents, {status.files.structure} structure files;
<b>{status.below_target}</b> below replica target: {causes.repairing} being repaired,
<b>{causes.cannot_place}</b> that cannot be placed ({placing.nodes} nodes take new
files, in {placing.domains} failure domains), <b>{status.lost}</b> without a
readable copy; repairs running: {repairs.running}, copied {repairs.copied}, failed
{repairs.failed}; rebalance: {html.escape(status.rebalance.state)}.</p>
<table><tr><th>node</th><th>address</th><th>state</th><th>domain</th><th>reliability</th>
<th>files</th><th>bytes</th><th>free</th><th>why</th></tr>{rows}</table></body></html>"""


@routes.get("/locate/{kind}/{name}")
async def locate(request: web.Request) -> web.Response:
    kind, name = request.match_info["kind"], request.match_info["name"]
    if kind not in KINDS:
        return json_error(400, f"kind must be content or structure, not {kind[:20]!r}")
    if not is_valid_name(name):
        return json_error(400, "a file name is 64 lowercase hex digits")
    return web.json_response(request.app[MASTER].admin.locate(kind, name).to_json())


@routes.get("/structures")
async def structures(request: web.Request) -> web.Response:
    """Every structure file, a page at a time (`?after=NAME&limit=N`), for exports."""
    after = request.query.get("after", "")
    limit_text = request.query.get("limit", str(STRUCTURE_PAGE))
    if after and not is_valid_name(after):
        return json_error(400, "after must be a file name, 64 lowercase hex digits")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= STRUCTURE_PAGE:
        return json_error(400, f"limit must be a whole number from 1 to {STRUCTURE_PAGE}")
    page = request.app[MASTER].admin.structures(after, int(limit_text))
    return web.json_response(page.to_json())


@routes.get("/admin/fsck")
@starts_work(
    when=lambda request: any(request.query.get(flag, "0") != "0" for flag in ("deep", "recount"))
)
async def fsck(request: web.Request) -> web.Response:
    """Report the files below target; a deep fsck reads every structure file of the cluster,
    and a recount counts every file and location again, work that needs the token."""
    flags = {flag: request.query.get(flag, "0") for flag in ("deep", "recount")}
    for flag, value in flags.items():
        if value not in ("0", "1"):
            return json_error(400, f"{flag} must be 0 or 1")
    admin = request.app[MASTER].admin
    report = await admin.fsck(flags["deep"] == "1", flags["recount"] == "1")
    return web.json_response(report.to_json())


def _cursor(text: str) -> tuple[str, str] | None:
    """A file as `kind/name` (the `next` of a problems list), ("", "") for none; None if bad."""
    if not text:
        return "", ""
    kind, _, name = text.partition("/")
    return (kind, name) if kind in KINDS and is_valid_name(name) else None


@routes.get("/admin/fsck/problems")
async def fsck_problems(request: web.Request) -> web.StreamResponse:
    """Every file below target, one JSON object a line in name order, looked up a page
    at a time; the last line's `next` resumes the list after where it stopped (null at the
    end). `after` starts after a file, `limit` stops after that many."""
    after = _cursor(request.query.get("after", ""))
    if after is None:
        return json_error(400, "after must be kind/name: content or structure, then a file name")
    limit_text = request.query.get("limit", "")
    if limit_text and not (limit_text.isdigit() and len(limit_text) <= 12 and int(limit_text)):
        return json_error(400, "limit must be a whole number from 1")
    left = int(limit_text) if limit_text else None
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    admin = request.app[MASTER].admin
    last: tuple[str, str] | None = None
    while left is None or left > 0:
        page = PROBLEMS_PAGE if left is None else min(PROBLEMS_PAGE, left)
        problems = admin.fsck_problems(after, page)
        if problems:
            lines = "".join(json.dumps(p.to_json()) + "\n" for p in problems)
            await response.write(lines.encode())
            after = last = (problems[-1].kind, problems[-1].name)
        if left is not None:
            left -= len(problems)
        if len(problems) < page:
            last = None
            break
    await response.write(
        json.dumps({"next": None if last is None else "/".join(last)}).encode() + b"\n"
    )
    await response.write_eof()
    return response


@routes.post("/admin/nodes/{node}/state")
async def set_state(request: web.Request) -> web.Response:
    body = await _body(request)
    row = request.app[MASTER].admin.set_node_state(
        request.match_info["node"], str(body.get("state"))
    )
    return web.json_response(row.to_json())


@routes.get("/admin/rebalance")
async def get_rebalance(request: web.Request) -> web.Response:
    return web.json_response(request.app[MASTER].rebalancer.report().to_json())


@routes.post("/admin/rebalance")
async def post_rebalance(request: web.Request) -> web.Response:
    body = await _body(request)
    rebalancer = request.app[MASTER].rebalancer
    if body.get("stop"):
        return web.json_response(rebalancer.stop().to_json())
    if body.get("apply") is not True:
        return json_error(400, 'give {"apply": true} to start the plan or {"stop": true} to stop')
    files_per_s = _rate(body, "files_per_s", 200.0)
    bytes_per_s = _rate(body, "bytes_per_s", 64.0 * 1024 * 1024)
    return web.json_response(rebalancer.apply(files_per_s, bytes_per_s).to_json())


@routes.post("/admin/scrub")
async def post_scrub(request: web.Request) -> web.Response:
    body = await _body(request)
    master = request.app[MASTER]
    node = body.get("node")
    if node is None:
        nodes = list(master.members.links)
    elif isinstance(node, str) and node in master.members.rows:
        nodes = [node]
    else:
        return json_error(404, f"no node {str(node)[:100]!r} in this cluster")
    return web.json_response((await master.scrubs.start(nodes)).to_json())


def build_app(master: Master) -> web.Application:
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY)
    app[MASTER] = master
    master.hip.add_routes(app)
    app.add_routes(routes)
    return app
