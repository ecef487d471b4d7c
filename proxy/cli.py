"""`dlweb proxy`: the consultation proxy that researchers set in their browser."""

import argparse
import asyncio
from pathlib import Path

from archive.cli import add_config_option, checked_directory, parse_listen, standalone
from archive.config import load_config

from .access import LOOPBACK, parse_networks

DEFAULT_DATA = Path("dlweb-data") / "proxy"


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every dlweb command loads this module, and mitmproxy is slow to load.
    from .server import ProxyOptions, serve

    host, port = args.listen
    options = ProxyOptions(
        config=load_config(args.config),
        data=checked_directory(args.data, "--data"),
        host=host,
        port=port,
        allowed=parse_networks(args.allow or list(LOOPBACK)),
        live_allowed=args.allow_live,
        log_requests=args.log_requests,
    )
    asyncio.run(serve(options))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=("127.0.0.1", 8080),
        help="HOST:PORT to listen on (default 127.0.0.1:8080)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"folder for the CA and the clients' settings (default {DEFAULT_DATA})",
    )
    parser.add_argument(
        "--allow",
        action="append",
        metavar="CIDR",
        help="a client network allowed to use the proxy (repeat; default loopback only)",
    )
    parser.add_argument(
        "--allow-live",
        action="store_true",
        help="let clients turn on the live web for pages the archive lacks",
    )
    parser.add_argument(
        "--log-requests",
        action="store_true",
        help="log every replayed request: client, URL, status, date of the capture",
    )
    add_config_option(parser)
    parser.set_defaults(run=_run)


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    add_arguments(subparsers.add_parser("proxy", help="run the consultation proxy"))


def main() -> int:
    return standalone("python -m proxy", "dlweb consultation proxy", add_arguments)
