"""`dlweb index-node`: run an index node of a cluster."""

import argparse

from archive.command_line import (
    add_config_option,
    add_state_options,
    checked_state,
    command,
    serve_until_stopped,
    server_options,
)
from archive.config import ClusterConfig
from archive.discovery import MASTER, MASTER_HOW, address
from archive.errors import ConfigError


def _run(args: argparse.Namespace) -> int:
    config = checked_state(args)
    if args.advertise is not None and not args.advertise.startswith(("ws://", "wss://")):
        raise ConfigError(f"--advertise {args.advertise!r} must be a ws:// or wss:// URL")
    return serve_until_stopped(_serve(args, config))


async def _serve(args: argparse.Namespace, config: ClusterConfig) -> None:
    from .options import IndexOptions
    from .server import serve

    master = await address(MASTER, args.master or config.master, config, MASTER_HOW)
    await serve(server_options(IndexOptions, args, config, master=master, metadata=args.db))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_state_options(
        parser,
        "directory for the content index",
        "the content index, if not the SQLite file in --data",
        8102,
        "where inserting clients connect",
        db_after=" (one database an index node)",
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


register, main = command(
    "index-node", "run an index node of a cluster", "run an index node", add_arguments
)
