"""`dlweb crawl`: crawl whole websites into the cluster, one site per agent at a time."""

import argparse
import ipaddress
import json
import time
from pathlib import Path
from typing import Any

from archive.atomic import atomic_write
from archive.command_line import (
    Subparsers,
    add_config_option,
    add_number_option,
    checked_directory,
    command,
    counting_to,
    non_negative,
    parse_listen,
    positive_int,
)
from archive.config import load_config
from archive.errors import DlwebError
from archive.hip import HttpProxy, parse_proxy

DEFAULT_WORK = Path("dlweb-crawler")
MAX_RETRIES = 10  # --retries at most

__all__ = [
    "add_agent_arguments",
    "add_arguments",
    "add_record_arguments",
    "add_resolve_option",
    "add_scheduler_options",
    "register",
    "register_agent",
    "register_record",
    "resolve_map",
]


def parse_resolve(text: str) -> tuple[str, str]:
    """An argparse type for HOST:IP (IPv6 addresses in brackets or bare after the first colon)."""
    host, sep, address = text.partition(":")
    address = address.strip("[]")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:IP") from None
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:IP")
    return host.lower(), address


def add_resolve_option(
    parser: argparse.ArgumentParser,
    text: str = "use this address for this host name (repeat; several for one host are used in"
    " turn)",
) -> None:
    parser.add_argument(
        "--resolve", type=parse_resolve, action="append", metavar="HOST:IP", help=text
    )


def resolve_map(args: argparse.Namespace) -> dict[str, list[str]]:
    """The addresses --resolve gave, by host name."""
    resolve: dict[str, list[str]] = {}
    for host, address in args.resolve or []:
        resolve.setdefault(host, []).append(address)
    return resolve


