"""`dlweb up`, `dlweb down` and `dlweb demo`: a whole cluster on this machine, for trying dlweb
and for tests."""

import argparse
import logging
from pathlib import Path

from archive.command_line import (
    Runner,
    Subparsers,
    add_data_option,
    add_number_option,
    checked_db,
    checked_directory,
    counting_to,
    positive_seconds,
)

from .launcher import (
    CONFIG_FILE,
    DEFAULT_NODES,
    DEFAULT_PROXY_PORT,
    READY_TIMEOUT,
    LaunchError,
    Plan,
    down,
    up,
)
from .processes import LOG_DIR

DEFAULT_DATA = Path("dlweb-data")
DEFAULT_DEMO_DATA = Path("dlweb-demo")
MAX_NODES = 64
_count = counting_to(MAX_NODES)


def _port(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 65000:
        raise argparse.ArgumentTypeError(f"{text!r} must be a port from 1024 to 65000")
    return int(text)


def _proxy_port(text: str) -> int:
    if text == "0":
        return 0
    return _port(text)


def _data(args: argparse.Namespace) -> Path:
    return checked_directory(args.data, "--data")


def _up(args: argparse.Namespace) -> int:
    """Start a master, an index node and storage nodes on this machine, in the background, and
    return once the cluster is ready. A cluster already created in --data keeps its
    configuration, ports and data; --nodes can add storage nodes to it."""
    data = _data(args)
    checked_db(args)
    plan = Plan(
        data,
        args.nodes,
        args.replicas,
        args.host,
        args.port_base,
        args.grace,
        args.proxy_port,
        args.timeout,
        args.search,
        args.db,
    )
    try:
        launch = up(plan)
    except OSError as exc:
        raise LaunchError(f"{data}: {exc.strerror or exc}") from None
    count = sum(1 for name in launch.already + launch.started if name.startswith("node"))
    nodes = f"{count} storage node" + ("" if count == 1 else "s")
    if not launch.started:
        print(f"the cluster in {data} is already running: {launch.master}, {nodes}")
        return 0
    if launch.already:
        print(f"started {', '.join(launch.started)}; already running: {', '.join(launch.already)}")
    print(
        f"cluster ready: master {launch.master}, an index node and {nodes}\n"
        f"browse the archive: set {launch.proxy} as your browser's HTTP and HTTPS proxy,"
        f" pick the date at http://date.dlweb/\n"
        f"or, without a proxy, open {launch.direct}/2019/http://example.org/ (a capture near"
        " 2019; id_ after the date for its bytes as archived)\n"
        f"configuration {data / CONFIG_FILE}, logs in {data / LOG_DIR}\n"
        f"see it with: dlweb status -c {data / CONFIG_FILE}; stop it with: dlweb down --data {data}"
    )
    return 0


def _down(args: argparse.Namespace) -> int:
    data = _data(args)
    try:
        stopped = down(data)
    except OSError as exc:
        raise LaunchError(f"{data}: {exc.strerror or exc}") from None
    print(f"stopped {', '.join(stopped)}" if stopped else f"nothing was running in {data}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    """Start a local cluster and its proxy, serve a small website on loopback, crawl it, change
    it and crawl it again, import a small WARC of 2019 and 2021, and print how to browse them
    with a browser or curl. Ctrl-C stops everything it started; the archive stays in --data."""
    from .demo import run_demo  # here: it loads the crawler and the WARC importer

    return run_demo(checked_directory(args.data, "--data"), args.proxy_port, args.nodes)


def _data_option(parser: argparse.ArgumentParser) -> None:
    add_data_option(
        parser,
        f"cluster directory: configuration, data, logs, pid files (default: {DEFAULT_DATA})",
        DEFAULT_DATA,
    )


def _nodes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", type=_count, default=None, help=f"storage nodes (default {DEFAULT_NODES})"
    )


def _cluster_options(start: argparse.ArgumentParser) -> None:
    """The options of `dlweb up` that shape the cluster."""
    _nodes_option(start)
    start.add_argument(
        "--replicas", type=_count, default=None, help="replicas of a content (default 2)"
    )
    start.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    start.add_argument(
        "--port-base",
        type=_port,
        default=None,
        help="ports from here: master, index, node1, ... (default: free ports)",
    )
    start.add_argument(
        "--grace",
        type=positive_seconds,
        default=None,
        help="seconds a lost node has before it is down and re-replicated (default 30)",
    )


def _start_options(start: argparse.ArgumentParser) -> None:
    """The options of `dlweb up` on the proxy, the wait, search and metadata."""
    start.add_argument(
        "--proxy-port",
        type=_proxy_port,
        default=None,
        help=f"port of the consultation proxy (default {DEFAULT_PROXY_PORT}; 0: a free port)",
    )
    add_number_option(
        start,
        "--timeout",
        positive_seconds,
        READY_TIMEOUT,
        "seconds to wait for the cluster to be ready",
    )
    start.add_argument(
        "--search",
        action="store_const",
        const=True,
        default=None,
        help="also run a search indexer that keeps DATA/search current for the proxy's search"
        " harbor (later starts keep it)",
    )
    start.add_argument(
        "--db",
        metavar="URL",
        help="where a new cluster's master keeps its metadata, if not SQLite in DATA/master:"
        " postgresql://user:password@host:port/database (an empty database)",
    )


def _add_command(
    subparsers: Subparsers, name: str, text: str, run: Runner
) -> argparse.ArgumentParser:
    """`dlweb NAME`, `text` its line in `dlweb --help`; the docstring of `run` describes it in
    its own --help."""
    parser = subparsers.add_parser(name, help=text, description=run.__doc__)
    parser.set_defaults(run=run)
    return parser


def _register_up(subparsers: Subparsers) -> None:
    start = _add_command(subparsers, "up", "start a local cluster in the background", _up)
    _data_option(start)
    _cluster_options(start)
    _start_options(start)


def _register_down(subparsers: Subparsers) -> None:
    stop = _add_command(subparsers, "down", "stop the local cluster started by dlweb up", _down)
    _data_option(stop)


def _register_demo(subparsers: Subparsers) -> None:
    demo = _add_command(
        subparsers,
        "demo",
        "start a local cluster with a small site crawled twice and an imported WARC",
        _demo,
    )
    add_data_option(
        demo, f"the demo's cluster directory (default: {DEFAULT_DEMO_DATA})", DEFAULT_DEMO_DATA
    )
    add_number_option(demo, "--proxy-port", _port, DEFAULT_PROXY_PORT, "port of the browsing proxy")
    _nodes_option(demo)
    demo.set_defaults(log_level=logging.WARNING)


def register(subparsers: Subparsers) -> None:
    _register_up(subparsers)
    _register_down(subparsers)
    _register_demo(subparsers)
