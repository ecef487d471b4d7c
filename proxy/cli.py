"""`dlweb proxy`: the consultation proxy that researchers set in their browser."""

import argparse
from pathlib import Path

from archive.command_line import (
    add_config_option,
    checked_directory,
    parse_listen,
    standalone,
)
from archive.config import SEARCH_FOLDER, load_config
from archive.errors import ConfigError

from .access import parse_networks
from .coherence import DEFAULT_SPAN, BadSpan, parse_span, span_text
from .limits import Limits

DEFAULT_DATA = Path("dlweb-data") / "proxy"


def _run(args: argparse.Namespace) -> int:
    # Here, not at the top: every dlweb command loads this module, and mitmproxy is slow to load.
    from .server import ProxyOptions, serve

    host, port = args.listen
    config = load_config(args.config)
    consultation = config.consultation
    auth = args.auth or consultation.auth
    if auth is not None and not Path(auth).is_file():
        raise ConfigError(f"proxy authentication file {auth} does not exist")
    options = ProxyOptions(
        config=config,
        data=checked_directory(args.data, "--data"),
        host=host,
        port=port,
        allowed=parse_networks(args.allow or list(consultation.allow)),
        live_allowed=args.allow_live or consultation.live,
        log_requests=args.log_requests,
        auth=None if auth is None else Path(auth),
        search_index=args.search_index or args.data.parent / SEARCH_FOLDER,
        coherence_span=args.coherence_span,
        live_networks=parse_networks(args.live_network or list(consultation.live_networks)),
        limits=Limits(head_timeout=config.http.head, idle_timeout=config.http.idle),
    )
    import uvloop  # here, as mitmproxy: loaded only when a proxy runs

    uvloop.run(serve(options))
    return 0


def _add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the proxy listens, its data folder, and who may use it and the live web."""
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
        help="a client network allowed to use the proxy (repeat; default: consultation.allow"
        " of the configuration, loopback only unless set)",
    )
    parser.add_argument(
        "--allow-live",
        action="store_true",
        help="let clients turn on the live web for pages the archive lacks"
        " (also consultation.live: true)",
    )
    parser.add_argument(
        "--live-network",
        action="append",
        metavar="CIDR",
        help="a private network the live web may reach (repeat; default: consultation."
        "live_networks of the configuration, none: only public addresses)",
    )
    parser.add_argument(
        "--auth",
        default=None,
        metavar="HTPASSWD",
        help="ask clients for a user name and password from this htpasswd file"
        " (also consultation.auth)",
    )


def _add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    """The search index, the banner's coherence span, the request log and the configuration."""
    parser.add_argument(
        "--search-index",
        type=Path,
        default=None,
        metavar="DIR",
        help="the search index folder, whose URL-key index answers http://api.dlweb/cdx prefix,"
        f" host and domain queries (default: {SEARCH_FOLDER} beside --data, so"
        f" {DEFAULT_DATA.parent / SEARCH_FOLDER}, where `dlweb search rebuild` writes it)",
    )
    parser.add_argument(
        "--coherence-span",
        type=_span,
        default=DEFAULT_SPAN,
        metavar="DURATION",
        help="the banner marks the resources of a page captured more than this from it"
        f" (1d, 12h, 30m, 90s; default {span_text(DEFAULT_SPAN)})",
    )
    parser.add_argument(
        "--log-requests",
        action="store_true",
        help="log every replayed request: client, URL, status, date of the capture",
    )
    add_config_option(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_access_arguments(parser)
    _add_replay_arguments(parser)
    parser.set_defaults(run=_run)


def _span(text: str) -> int:
    try:
        return parse_span(text)
    except BadSpan as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("span=")) from None


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    add_arguments(subparsers.add_parser("proxy", help="run the consultation proxy"))


def main() -> int:
    return standalone("python -m proxy", "dlweb consultation proxy", add_arguments)