def _orders(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One order per start URL, each checked here so a mistake is told before anything starts."""
    from .focus_file import load_focus
    from .order import BadOrder, Order
    from .pool import latest_signatures

    resolve = resolve_map(args)
    folder = args.previous is not None and args.previous.is_dir()
    if args.previous is not None and not folder and len(args.urls) > 1:
        raise BadOrder(
            "--previous FILE names one site's signature file: give one start URL with it,"
            " or the folder of the previous crawl"
        )
    if args.quick and args.previous is None:
        raise BadOrder("--quick walks the previous crawl: give --previous with it")
    politeness = {
        "delay": args.delay,
        "burst": args.burst,
        "read_timeout": args.timeout,
        "connect_timeout": args.timeout,
        "max_size": args.max_size,
        "max_pages": args.max_pages,
        "max_bytes": args.max_bytes,
        "period": args.period,
        "retries": args.retries,
        "retry_delay": args.retry_delay,
    }
    focus = load_focus(args.focus) if args.focus is not None else None
    previous_files = latest_signatures(args.previous, args.urls) if folder else {}
    orders = []
    for url in args.urls:
        order: dict[str, Any] = {
            "start_url": url,
            "accept": args.accept or "",
            "reject": args.reject or "",
            "keywords": [k.strip() for k in (args.keywords or "").split(",") if k.strip()],
            "politeness": politeness,
            "resolve": resolve,
            "browser": args.browser,
            "browser_budget": args.browser_budget,
        }
        if focus is not None:
            order["focus"] = focus.to_json()
        if args.no_app_rules:
            order["app_rules"] = False
        if args.depth is not None:
            order["max_depth"] = args.depth
        if args.dynamic_depth is not None:
            order["max_dynamic_depth"] = args.dynamic_depth
        previous = previous_files.get(url) if folder else args.previous
        if previous is not None:
            order["previous"] = str(previous)
            order["quick"] = args.quick
        Order.from_json(order)
        orders.append(order)
    return orders


def _summary(report: dict[str, Any]) -> str:
    if "failed" in report:
        return f"{report['start_url']}: FAILED: {report['failed']}"
    errors = ", ".join(f"{k} {n}" for k, n in sorted(report["errors"].items())) or "none"
    return (
        f"{report['start_url']}: {report['pages']} pages, {report['components']} components,"
        f" {report['bytes'] / 1e6:.1f} MB, {report['new_contents']} new contents,"
        f" {report['not_modified']} not modified, {report['uploaded']} uploaded,"
        f" {len(report['external_links'])} external links, robots-excluded"
        f" {report['robots_excluded']}, traps {report['traps']},"
        f" {report.get('browser_pages', 0)} through the browser; errors: {errors};"
        f" {report['seconds']:.1f} s"
    )


def _run(args: argparse.Namespace) -> int:
    from .pool import crawl_sites

    config = load_config(args.config)
    orders = _orders(args)
    if args.previous is not None and not args.previous.exists():
        raise DlwebError(f"--previous {args.previous}: no such file or folder")
    work = checked_directory(args.work, "--work")
    started = time.monotonic()
    reports = crawl_sites(config, orders, work, agents=args.agents, monitor=args.monitor)
    seconds = time.monotonic() - started
    for report in reports:
        print(_summary(report))
    pages = sum(r.get("pages", 0) + r.get("components", 0) for r in reports)
    print(f"{len(reports)} sites, {pages} documents in {seconds:.1f} s ({pages / seconds:.1f}/s)")
    if args.report is not None:
        atomic_write(args.report, json.dumps({"sites": reports}, indent=1).encode())
    return 1 if any("failed" in r for r in reports) else 0


def _add_work_option(parser: argparse.ArgumentParser, text: str) -> None:
    """--work, the folder of a site crawler's queues and of the files its crawls leave."""
    parser.add_argument(
        "--work", type=Path, default=DEFAULT_WORK, help=f"{text} (default ./{DEFAULT_WORK})"
    )


def _add_site_arguments(parser: argparse.ArgumentParser) -> None:
    """The start URLs and what belongs to their sites."""
    parser.add_argument("urls", nargs="+", metavar="URL", help="start URL of a site (one per site)")
    parser.add_argument(
        "--accept",
        help="what belongs to the site, e.g. '//example.org OR .example.org' (default: the start URL's host and its subdomains)",
    )
    parser.add_argument("--reject", help="what does not, even if accepted")
    parser.add_argument("--depth", type=int, help="levels of page links to follow (default 150)")
    parser.add_argument(
        "--dynamic-depth", type=int, help="levels for dynamic-looking URLs (default 5)"
    )
    add_resolve_option(parser)


def _add_politeness_arguments(parser: argparse.ArgumentParser) -> None:
    """The pace and the limits of the requests to each site."""
    parser.add_argument(
        "--delay",
        type=non_negative,
        default=1.0,
        help="seconds owed to a server after each request (default 1; robots.txt Crawl-delay may ask for more)",
    )
    add_number_option(
        parser, "--burst", non_negative, 10.0, "owed seconds are paid as one pause once this large"
    )
    add_number_option(
        parser, "--timeout", non_negative, 30.0, "seconds to wait for a connection or for data"
    )
    add_number_option(
        parser,
        "--max-size",
        positive_int,
        100 * 1024 * 1024,
        "bytes kept of one response",
        "100 MiB",
    )
    parser.add_argument(
        "--max-pages",
        type=int,
        default=0,
        help="at most this many requests per period and site (default: no limit)",
    )
    parser.add_argument(
        "--max-bytes", type=int, default=0, help="at most this many bytes per period and site"
    )
    add_number_option(
        parser,
        "--period",
        non_negative,
        60.0,
        "the period of --max-pages and --max-bytes, in seconds",
    )
    add_number_option(
        parser,
        "--retries",
        counting_to(MAX_RETRIES, lowest=0),
        2,
        "times a URL is tried again later in the crawl after a 5xx, a 429, a reset or a timeout",
    )
    add_number_option(
        parser,
        "--retry-delay",
        non_negative,
        5.0,
        "seconds before the first try again, twice as long each time; a Retry-After is obeyed",
    )


def _add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """How pages are read: keywords, the browser, the previous crawl and the work folder."""
    parser.add_argument("--keywords", help="comma-separated words counted in the sites' text")
    parser.add_argument(
        "--focus",
        type=Path,
        metavar="FILE",
        help="a focused crawl: the campaign's relevance settings in YAML (docs/crawler.md,"
        " Focused crawling); each site's best-scored URL is fetched next",
    )
    parser.add_argument(
        "--no-app-rules",
        action="store_true",
        help="crawl every site as plain HTML, without the rules of the software behind it"
        " (WordPress, MediaWiki, ...)",
    )
    parser.add_argument(
        "--browser",
        choices=("auto", "always", "never"),
        default="never",
        help="load pages in headless Chromium, every request it makes fetched politely and"
        " archived: always, when a page's parse suggests scripts build it (auto), or never"
        " (default)",
    )
    add_number_option(
        parser,
        "--browser-budget",
        non_negative,
        30.0,
        "time a page may take in the browser, behaviours included",
        metavar="SECONDS",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        help="the signature file of this site's previous crawl, or the --work folder of a"
        " previous crawl of several (each site's latest): conditional requests, known contents",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="with --previous: ask again for each URL of the previous crawl, level by level, and"
        " parse only the pages that changed (new pages found there are crawled as usual)",
    )
    _add_work_option(
        parser,
        "folder for the queues while a site is crawled, and for the signature and text-chunk"
        " files each crawl leaves",
    )


def _add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """The agents, their monitoring, the report and the configuration file."""
    add_number_option(
        parser, "--agents", positive_int, 1, "site crawler agents, each crawling one site at a time"
    )
    parser.add_argument(
        "--monitor",
        type=parse_listen,
        metavar="HOST:PORT",
        help="serve each agent's monitoring page (agent N on PORT+N; port 0: any free port)",
    )
    parser.add_argument(
        "--report", type=Path, help="write every site's report as JSON to this file"
    )
    add_config_option(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_site_arguments(parser)
    _add_politeness_arguments(parser)
    _add_page_arguments(parser)
    _add_agent_arguments(parser)
    parser.set_defaults(run=_run, intermixed="urls", collection=None)


register, main = command(
    "crawl", "crawl websites into the cluster", "dlweb site crawler", add_arguments
)


def add_scheduler_options(parser: argparse.ArgumentParser, kind: str) -> None:
    """--scheduler and --name, for an agent of the scheduler (`kind` names it by default)."""
    parser.add_argument(
        "--scheduler",
        help="the scheduler's URL (http://host:port; default: the scheduler of the cluster found"
        " on the LAN)",
    )
    parser.add_argument("--name", help=f"this agent's name (default: {kind}-PID)")
    parser.add_argument(
        "--hip-proxy",
        type=_hip_proxy,
        metavar="URL",
        help="reach the scheduler through this HTTP proxy's CONNECT tunnel"
        " (http://[user:password@]host:port; default: the configuration's hip_proxy)",
    )


def _hip_proxy(text: str) -> HttpProxy:
    try:
        return parse_proxy(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    add_scheduler_options(parser, "crawler")
    _add_work_option(parser, "folder for queues and signature files")
    parser.add_argument(
        "--monitor", type=parse_listen, metavar="HOST:PORT", help="serve the monitoring page"
    )
    add_config_option(parser)
    parser.set_defaults(run="crawler.agent:run", collection=None)


def register_agent(subparsers: Subparsers) -> None:
    add_agent_arguments(
        subparsers.add_parser("crawler-agent", help="run a site crawler agent for a scheduler")
    )


def _record(args: argparse.Namespace) -> int:
    """Each page loaded in headless Chromium with the browser behaviours, everything it asked
    for archived: a crawl of the page alone in browser mode."""
    from .order import Order
    from .pool import crawl_sites

    config = load_config(args.config)
    resolve = resolve_map(args)
    orders = []
    for url in args.urls:
        order: dict[str, Any] = {
            "start_url": url,
            "max_depth": 0,
            "browser": "always",
            "politeness": {"delay": args.delay, "read_timeout": args.timeout},
            "resolve": resolve,
        }
        Order.from_json(order)
        orders.append(order)
    work = checked_directory(args.work, "--work")
    failed = 0
    for report in crawl_sites(config, orders, work):
        if "failed" in report or not report.get("browser_pages"):
            failed += 1
            errors = report.get("failed") or ", ".join(sorted(report.get("errors", {}))) or "?"
            print(f"{report['start_url']}: NOT RECORDED in the browser ({errors})")
            continue
        print(
            f"{report['start_url']}: recorded, {report['components'] + 1} responses archived,"
            f" {report['bytes'] / 1e6:.1f} MB"
        )
    return 1 if failed else 0


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="page to record")
    add_number_option(
        parser,
        "--delay",
        non_negative,
        0.0,
        "seconds between two requests to one server",
        "0: as a browser would",
    )
    parser.add_argument(
        "--timeout", type=non_negative, default=30.0, help="seconds a server may stay silent"
    )
    add_resolve_option(parser)
    _add_work_option(parser, "folder for the crawler's queues and signature files")
    add_config_option(parser)
    parser.set_defaults(run=_record, collection=None)


def register_record(subparsers: Subparsers) -> None:
    add_record_arguments(
        subparsers.add_parser(
            "record",
            help="record pages in headless Chromium (scrolled, media played) into the cluster",
        )
    )
