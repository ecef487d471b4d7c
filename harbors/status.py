"""`http://status.dlweb/`: the cluster's health as the master reports it (its /status answer
as JSON with `?format=json`).

The page is whole as the server sends it: each storage node's used space as a bar with its
figures in words, its state, the files below their replica target by cause and the repairs. A
small script in the page asks for `?format=json` every few seconds and redraws the figures in
place, so an operator can leave it open; without scripts the page says to reload it.
"""

import html
import json
import time
from typing import Any

from archive.cluster import ClusterError
from archive.hip import RemoteError
from archive.master_answers import ClusterStatus, NodeStatus
from archive.network import NETWORK_ERRORS

from . import page
from .answer import Answer, HarborContext
from .request import HarborRequest

__all__ = ["answer"]

HOME = "http://status.dlweb/"
REFRESH_SECONDS = 5
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")

# The figures the page shows beside the nodes, each a path in the master's /status and what it
# counts; those marked True are problems, shown as alerts when above 0.
FILES = (
    ("files.content", "Contents", False),
    ("files.structure", "Structure files", False),
    ("below_target", "Files below their replica target", True),
    ("below_target_causes.repairing", "being copied again", False),
    ("below_target_causes.cannot_place", "with no node to place a copy on", True),
    ("below_target_causes.no_readable_copy", "with no readable copy", True),
    ("structures_dirty", "Structure files with copies not yet fresh", False),
    ("structures_diverged", "Structure files whose copies differ", True),
)
REPAIRS = (
    ("repairs.running", "Copies being made now", False),
    ("repairs.copied", "Copies made", False),
    ("repairs.failed", "Copies that failed", True),
    ("repairs.deleted", "Extra copies deleted", False),
    ("repairs.to_check", "Files waiting to be checked", False),
    ("repairs.nodes_to_check", "Nodes waiting to be checked", False),
    ("rebalance.state", "Rebalance", False),
)

# Draws the figures again from `?format=json`: the same slots the server filled, the node cards
# cloned from the page's template.
SCRIPT = """
(() => {
  const every = %(every)d * 1000;
  const said = document.getElementById("refreshed");
  const list = document.getElementById("nodes");
  const card = document.getElementById("node-card");
  const units = %(units)s;
  const clock = () => new Date().toISOString().slice(11, 19);
  const count = (v) => typeof v === "number" ? v.toLocaleString("en") : String(v ?? "?");
  const size = (v) => {
    let amount = v, unit = 0;
    while (Math.abs(amount) >= 1024 && unit < units.length - 1) { amount /= 1024; unit++; }
    return unit ? `${amount.toFixed(1)} ${units[unit]}` : `${Math.round(amount)} B`;
  };
  const at = (object, path) => path.split(".").reduce((o, k) => o == null ? o : o[k], object);
  const number = (v) => typeof v === "number" && isFinite(v) ? v : 0;
  const slot = (li, name, text) => { li.querySelector(`[data-slot="${name}"]`).textContent = text; };
  function fill(node) {
    const li = card.content.firstElementChild.cloneNode(true);
    const total = number(node.total), bytes = number(node.bytes);
    const used = Math.min(Math.max(total - number(node.free), 0), total);
    const state = String(node.state ?? "?");
    const usage = total ? `${size(used)} used of ${size(total)} (${Math.round(used * 100 / total)}%%)`
      : "disk space not reported yet";
    Object.assign(li.dataset, {node: node.id, used, total, files: number(node.files), bytes});
    slot(li, "name", String(node.id));
    slot(li, "state", state + (node.reason ? ` (${node.reason})` : ""));
    li.querySelector('[data-slot="state"]').dataset.state = state;
    slot(li, "domain", String(node.domain ?? ""));
    slot(li, "usage", usage);
    slot(li, "held", `${count(number(node.files))} files, ${size(bytes)}`);
    const gauge = li.querySelector(".gauge");
    gauge.setAttribute("aria-label", `${node.id}: ${usage}, ${size(bytes)} of it archive files`);
    const share = (part) => total ? `${(part * 100 / total).toFixed(2)}%%` : "0%%";
    gauge.querySelector(".gauge-archive").style.width = share(Math.min(bytes, used));
    gauge.querySelector(".gauge-other").style.width = share(Math.max(used - bytes, 0));
    return li;
  }
  function show(status) {
    for (const element of document.querySelectorAll("[data-figure]")) {
      const value = at(status, element.dataset.figure);
      element.textContent = count(value);
      if ("alert" in element.dataset) {
        element.closest("tr").classList.toggle("alert", typeof value === "number" && value > 0);
      }
    }
    const nodes = (status.nodes || []).filter((n) => n && typeof n === "object");
    nodes.sort((a, b) => String(a.id).localeCompare(String(b.id)));
    list.replaceChildren(...nodes.map(fill));
  }
  async function refresh() {
    try {
      const answer = await fetch("/?format=json", {cache: "no-store"});
      const status = await answer.json();
      if (!answer.ok) throw new Error(status.error || `HTTP ${answer.status}`);
      show(status);
      said.textContent = `Figures of ${clock()} UTC, refreshed every %(every)d seconds.`;
    } catch (error) {
      said.textContent = `Could not refresh at ${clock()} UTC (${error.message}):`
        + " the figures shown are older.";
    }
    setTimeout(refresh, every);
  }
  said.textContent = `Figures of ${clock()} UTC, refreshed every %(every)d seconds.`;
  setTimeout(refresh, every);
})();
"""


