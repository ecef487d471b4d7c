"""`dlweb admin ...` and `dlweb status`: a storage admin's commands, spoken to the master over HTTP."""

import argparse
import asyncio
import contextlib
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from archive import discovery
from archive.answers import parsed
from archive.command_line import Runner, Subparsers, add_config_option, positive_seconds
from archive.config import load_config
from archive.errors import DlwebError
from archive.master_answers import (
    ClusterStatus,
    FileBelowTarget,
    FsckReport,
    MoveProgress,
    NodeRecord,
    NodeScrub,
    NodeStatus,
    Rebalance,
    Scrubbing,
)
from archive.progress import terminal_bar

TIMEOUT = 15.0
SHOWN_PROBLEMS = 20
CAUSE_TEXT = {
    "repairing": "being repaired",
    "cannot_place": "cannot be placed",
    "no_readable_copy": "no readable copy",
}


class AdminError(DlwebError):
    """The master could not be reached, refused the request, or answered something unexpected."""


def _not_understood(message: str) -> AdminError:
    """An answer of the master's that is not what its path answers: `message` names the path
    and the field at fault."""
    return AdminError(f"the master's answer to {message}")


def _error_field(body: bytes) -> str | None:
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    message = answer.get("error") if isinstance(answer, dict) else None
    return str(message) if message is not None else None


