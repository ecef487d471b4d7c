"""`dlweb proxy`: the consultation proxy that researchers set in their browser."""

import argparse
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from archive.command_line import (
    add_config_option,
    add_data_option,
    add_listen_option,
    add_search_index_option,
    argument_type,
    checked_directory,
    command,
    parse_listen,
    search_index,
    serve_until_stopped,
)
from archive.config import load_config
from archive.errors import ConfigError

from .access import parse_networks
from .coherence import DEFAULT_SPAN, BadSpan, parse_span, span_text
from .limits import Limits

DEFAULT_DATA = Path("dlweb-data") / "proxy"
_span = argument_type(parse_span, BadSpan, "span=")


if TYPE_CHECKING:
    from .direct import DirectOptions


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
        search_index=search_index(args.search_index, args.config),
        coherence_span=args.coherence_span,
        live_networks=parse_networks(args.live_network or list(consultation.live_networks)),
        limits=Limits(head_timeout=config.http.head, idle_timeout=config.http.idle),
        direct=_direct(args),
        scheduler=_scheduler(args.scheduler),
    )
    return serve_until_stopped(serve(options))


def _scheduler(url: str | None) -> str:
    """The --scheduler URL, checked: an http(s) URL with a host, without a query."""
    if url is None:
        return ""
    try:
        parts = urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        usable = False
    if not usable or "?" in url or "#" in url:
        raise ConfigError(
            f"--scheduler {url[:100]!r} must be the scheduler's http(s) URL, such as"
            " http://127.0.0.1:8300"
        )
    return url.rstrip("/")


def _direct(args: argparse.Namespace) -> "DirectOptions | None":
    """The direct front's options: its --direct address, and the addresses it gives captures,
    under --direct-base, else that address; None when it does not run."""
    from archive.archival_urls import ArchivalUrls, check_collection

    from .direct import DirectOptions

    if args.direct is None:
        if args.direct_base is not None or args.direct_banner:
            raise ConfigError("--direct-base and --direct-banner go with --direct HOST:PORT")
        return None
    host, port = args.direct
    base = args.direct_base or f"http://{host}:{port}"
    if not base.startswith(("http://", "https://")) or "?" in base or "#" in base:
        raise ConfigError(f"--direct-base {base[:100]!r} must be an http(s) URL without a query")
    urls = ArchivalUrls(base.rstrip("/"), check_collection(args.direct_collection))
    return DirectOptions(host, port, urls, args.direct_banner)


def _add_direct_arguments(parser: argparse.ArgumentParser) -> None:
    """The direct front, which serves captures at pywb's archival URLs to clients without a
    proxy setting."""
    parser.add_argument(
        "--direct",
        type=parse_listen,
        metavar="HOST:PORT",
        help="also serve the archive at pywb's archival URLs here, such as"
        " http://HOST:PORT/web/2019id_/http://example.org/ (default: off)",
    )
    parser.add_argument(
        "--direct-base",
        metavar="URL",
        help="the front's address as its clients reach it, in the URI-Ms it gives"
        " (default http://HOST:PORT of --direct)",
    )
    parser.add_argument(
        "--direct-collection",
        default="web",
        help="the collection name in the front's URLs (default web: /web/TIMESTAMP/URL)",
    )
    parser.add_argument(
        "--direct-banner",
        action="store_true",
        help="put the proxy's bar atop the HTML pages a browser loads at the front's"
        " /web/TIMESTAMP/URL (never at TIMESTAMPid_; default: off)",
    )


def _add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the proxy listens, its data folder, and who may use it and the live web."""
    add_listen_option(parser, 8080, "to listen on")
    add_data_option(
        parser,
        f"folder for the CA and the clients' settings (default {DEFAULT_DATA})",
        DEFAULT_DATA,
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
    add_search_index_option(
        parser,
        "the search index folder, whose URL-key index answers http://api.dlweb/cdx prefix,"
        " host and domain queries",
        "--search-index",
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
        "--scheduler",
        metavar="URL",
        help="the crawl scheduler's URL, such as http://127.0.0.1:8300: the harbors"
        " http://directory.dlweb/ and http://map.dlweb/ show the sites it knows, by topic and"
        " domain, and their maps (default: none, and those harbors say so)",
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
    _add_direct_arguments(parser)
    parser.set_defaults(run=_run)


register, main = command(
    "proxy", "run the consultation proxy", "dlweb consultation proxy", add_arguments
)
