"""`dlweb admin ...` and `dlweb status`: a storage admin's commands, spoken to the master over HTTP."""

import argparse
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from archive.cli import add_config_option, positive_seconds
from archive.config import load_config
from archive.errors import DlwebError

TIMEOUT = 30.0


class AdminError(DlwebError):
    """The master could not be reached or refused the request."""


def call(args: argparse.Namespace, path: str, body: dict[str, Any] | None = None) -> Any:
    """GET (or POST with a JSON body and the cluster token) a master endpoint; its JSON answer."""
    config = load_config(args.config)
    if config.master is None:
        raise AdminError(f"{args.config}: no master URL (key `master`)")
    url = config.master.rstrip("/") + path
    request = urllib.request.Request(url)
    if body is not None:
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {config.write_token}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        try:
            message = json.load(exc).get("error", exc.reason)
        except ValueError:
            message = exc.reason
        raise AdminError(f"the master at {config.master} refused {path}: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AdminError(f"the master at {config.master} does not answer: {reason}") from None


def _size(value: int) -> str:
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return str(value)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )


def _nodes_table(nodes: list[dict[str, Any]]) -> str:
    rows = [["node", "address", "state", "domain", "files", "held", "free"]]
    for node in nodes:
        rows.append(
            [
                str(node["id"]),
                str(node["address"]),
                str(node["state"]) + (" (empty)" if node.get("drained") else ""),
                str(node.get("domain", "")),
                str(node.get("files", "")),
                _size(int(node.get("bytes", 0))),
                _size(int(node.get("free", 0))),
            ]
        )
    return _table(rows)


def _print(args: argparse.Namespace, answer: Any, text: str) -> None:
    print(json.dumps(answer, indent=2) if args.json else text)


def _status(args: argparse.Namespace) -> int:
    status = call(args, "/status")
    files = status["files"]
    repairs = status["repairs"]
    rebalance = status["rebalance"]
    lines = [
        f"cluster {status['cluster']}: {files['content']} contents, {files['structure']} structure"
        f" files; {status['below_target']} below replica target, {status['lost']} without a"
        " readable copy",
        f"repairs: {repairs['running']} running, {repairs['copied']} copied,"
        f" {repairs['failed']} failed; rebalance: {rebalance.get('state')}",
        f"index nodes: {', '.join(status['index_nodes']) or 'none'}",
        "",
        _nodes_table(status["nodes"]) if status["nodes"] else "no storage node has joined",
    ]
    _print(args, status, "\n".join(lines))
    return 0


def _nodes(args: argparse.Namespace) -> int:
    nodes = call(args, "/status")["nodes"]
    _print(args, nodes, _nodes_table(nodes) if nodes else "no storage node has joined")
    return 0


def _set_state(state: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        answer = call(args, f"/admin/nodes/{args.node}/state", {"state": state})
        _print(args, answer, f"node {answer['id']} is now {answer['state']}")
        return 0

    return run


def _plan_text(answer: dict[str, Any]) -> str:
    if "plan" in answer:
        plan = answer["plan"]
        head = f"plan: move {plan['files']} files ({_size(plan['bytes'])})"
        moves = plan["moves"]
    else:
        progress = answer.get("progress", {})
        head = (
            f"rebalance {answer.get('state')}: {progress.get('moved', 0)} of"
            f" {progress.get('files', 0)} files moved ({_size(progress.get('bytes_moved', 0))}"
            f" of {_size(progress.get('bytes', 0))})"
        )
        moves = answer.get("moves", [])
    rows = [["from", "to", "files", "bytes"]] + [
        [m["src"], m["dst"], str(m["files"]), _size(m["bytes"])] for m in moves
    ]
    return head + ("\n" + _table(rows) if moves else "")


def _rebalance(args: argparse.Namespace) -> int:
    if args.stop:
        answer = call(args, "/admin/rebalance", {"stop": True})
    elif args.apply:
        body = {"apply": True, "files_per_s": args.files_per_s, "bytes_per_s": args.bytes_per_s}
        answer = call(args, "/admin/rebalance", body)
    else:
        answer = call(args, "/admin/rebalance")
    text = _plan_text(answer)
    if not args.apply and not args.stop and "plan" in answer:
        text += "\n(nothing moved: run again with --apply to carry it out)"
    _print(args, answer, text)
    return 0


def _scrub(args: argparse.Namespace) -> int:
    answer = call(args, "/admin/scrub", {"node": args.node})
    lines = [
        f"{node}: {'started' if result.get('started') else result.get('error', 'already running')}"
        for node, result in answer["scrub"].items()
    ]
    _print(args, answer, "\n".join(lines) or "no node is connected")
    return 0


def _fsck(args: argparse.Namespace) -> int:
    report = call(args, "/admin/fsck")
    lines = [
        f"{report['files']['content']} contents, {report['files']['structure']} structure files",
        f"below replica target: {report['below_target']} ({report['lost']} with no readable copy)",
        f"structure files without an active copy: {report['structures_without_active']}",
        f"structure replicas waiting for a refresh: {report['structures_dirty']}",
        f"orphans: {report['orphans']}",
    ]
    for problem in report["problems"][:20]:
        lines.append(
            f"  {problem['kind']} {problem['name']}: {problem['replicas']} of {problem['target']}"
        )
    lines.append("ok" if report["ok"] else "PROBLEMS FOUND")
    _print(args, report, "\n".join(lines))
    return 0 if report["ok"] else 1


def _common(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print the master's JSON answer")
    return parser


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    status = _common(subparsers.add_parser("status", help="the cluster's health, from the master"))
    status.set_defaults(run=_status)
    admin = subparsers.add_parser("admin", help="storage admin commands (talk to the master)")
    actions = admin.add_subparsers(dest="action", required=True, metavar="ACTION")
    _common(actions.add_parser("nodes", help="list the storage nodes")).set_defaults(run=_nodes)
    for name, state, text in (
        ("drain", "draining", "move every file off a node, then leave it empty"),
        ("undrain", "alive", "make a node take files again"),
        ("read-only", "read-only", "keep a node's files but send it nothing new"),
    ):
        parser = _common(actions.add_parser(name, help=text))
        parser.add_argument("node", help="node id")
        parser.set_defaults(run=_set_state(state))
    rebalance = _common(actions.add_parser("rebalance", help="show (or --apply) a rebalance plan"))
    mode = rebalance.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="carry the plan out")
    mode.add_argument("--stop", action="store_true", help="stop a running rebalance")
    rebalance.add_argument(
        "--files-per-s", type=positive_seconds, default=200.0, help="files moved per second (200)"
    )
    rebalance.add_argument(
        "--bytes-per-s",
        type=positive_seconds,
        default=64.0 * 1024 * 1024,
        help="bytes moved per second (64 MiB)",
    )
    rebalance.set_defaults(run=_rebalance)
    scrub = _common(actions.add_parser("scrub", help="re-hash every file of one node or all"))
    scrub.add_argument("node", nargs="?", default=None, help="node id (default: every node)")
    scrub.set_defaults(run=_scrub)
    _common(actions.add_parser("fsck", help="files below target and other problems")).set_defaults(
        run=_fsck
    )
