"""`dlweb up` and `dlweb down`: a whole cluster on this machine, for trying dlweb and for tests."""

import argparse
from pathlib import Path

from archive.cli import positive_seconds
from archive.errors import ConfigError

from .launcher import Plan, down, up

DEFAULT_DATA = Path("dlweb-data")


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number from 1 to 64")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 65000:
        raise argparse.ArgumentTypeError(f"{text!r} must be a port from 1024 to 65000")
    return int(text)


def _data(args: argparse.Namespace) -> Path:
    data: Path = args.data
    if data.exists() and not data.is_dir():
        raise ConfigError(f"--data {data} exists and is not a directory")
    return data


def _up(args: argparse.Namespace) -> int:
    if args.replicas > args.nodes:
        raise ConfigError(f"--replicas {args.replicas} is more than --nodes {args.nodes}")
    plan = Plan(_data(args), args.nodes, args.replicas, args.host, args.port_base, args.grace)
    status = up(plan)
    if "already_running" in status:
        print(f"the cluster in {plan.data} is already running")
    joined = sum(1 for n in status["nodes"] if n.get("connected"))
    print(
        f"cluster ready: master, {len(status['index_nodes'])} index node(s), {joined} storage"
        f" node(s); configuration {plan.data / 'dlweb.yaml'}; logs in {plan.data / 'logs'}"
    )
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = down(_data(args))
    print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    start = subparsers.add_parser("up", help="start a local cluster in the background")
    start.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cluster directory")
    start.add_argument("--nodes", type=_count, default=3, help="storage nodes (3)")
    start.add_argument("--replicas", type=_count, default=2, help="replicas of a content (2)")
    start.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    start.add_argument("--port-base", type=_port, default=None, help="first port (default: free)")
    start.add_argument(
        "--grace", type=positive_seconds, default=30.0, help="seconds before a lost node is down"
    )
    start.set_defaults(run=_up)
    stop = subparsers.add_parser("down", help="stop the local cluster")
    stop.add_argument("--data", type=Path, default=DEFAULT_DATA, help="cluster directory")
    stop.set_defaults(run=_down)
