"""`dlweb storage-node`: start a storage node."""

import argparse
from pathlib import Path

import uvloop

from archive.cli import add_config_option, run
from archive.config import load_config
from archive.errors import ConfigError

from .server import NodeOptions, serve


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT with a port 1-65535")
    return host.strip("[]"), int(port)


def _run(args: argparse.Namespace) -> int:
    if args.root.exists() and not args.root.is_dir():
        raise ConfigError(f"--root {args.root} exists and is not a directory")
    host, port = args.listen
    options = NodeOptions(
        root=args.root,
        host=host,
        port=port,
        config=load_config(args.config),
        node_id=args.id,
        advertise=args.advertise,
    )
    uvloop.run(serve(options))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, required=True, help="directory holding the files")
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=("127.0.0.1", 8101),
        help="HOST:PORT for HTTP (default 127.0.0.1:8101)",
    )
    parser.add_argument("--id", default=None, help="node id (default: generated once, kept)")
    parser.add_argument(
        "--advertise",
        default=None,
        help="HTTP base URL given in lookup answers (default http://HOST:PORT)",
    )
    add_config_option(parser)
    parser.set_defaults(run=_run)


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    add_arguments(subparsers.add_parser("storage-node", help="run a storage node"))


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m storage_node", description="run a storage node"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    add_arguments(parser)
    return run(parser)
