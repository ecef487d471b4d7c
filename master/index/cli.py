"""`dlweb index-node`: run an index node of a cluster."""

import argparse
from pathlib import Path

from archive.command_line import add_config_option, checked_directory, parse_listen, standalone
from archive.config import ClusterConfig, load_config
from archive.discovery import MASTER, MASTER_HOW, address
from archive.errors import ConfigError
from archive.metadata import parse_metadata_url


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every `dlweb` command imports this module for its options.
    import uvloop

    checked_directory(args.data, "--data")
    config = load_config(args.config)
    if args.advertise is not None and not args.advertise.startswith(("ws://", "wss://")):
        raise ConfigError(f"--advertise {args.advertise!r} must be a ws:// or wss:// URL")
    if args.db is not None:
        parse_metadata_url(args.db, "--db")
    uvloop.run(_serve(args, config))
    return 0


async def _serve(args: argparse.Namespace, config: ClusterConfig) -> None:
    from .options import IndexOptions
    from .server import serve

    master = await address(MASTER, args.master or config.master, config, MASTER_HOW)
    host, port = args.listen
    options = IndexOptions(
        data=args.data,
        host=host,
        port=port,
        config=config,
        master=master,
        advertise=args.advertise,
        metadata=args.db,
    )
    await serve(options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="directory for the content index")
    parser.add_argument(
        "--db",
        metavar="URL",
        help="the content index, if not the SQLite file in --data: a path, sqlite:///path or"
        " postgresql://user:password@host:port/database (one database an index node)",
    )
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=("127.0.0.1", 8102),
        help="HOST:PORT where inserting clients connect (default 127.0.0.1:8102)",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="the master's HTTP base URL (default: the configuration's master key, else found"
        " on the LAN)",
    )
    parser.add_argument(
        "--advertise", default=None, help="HIP URL given to clients (default ws://HOST:PORT/hip)"
    )
    add_config_option(parser)
    parser.set_defaults(run=_run)


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    add_arguments(subparsers.add_parser("index-node", help="run an index node of a cluster"))


def main() -> int:
    return standalone("python -m master.index", "run an index node", add_arguments)