async def answer(context: HarborContext, request: HarborRequest) -> Answer:
    wants_json = request.query.get("format") == "json"
    try:
        master = await context.client.master_url()
    except ClusterError as exc:
        return _unavailable(wants_json, str(exc))
    try:
        _, answer = await context.client.get_object(f"{master}/status")
        status = ClusterStatus.from_json(answer, f"{master}/status")
    except (*NETWORK_ERRORS, ValueError) as exc:
        return _unavailable(wants_json, f"the master at {master} does not answer: {exc}")
    except RemoteError as exc:
        return _unavailable(wants_json, f"the master answered an unexpected status: {exc}")
    if wants_json:
        return Answer(200, (json.dumps(answer, indent=1) + "\n").encode(), "application/json")
    return page.page(f"cluster {status.cluster}", _body(status), current=HOME)


def _unavailable(wants_json: bool, why: str) -> Answer:
    if wants_json:
        return Answer(503, (json.dumps({"error": why}) + "\n").encode(), "application/json")
    body = (
        f'<h1>Cluster status</h1><p class="error">{html.escape(why)}</p>'
        "<p>Reload the page to ask the master again.</p>"
    )
    return page.page("cluster status", body, 503, current=HOME)


def _at(status: dict[str, Any], path: str) -> object:
    value: object = status
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _count(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,}"
    return "?" if value is None else str(value)


def _size(value: int) -> str:
    """Bytes in binary units, as `dlweb status` and the page's script write them."""
    amount, unit = float(value), 0
    while abs(amount) >= 1024 and unit < len(UNITS) - 1:
        amount /= 1024
        unit += 1
    return f"{amount:.1f} {UNITS[unit]}" if unit else f"{amount:.0f} B"


def _figures(status: dict[str, Any], rows: tuple[tuple[str, str, bool], ...]) -> str:
    """A table of figures, each cell naming its path so the script can redraw it."""
    lines = []
    for path, name, alarming in rows:
        value = _at(status, path)
        alert = alarming and isinstance(value, int) and value > 0
        cause = ' class="cause"' if path.startswith("below_target_causes.") else ""
        lines.append(
            f'<tr{" class=alert" if alert else ""}><th scope="row"{cause}>{name}</th>'
            f'<td data-figure="{path}"{" data-alert" if alarming else ""}>'
            f"{html.escape(_count(value))}</td></tr>"
        )
    return f'<table class="figures"><tbody>{"".join(lines)}</tbody></table>'


def _card(node: NodeStatus | None) -> str:
    """A storage node: its name, state, used space as a bar and in words, and what it holds;
    without one, the empty card the page's script fills."""
    name, state, domain = (node.id, node.state, node.domain) if node else ("", "", "")
    total, free, files, bytes_held = (
        (node.total, node.free, node.files, node.bytes) if node else (0, 0, 0, 0)
    )
    used = min(max(total - free, 0), total)
    usage = (
        f"{_size(used)} used of {_size(total)} ({round(used * 100 / total)}%)"
        if total
        else "disk space not reported yet"
    )

    def share(part: int) -> str:
        return f"{part * 100 / total:.2f}%" if total else "0%"

    reason = f" ({node.reason})" if node and node.reason else ""
    label = f"{name}: {usage}, {_size(bytes_held)} of it archive files"
    return (
        f'<li class="node" data-node="{html.escape(name)}" data-used="{used}"'
        f' data-total="{total}" data-files="{files}" data-bytes="{bytes_held}">'
        f'<h3 data-slot="name">{html.escape(name)}</h3>'
        f'<p><span class="state" data-slot="state" data-state="{html.escape(state)}">'
        f"{html.escape(state + reason)}</span>"
        f' <span class="muted">domain <span data-slot="domain">'
        f"{html.escape(domain)}</span></span></p>"
        f'<div class="gauge" role="img" aria-label="{html.escape(label)}">'
        f'<span class="gauge-archive" style="width:{share(min(bytes_held, used))}"></span>'
        f'<span class="gauge-other" style="width:{share(max(used - bytes_held, 0))}"></span>'
        f"</div>"
        f'<p data-slot="usage">{html.escape(usage)}</p>'
        f'<p>Archive files: <span data-slot="held">{files:,} files, {_size(bytes_held)}</span>'
        f"</p></li>"
    )


def _body(status: ClusterStatus) -> str:
    nodes = sorted(status.nodes, key=lambda n: n.id)
    figures = status.to_json()  # the answer the script reads the same figures from
    script = SCRIPT % {"every": REFRESH_SECONDS, "units": json.dumps(UNITS)}
    return f"""<h1>Cluster <span data-figure="cluster">{html.escape(status.cluster)}</span></h1>
<p class="muted"><span id="refreshed">Figures of {time.strftime("%H:%M:%S", time.gmtime())} UTC.</span>
<noscript>Reload the page for newer figures.</noscript></p>
<section aria-labelledby="nodes-heading"><h2 id="nodes-heading">Storage nodes</h2>
<p>Nodes taking new files: <span data-figure="placing.nodes">{_count(status.placing.nodes)}</span>,
in failure domains: <span data-figure="placing.domains">{_count(status.placing.domains)}</span>.
Each bar is a node's disk: the archive's files
<span class="swatch swatch-archive"></span>, other files <span class="swatch swatch-other"></span>
and free space <span class="swatch"></span>.</p>
<ul class="nodes" id="nodes">{"".join(map(_card, nodes))}</ul>
<template id="node-card">{_card(None)}</template></section>
<div class="status-tables">
<section aria-labelledby="files-heading"><h2 id="files-heading">Files</h2>
{_figures(figures, FILES)}</section>
<section aria-labelledby="repairs-heading"><h2 id="repairs-heading">Repairs</h2>
{_figures(figures, REPAIRS)}</section>
</div>
<script>{script}</script>"""