@contextlib.contextmanager
def _answer(master: str, path: str, req: urllib.request.Request) -> Iterator[Any]:
    """The master's answer to `req`, read within the block; AdminError saying why when it
    refuses the request or cannot be reached, before or while the answer is read."""
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as answer:
            yield answer
    except urllib.error.HTTPError as exc:
        message = _error_field(exc.read()) or f"HTTP {exc.code} {exc.reason}"
        raise AdminError(f"the master at {master} refused {path}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise AdminError(f"the master at {master} does not answer: {reason}") from None


def request(
    master: str, path: str, body: dict[str, Any] | None = None, token: str | None = None
) -> Any:
    """GET a master endpoint, or POST it a JSON body; its JSON answer. The cluster token goes
    with either: a read may start work too (a deep fsck)."""
    url = master.rstrip("/") + path
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(
        url, data=data, headers=headers, method="GET" if data is None else "POST"
    )
    with _answer(master, path, req) as answer:
        raw = answer.read()
    try:
        return json.loads(raw)
    except ValueError:
        raise AdminError(f"the master at {master} answered {path} with no JSON") from None


def _master(args: argparse.Namespace) -> tuple[str, str]:
    """The URL of the master named by the configuration file of the command line (found on the
    network when the file names none), and the cluster token."""
    config_path: Path = args.config
    config = load_config(config_path)
    master = config.master
    if master is None:
        try:
            master = asyncio.run(
                discovery.address(
                    discovery.MASTER, None, config, "the key `master: http://HOST:PORT`"
                )
            )
        except DlwebError as exc:
            raise AdminError(f"no master URL: {exc}") from None
    return master, config.write_token


def call(args: argparse.Namespace, path: str, body: dict[str, Any] | None = None) -> Any:
    """A request to the master named by the configuration file of the command line."""
    master, token = _master(args)
    return request(master, path, body, token)


def json_lines(args: argparse.Namespace, path: str) -> Iterator[Any]:
    """The JSON objects of a master's answer of one object a line, as they arrive."""
    master, _ = _master(args)
    req = urllib.request.Request(master.rstrip("/") + path)
    with _answer(master, path, req) as answer:
        for line in answer:
            try:
                yield json.loads(line)
            except ValueError:
                raise AdminError(f"the master at {master} sent a line that is not JSON") from None


def size(value: object) -> str:
    """Bytes as a short human reading (binary units)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "?"
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(amount) < 1024 or unit == "PiB":
            break
        amount /= 1024
    return f"{amount:.0f} B" if unit == "B" else f"{amount:.1f} {unit}"


def table(rows: list[list[str]]) -> str:
    """Rows as left-aligned columns, the first row being the heading."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _text(value: object, default: str = "") -> str:
    return default if value is None else str(value)


def _nodes_table(nodes: tuple[NodeStatus, ...]) -> str:
    if not nodes:
        return "no storage node has joined"
    rows = [["node", "address", "state", "domain", "free", "files", "held"]]
    for node in sorted(nodes, key=lambda n: n.id):
        state = node.state
        if node.drained:
            state += " (empty)"
        elif node.reason:
            state += f" ({node.reason})"
        elif not node.connected and state not in ("down", "dead"):
            state += " (disconnected)"
        rows.append(
            [
                node.id,
                node.address,
                state,
                node.domain,
                size(node.free),
                str(node.files),
                size(node.bytes),
            ]
        )
    return table(rows)


def _progress(progress: MoveProgress | None) -> str:
    if progress is None:
        return ""
    return (
        f"{progress.moved} of {progress.files} files moved"
        f" ({size(progress.bytes_moved)} of {size(progress.bytes)})"
    )


def _below_target(answer: dict[str, Any]) -> list[str]:
    """Files below target and, one line each, why: copies being made, none can be placed
    (naming the nodes that take new files), no readable copy."""
    causes = answer.get("below_target_causes")
    lines = [f"below replica target: {answer.get('below_target', '?')}"]
    if not isinstance(causes, dict) or not answer.get("below_target"):
        return lines + _unchecked(answer.get("repairs"))
    placing = answer.get("placing") or {}
    nodes = _count(placing.get("nodes"), "node")
    domains = _count(placing.get("domains"), "failure domain")
    lines += [
        f"  being repaired: {causes.get('repairing', '?')}",
        f"  cannot be placed: {causes.get('cannot_place', '?')}"
        f" (only {nodes} taking new files, in {domains})",
        f"  no readable copy: {causes.get('no_readable_copy', '?')}",
    ]
    return lines + _unchecked(answer.get("repairs"))


def _unchecked(repairs: object) -> list[str]:
    """What the repair pass has yet to look at, which the counts of files below target may
    not include yet."""
    if not isinstance(repairs, dict):
        return []
    files, nodes = repairs.get("to_check") or 0, repairs.get("nodes_to_check") or 0
    scanning = repairs.get("full_scan_at") is not None
    if not (files or nodes or scanning):
        return []
    parts = [_count(files, "file")] if files else []
    parts += [f"the files of {_count(nodes, 'node')}"] if nodes else []
    parts += ["a full scan"] if scanning else []
    return [f"  (as last looked at; still to look at: {', '.join(parts)})"]


def _count(value: object, noun: str) -> str:
    return f"{value} {noun}" + ("" if value == 1 else "s")


def _emit(args: argparse.Namespace, answer: Any, text: Callable[[], str]) -> None:
    print(json.dumps(answer, indent=2) if args.json else text())


def _status(args: argparse.Namespace) -> int:
    answer = call(args, "/status")
    status = parsed(ClusterStatus, answer, "/status", _not_understood)

    def text() -> str:
        files, repairs, rebalance = status.files, status.repairs, status.rebalance
        moving = _progress(rebalance.progress)
        metadata = status.metadata
        lines = [
            f"cluster {status.cluster}: {files.content} contents,"
            f" {files.structure} structure files",
            *_below_target(answer),
            f"repairs: {repairs.running} running, {repairs.copied} copied, {repairs.failed} failed",
            f"rebalance: {rebalance.state}" + (f", {moving}" if moving else ""),
            f"index nodes: {', '.join(status.index_nodes) or 'none'}",
            f"master metadata: {size(metadata.database_bytes)}"
            f" ({size(metadata.free_bytes)} free for reuse),"
            f" write-ahead log {size(metadata.wal_bytes)}",
        ]
        return "\n".join([*lines, "", _nodes_table(status.nodes)])

    _emit(args, answer, text)
    return 0


def _nodes(args: argparse.Namespace) -> int:
    answer = call(args, "/status")
    nodes = parsed(ClusterStatus, answer, "/status", _not_understood).nodes
    _emit(args, answer["nodes"], lambda: _nodes_table(nodes))
    return 0


def _set_state(state: str) -> Runner:
    def run(args: argparse.Namespace) -> int:
        path = f"/admin/nodes/{quote(args.node, safe='')}/state"
        answer = call(args, path, {"state": state})
        shown = parsed(NodeRecord, answer, path, _not_understood).state
        _emit(args, answer, lambda: f"node {args.node} is now {shown}")
        return 0

    return run


def _plan_text(answer: Rebalance, applied: bool) -> str:
    plan = answer.plan
    if plan is not None:
        head = f"plan: move {plan.files} files ({size(plan.bytes)})"
        moves = plan.moves
    else:
        progress = _progress(answer.progress)
        head = f"rebalance {answer.state}" + (f": {progress}" if progress else "")
        moves = answer.moves or ()
    lines = [head]
    if moves:
        rows = [["from", "to", "files", "bytes"]] + [
            [m.src, m.dst, str(m.files), size(m.bytes)] for m in moves
        ]
        lines.append(table(rows))
    if plan is not None:
        lines.append("not applied: run again with --apply to carry it out (nothing moved)")
    elif applied:
        running = answer.state == "running"
        lines.append("applied: moving in the background" if running else "nothing to move")
    return "\n".join(lines)


def _rebalance(args: argparse.Namespace) -> int:
    if args.stop:
        answer = call(args, "/admin/rebalance", {"stop": True})
    elif args.apply:
        body = {"apply": True, "files_per_s": args.files_per_s, "bytes_per_s": args.bytes_per_s}
        answer = call(args, "/admin/rebalance", body)
    else:
        answer = call(args, "/admin/rebalance")
    rebalance = parsed(Rebalance, answer, "/admin/rebalance", _not_understood)
    _emit(args, answer, lambda: _plan_text(rebalance, args.apply))
    return 0


def _scrub(args: argparse.Namespace) -> int:
    answer = call(args, "/admin/scrub", {"node": args.node})
    started = parsed(Scrubbing, answer, "/admin/scrub", _not_understood).scrub

    def line(node: str, result: NodeScrub) -> str:
        if result.started:
            return f"{node}: started"
        return f"{node}: not started ({result.error or 'already running'})"

    _emit(
        args,
        answer,
        lambda: "\n".join(line(n, r) for n, r in sorted(started.items())) or "no node is connected",
    )
    return 0


def _fsck(args: argparse.Namespace) -> int:
    query = "&".join(f"{flag}=1" for flag in ("deep", "recount") if getattr(args, flag))
    answer = call(args, "/admin/fsck" + (f"?{query}" if query else ""))
    report = parsed(FsckReport, answer, "/admin/fsck", _not_understood)
    ok = report.ok

    def text() -> str:
        files, problems = report.files, report.problems
        lines = [
            f"{files.content} contents, {files.structure} structure files",
            *_below_target(answer),
            f"structure files without an active copy: {report.structures_without_active}",
            f"structure replicas waiting for a refresh: {report.structures_dirty}",
            "orphans: "
            + (
                f"{report.orphans} (read {_text(report.structures_read, '?')} structure files,"
                f" {_text(report.structures_unreadable, '?')} unreadable)"
                if report.orphans is not None
                else "not checked (use --deep)"
            ),
            _totals_text(report.totals_drift),
        ]
        if problems:
            lines.append(f"first problems ({min(len(problems), SHOWN_PROBLEMS)} shown):")
        for problem in problems[:SHOWN_PROBLEMS]:
            lines.append(_problem_text(problem))
        lines.append("ok" if ok else "PROBLEMS FOUND")
        return "\n".join(lines)

    if args.all or args.after is not None:
        print(json.dumps(answer) if args.json else text(), flush=True)
        _all_problems(args, report.below_target)
    else:
        _emit(args, answer, text)
    return 0 if ok else 1


def _problem_text(problem: FileBelowTarget) -> str:
    cause = CAUSE_TEXT.get(problem.cause)
    return f"  {problem.kind} {problem.name}: {problem.replicas} of {problem.target} replicas" + (
        f" ({cause})" if cause else ""
    )


def _all_problems(args: argparse.Namespace, total: int) -> None:
    """Every file below target after the summary, as the master finds them, and where to resume
    the list if it is stopped (the last file printed)."""
    query = f"?after={quote(args.after, safe='/')}" if args.after else ""
    if not args.json:
        print(
            "every file below target:" if not query else f"files below target after {args.after}:"
        )
    bar = terminal_bar(total=total, unit=" files", desc="fsck")
    last = None
    try:
        for item in json_lines(args, "/admin/fsck/problems" + query):
            if isinstance(item, dict) and "next" in item:
                continue
            problem = parsed(FileBelowTarget, item, "/admin/fsck/problems", _not_understood)
            print(json.dumps(item) if args.json else _problem_text(problem), flush=True)
            last = f"{problem.kind}/{problem.name}"
            if bar is not None:
                bar.update(1)
    except KeyboardInterrupt:
        if last is not None:
            print(f"stopped; resume with --after {last}", file=sys.stderr)
        raise
    finally:
        if bar is not None:
            bar.close()


def _totals_text(drift: object) -> str:
    if drift is None:
        return "totals: not recounted (use --recount)"
    if not drift:
        return "totals: as a full count finds them"
    differing = sum(len(rows) for rows in drift.values()) if isinstance(drift, dict) else "?"
    return f"totals: {differing} differed from a full count, and are mended"


def _guarded(runner: Runner) -> Runner:
    """An answer of an unexpected shape becomes one clear line, not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return runner(args)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise AdminError(f"unexpected answer from the master: {exc!r}") from None

    return run


def _command(
    subparsers: Subparsers, name: str, runner: Runner, text: str
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(name, help=text, description=text)
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="print the master's JSON answer")
    parser.set_defaults(run=_guarded(runner))
    return parser


def _migrate_metadata(args: argparse.Namespace) -> int:
    from archive.metadata import cluster_id, parse_metadata_url  # here: only this one needs them

    from .migration import migrate_metadata

    config = load_config(args.config)
    bar = terminal_bar(unit=" rows") if not args.json else None
    shown: dict[str, int] = {}

    def progress(table: str, rows: int) -> None:
        if bar is not None:
            bar.update(rows - shown.get(table, 0))
            bar.set_description(table)
        shown[table] = rows

    try:
        copied = migrate_metadata(
            args.source, args.to, cluster_id(config.name, config.secret), progress
        )
    finally:
        if bar is not None:
            bar.close()
    summary = {"copied": copied, "to": parse_metadata_url(args.to).shown}

    def text() -> str:
        rows = ", ".join(f"{table} {count:,}" for table, count in copied.items() if count)
        return (
            f"copied and checked: {rows}\n"
            f"now stop the master and start it again with --db (or metadata: in the"
            f" configuration) naming the new database; its nodes send it what came after the copy"
        )

    _emit(args, summary, text)
    return 0


def register(subparsers: Subparsers) -> None:
    _command(subparsers, "status", _status, "the cluster's health, from the master")
    admin = subparsers.add_parser("admin", help="storage admin commands (talk to the master)")
    actions = admin.add_subparsers(dest="action", required=True, metavar="ACTION")
    _command(actions, "nodes", _nodes, "list the storage nodes")
    for name, state, text in (
        ("drain", "draining", "copy every file off a node, then leave it empty"),
        ("undrain", "alive", "make a node take new files again"),
        ("read-only", "read-only", "keep a node's files but send it nothing new"),
    ):
        _command(actions, name, _set_state(state), text).add_argument("node", help="node id")
    _register_rebalance(actions)
    scrub = _command(actions, "scrub", _scrub, "re-hash every file of one node, or of all")
    scrub.add_argument("node", nargs="?", default=None, help="node id (default: every node)")
    _register_fsck(actions)
    _register_migrate_metadata(actions)


def _register_rebalance(actions: Subparsers) -> None:
    rebalance = _command(
        actions, "rebalance", _rebalance, "show the plan that evens out the nodes, or apply it"
    )
    mode = rebalance.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="carry the plan out")
    mode.add_argument("--stop", action="store_true", help="stop a running rebalance")
    rebalance.add_argument(
        "--files-per-s",
        type=positive_seconds,
        default=200.0,
        help="files moved per second at most (200)",
    )
    rebalance.add_argument(
        "--bytes-per-s",
        type=positive_seconds,
        default=64.0 * 1024 * 1024,
        help="bytes moved per second at most (64 MiB)",
    )


def _register_fsck(actions: Subparsers) -> None:
    fsck = _command(actions, "fsck", _fsck, "files below replica target and other problems")
    fsck.add_argument(
        "--deep",
        action="store_true",
        help="also read every structure file to find contents no capture names (orphans)",
    )
    fsck.add_argument(
        "--all",
        action="store_true",
        help="after the summary, list every file below target as the master finds them"
        " (with --json, one JSON object a line)",
    )
    fsck.add_argument(
        "--after",
        metavar="KIND/NAME",
        help="list the files below target after this one (where a stopped --all list ended)",
    )
    fsck.add_argument(
        "--recount",
        action="store_true",
        help="count every file and location again, and mend the totals status shows if they differ",
    )


def _register_migrate_metadata(actions: Subparsers) -> None:
    migrate = _command(
        actions,
        "migrate-metadata",
        _migrate_metadata,
        "copy a running master's SQLite metadata into a PostgreSQL database, and check the copy",
    )
    migrate.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        help="the master's SQLite database (master.db in its --data)",
    )
    migrate.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="the PostgreSQL database: postgresql://user:password@host:port/database",
    )
