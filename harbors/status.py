"""`http://status.dlweb/`: the cluster's health as the master reports it (JSON with
`?format=json`)."""

import html
import json

import aiohttp

from archive.cluster import ClusterError

from .answer import Answer, HarborContext
from .request import HarborRequest


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    try:
        master = await context.client.master_url()
    except ClusterError as exc:
        return Answer(503, f"{exc}\n".encode(), "text/plain")
    try:
        async with context.client.session.get(f"{master}/status") as r:
            status = await r.json(content_type=None)
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        return Answer(
            503, f"the master at {master} does not answer: {exc}\n".encode(), "text/plain"
        )
    if request.query.get("format") == "json":
        return Answer(200, (json.dumps(status, indent=1) + "\n").encode(), "application/json")
    rows = "".join(
        f"<tr><td>{html.escape(str(n.get('id')))}</td><td>{html.escape(str(n.get('state')))}</td>"
        f"<td>{(n.get('free') or 0) / 1e9:,.1f} GB</td><td>{html.escape(str(n.get('files', '')))}</td></tr>"
        for n in status.get("nodes", [])
        if isinstance(n, dict)
    )
    files = status.get("files", {})
    body = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>dlweb: cluster status</title></head>
<body><h1>Cluster {html.escape(str(status.get("cluster", "")))}</h1>
<p>{files.get("content", 0):,} contents and {files.get("structure", 0):,} structure files;
<b>{status.get("below_target", 0):,}</b> below their replica target,
<b>{status.get("lost", 0):,}</b> without a readable copy.</p>
<table><tr><th>node</th><th>state</th><th>free</th><th>files</th></tr>{rows}</table>
</body></html>
"""
    return Answer(200, body.encode(), "text/html; charset=utf-8")
