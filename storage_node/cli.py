"""`dlweb storage-node`: start a storage node."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from archive.command_line import (
    add_config_option,
    add_listen_option,
    checked_directory,
    command,
    serve_until_stopped,
)
from archive.config import RELIABILITIES, load_config

if TYPE_CHECKING:
    from .space import Reserve


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")) or len(text) > 2000:
        raise argparse.ArgumentTypeError(f"{text[:100]!r} is not an http:// or https:// URL")
    return text.rstrip("/")


def _label(text: str) -> str:
    if (
        not 0 < len(text) <= 100
        or not text.replace("-", "").replace("_", "").replace(".", "").isalnum()
    ):
        raise argparse.ArgumentTypeError(f"{text[:100]!r}: use letters, digits, '-', '_' or '.'")
    return text


def _reserve(text: str) -> "Reserve":
    # Here, not at the top: every `dlweb` command imports this module for its options.
    from .space import parse_reserve

    try:
        return parse_reserve(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text[:100]!r} is not a number of seconds 0.01..3600")
    return value


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every `dlweb` command imports this module for its options.
    from .server import NodeOptions, serve
    from .space import DEFAULT_RESERVE

    checked_directory(args.root, "--root")
    host, port = args.listen
    options = NodeOptions(
        data=args.root,
        host=host,
        port=port,
        config=load_config(args.config),
        node_id=args.id,
        advertise=args.advertise,
        master=args.master,
        domain=args.domain,
        reliability=args.reliability,
        stats_every=args.stats_every,
        save_every=args.save_every,
        reserve=args.reserve or DEFAULT_RESERVE,
    )
    return serve_until_stopped(serve(options))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, required=True, help="directory holding the files")
    add_listen_option(parser, 8101, "for HTTP")
    parser.add_argument("--id", default=None, help="node id (default: generated once, kept)")
    parser.add_argument(
        "--advertise",
        default=None,
        help="HTTP base URL given in lookup answers (default http://HOST:PORT)",
    )
    parser.add_argument(
        "--master",
        type=_http_url,
        default=None,
        help="the master's HTTP base URL (default: the configuration's master key, else the"
        " master of the cluster found on the LAN)",
    )
    parser.add_argument(
        "--domain", type=_label, default="default", help="failure domain: rack, room or site"
    )
    parser.add_argument(
        "--reliability",
        choices=RELIABILITIES,
        default="normal",
        help="reliability class of this node's disks (default normal)",
    )
    parser.add_argument(
        "--stats-every",
        type=_seconds,
        default=2.0,
        metavar="SECONDS",
        help="how often free space and file counts are sent to the master (default 2)",
    )
    parser.add_argument(
        "--save-every",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how often the name filter and counts are saved, so that a restart replays only"
        " the inventory after them (default 30)",
    )
    parser.add_argument(
        "--reserve",
        type=_reserve,
        default=None,
        metavar="SIZE|PERCENT",
        help="free space kept on the disk: new files are refused (507) and the master sends"
        " none under it, e.g. 2G or 5%% (default: 64 MiB or 1%% of the disk, the larger)",
    )
    add_config_option(parser)
    parser.set_defaults(run=_run)


register, main = command("storage-node", "run a storage node", "run a storage node", add_arguments)
