"""`dlweb scheduler` runs the scheduler; `dlweb sites`, `dlweb streams` and `dlweb campaign`
talk to it."""

import argparse
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from archive.answers import Answer, parsed
from archive.command_line import (
    ArgumentAdder,
    Runner,
    Subparsers,
    add_config_option,
    add_number_option,
    add_state_options,
    checked_db,
    checked_directory,
    counting_to,
    non_negative,
    positive_int,
    positive_seconds,
    server_options,
)
from archive.config import load_config
from archive.errors import DlwebError
from archive.scheduler_answers import (
    SchedulerStatus,
    SecondAgentSent,
    Site,
    SiteDetail,
    Sites,
    Stream,
    StreamDetail,
    Streams,
)
from archive.timestamps import format_iso
from archive.urlkey import canonical_url

from ..cli import add_resolve_option, add_scheduler_options, resolve_map
from ..stream.cli import add_chunk_options
from ..stream.settings import StreamSettings

__all__ = [
    "register_campaign",
    "register_connectivity_agent",
    "register_feed_aggregator",
    "register_scheduler",
    "register_sites",
    "register_streams",
]

DEFAULT_DATA = Path("dlweb-data") / "scheduler"
DEFAULT_URL = "http://127.0.0.1:8300"
# The most bytes of the scheduler's answer read: a list of 100,000 streams (the most
# /api/streams gives) with URLs of a kilobyte fits; more is no answer of the scheduler's.
MAX_ANSWER = 256 * 2**20
A = TypeVar("A", bound=Answer)


def _words(text: str | None) -> tuple[str, ...]:
    return tuple(word.strip().lower() for word in (text or "").split(",") if word.strip())


def _run_scheduler(args: argparse.Namespace) -> int:
    import asyncio

    from .server import ServerOptions, serve

    config = load_config(args.config)
    checked_directory(args.data, "--data")
    options = server_options(
        ServerOptions,
        args,
        config,
        keywords=_words(args.keywords),
        languages=_words(args.languages),
        expand=not args.no_expand,
        resolve=resolve_map(args),
        stream_settings=StreamSettings(
            chunk_seconds=args.stream_chunk_seconds, point_seconds=args.stream_point_seconds
        ),
        database=checked_db(args),
        inline=not args.no_inline_policies,
    )
    asyncio.run(serve(options))
    return 0


def add_scheduler_arguments(parser: argparse.ArgumentParser) -> None:
    _add_place_arguments(parser)
    _add_crawl_arguments(parser)
    _add_interval_arguments(parser)
    _add_stream_arguments(parser)
    add_config_option(parser)
    parser.set_defaults(run=_run_scheduler)


def _add_place_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the campaign's state lives and where the scheduler listens."""
    add_state_options(
        parser,
        f"the campaign's database and files (default {DEFAULT_DATA})",
        "the campaign's database, if not the SQLite file in --data",
        8300,
        default=DEFAULT_DATA,
    )


def _add_crawl_arguments(parser: argparse.ArgumentParser) -> None:
    """What the campaign keeps, and how its agents crawl."""
    parser.add_argument(
        "--keywords",
        help="comma-separated words a site's text must hold to be kept (expansion filter)",
    )
    parser.add_argument(
        "--languages",
        help="comma-separated ISO 639-1 codes a site's text must be in (default: any)",
    )
    parser.add_argument(
        "--no-expand",
        action="store_true",
        help="crawl the registered sites only; do not register the sites they link to",
    )
    add_number_option(
        parser, "--delay", non_negative, 1.0, "politeness delay the agents keep per server", "1 s"
    )
    parser.add_argument(
        "--browser",
        choices=("auto", "always", "never"),
        default="never",
        help="whether the agents load pages in headless Chromium: always, when scripts seem to"
        " build them (auto), or never (default)",
    )
    add_number_option(
        parser, "--burst", non_negative, 10.0, "seconds of owed delay the agents pay as one pause"
    )
    add_resolve_option(
        parser, "pin a host to an address for the agents and the feed poller (repeat)"
    )
    parser.add_argument(
        "--no-inline-policies",
        action="store_true",
        help="leave the crawls' external links to connectivity agents and the feeds to feed"
        " aggregators: while none of a kind is connected, that work waits (default: the"
        " scheduler does it itself)",
    )


def _add_interval_arguments(parser: argparse.ArgumentParser) -> None:
    """When sites are crawled again, and how long a vanished agent is waited for."""
    add_number_option(
        parser,
        "--first-interval",
        positive_seconds,
        86_400.0,
        "seconds between a site's first and second crawls",
        "a day",
    )
    add_number_option(
        parser, "--shortest", positive_seconds, 3_600.0, "shortest re-crawl interval", "an hour"
    )
    add_number_option(
        parser, "--longest", positive_seconds, 30 * 86_400.0, "longest re-crawl interval", "30 days"
    )
    add_number_option(
        parser,
        "--feed-interval",
        positive_seconds,
        900.0,
        "seconds between polls of the sites' feeds",
    )
    add_number_option(
        parser,
        "--agent-grace",
        positive_seconds,
        10.0,
        "seconds a vanished agent's site or streams wait before going to another agent",
    )
    add_number_option(
        parser,
        "--agent-poll",
        positive_seconds,
        30.0,
        "seconds between polls of each agent's state for the status page",
    )
    add_number_option(
        parser,
        "--quiet-crawls",
        counting_to(1000, 0),
        3,
        "the levels of a site where this many crawls in a row found no change are left out of"
        " its next crawls",
        "3; 0: every crawl goes to the site's full depth",
    )
    add_number_option(
        parser,
        "--full-crawl-every",
        counting_to(1000, 0),
        10,
        "every this many crawls of a site goes to its full depth again",
        "10; 0: never, once levels are cut",
    )
    parser.add_argument("--paused", action="store_true", help="start with the campaign paused")


def _add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    """Which live streams are recorded, and in what chunks."""
    parser.add_argument(
        "--record-streams",
        action="store_true",
        help="record every live stream the crawls report (default: only those `dlweb streams"
        " add` names)",
    )
    add_chunk_options(parser, "stream-")


def register_scheduler(subparsers: Subparsers) -> None:
    add_scheduler_arguments(subparsers.add_parser("scheduler", help="run the crawl scheduler"))


def _policy_agent(
    name: str, text: str, kind: str, run: str, add_own: ArgumentAdder | None = None
) -> tuple[Callable[[Subparsers], None], ArgumentAdder]:
    """The command of an agent that does one of the scheduler's policies: its `register` (`dlweb
    NAME`, `text` its help) and its `add_arguments` (the scheduler's agent options, `kind` naming
    it by default, then its own and the configuration file); `run` is its "module:function"."""

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        add_scheduler_options(parser, kind)
        if add_own is not None:
            add_own(parser)
        add_config_option(parser)
        parser.set_defaults(run=run)

    def register(subparsers: Subparsers) -> None:
        add_arguments(subparsers.add_parser(name, help=text))

    return register, add_arguments


register_connectivity_agent, add_connectivity_agent_arguments = _policy_agent(
    "connectivity-agent",
    "run a connectivity agent: the sites a scheduler's crawls link to",
    "connectivity",
    "crawler.connectivity_agent:run",
)


def _add_feed_pins(parser: argparse.ArgumentParser) -> None:
    add_resolve_option(
        parser, "pin a host to an address for the feeds, besides the campaign's pins (repeat)"
    )


register_feed_aggregator, add_feed_aggregator_arguments = _policy_agent(
    "feed-aggregator",
    "run a feed aggregator: polls a scheduler's feeds for news",
    "feeds",
    "crawler.feed_aggregator:run",
    _add_feed_pins,
)


# -- the operator's commands ------------------------------------------------------------------


def _call(
    args: argparse.Namespace,
    kind: type[A],
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
) -> A:
    """One request to the scheduler's API, its answer a `kind`; its error message, or what is
    wrong with its answer, as a DlwebError."""
    headers = {"Content-Type": "application/json"}
    if method != "GET":
        headers["Authorization"] = f"Bearer {load_config(args.config).write_token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        args.scheduler.rstrip("/") + path, data=data, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            received = answer.read(MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        try:
            refusal = json.loads(exc.read(MAX_ANSWER))
        except ValueError:
            refusal = None
        message = refusal.get("error", exc.reason) if isinstance(refusal, dict) else exc.reason
        raise DlwebError(f"the scheduler refused: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise DlwebError(f"cannot reach the scheduler at {args.scheduler}: {exc}") from None
    if len(received) > MAX_ANSWER:
        raise DlwebError(f"the scheduler's answer is larger than {MAX_ANSWER // 2**20} MiB")
    try:
        decoded = json.loads(received)
    except ValueError as exc:
        raise DlwebError(f"the scheduler's answer is not JSON: {exc}") from None
    return parsed(kind, decoded, f"{method} {path}", _not_understood)


def _not_understood(message: str) -> DlwebError:
    return DlwebError(f"the scheduler's answer is not understood: {message}")


def _print_sites(listed: Sites) -> None:
    print(f"{'id':>6}  {'state':<12}{'priority':>9}{'relev.':>8}{'crawls':>7}  start URL")
    for site in listed.sites:
        print(
            f"{site.id:>6}  {site.state:<12}{site.priority:>9.3f}{site.relevance:>8.2f}"
            f"{site.crawls:>7}  {site.start_url}"
        )


def _answered(answer: Answer) -> int:
    """Print the scheduler's JSON answer, the output of every action but a table's."""
    print(json.dumps(answer.to_json(), indent=1))
    return 0


def _listed(args: argparse.Namespace, path: str, kind: type[A], table: Callable[[A], None]) -> int:
    """`list`: the sites or streams as a table, or the scheduler's answer with --json."""
    query = f"?state={args.state}" if args.state else ""
    answer = _call(args, kind, "GET", f"/api/{path}{query}")
    if args.json:
        return _answered(answer)
    table(answer)
    return 0


def _sites(args: argparse.Namespace) -> int:
    action = args.action
    if action == "list":
        return _listed(args, "sites", Sites, _print_sites)
    if action == "add":
        body: dict[str, Any] = {"start_url": args.url, "seed": args.seed, "priority": args.priority}
        for key, value in (
            ("accept", args.accept),
            ("reject", args.reject),
            ("max_depth", args.depth),
        ):
            if value is not None:
                body[key] = value
        return _answered(_call(args, Site, "POST", "/api/sites", body))
    path = f"/api/sites/{args.id}"
    answer: Answer
    if action == "show":
        answer = _call(args, SiteDetail, "GET", path)
    elif action == "inject":
        answer = _call(args, Site, "POST", f"{path}/inject", {"priority": args.priority})
    elif action == "second-agent":
        answer = _call(args, SecondAgentSent, "POST", f"{path}/second-agent", {})
    elif action == "blacklist":
        answer = _call(args, Site, "POST", f"{path}/blacklist", {})
    else:
        answer = _call(args, Site, "DELETE", path)
    return _answered(answer)


def _scheduler_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler", default=DEFAULT_URL, help=f"the scheduler's URL (default {DEFAULT_URL})"
    )
    add_config_option(parser)


def _actions_command(
    name: str, text: str, run: Runner, add_actions: Callable[[Subparsers], None]
) -> Callable[[Subparsers], None]:
    """The `register` of a command whose actions (add, list, show...) are its subcommands, each
    taking --scheduler and -c after the arguments `add_actions` gives it."""

    def register(subparsers: Subparsers) -> None:
        parser = subparsers.add_parser(name, help=text)
        parser.set_defaults(run=run)
        actions = parser.add_subparsers(dest="action", required=True)
        add_actions(actions)
        for action in actions.choices.values():
            _scheduler_option(action)

    return register


def _add_listing(actions: Subparsers, text: str, states: tuple[str, ...]) -> None:
    """The `list` action: the table, or the JSON answer; only those in a state with --state."""
    listing = actions.add_parser("list", help=text)
    listing.add_argument("--state", choices=states)
    listing.add_argument("--json", action="store_true")


def _add_site_actions(actions: Subparsers) -> None:
    add = actions.add_parser("add", help="register a site and queue it")
    add.add_argument("url", help="start URL")
    add.add_argument("--accept")
    add.add_argument("--reject")
    add.add_argument("--depth", type=int)
    add.add_argument(
        "--seed", action="store_true", help="a seed of the campaign: never blacklisted"
    )
    add.add_argument("--priority", type=float, default=1.0)
    _add_listing(
        actions,
        "the sites, highest priority first",
        ("queued", "crawling", "idle", "blacklisted", "removed", "paused"),
    )
    for name, text in (
        ("show", "one site, its crawls and referrers"),
        ("blacklist", "never crawl it again"),
        ("remove", "forget it"),
        ("second-agent", "send a free agent on a site being crawled, for a second copy"),
    ):
        actions.add_parser(name, help=text).add_argument("id", type=int)
    inject = actions.add_parser("inject", help="crawl a site next, with a priority")
    inject.add_argument("id", type=int)
    inject.add_argument("--priority", type=float, required=True)


register_sites = _actions_command(
    "sites",
    "the scheduler's sites: add, list, show, blacklist, inject, remove",
    _sites,
    _add_site_actions,
)


def _when(seconds: float) -> str:
    return format_iso(int(seconds) * 1_000_000) if seconds else "-"


def _print_streams(listed: Streams) -> None:
    print(
        f"{'id':>5}  {'state':<10}{'agent':<16}{'recorded from':<22}{'recorded until':<22}"
        f"{'gaps':>5}{'site':>6}  URL"
    )
    for stream in listed.streams:
        print(
            f"{stream.id:>5}  {stream.state:<10}{stream.agent or '-':<16}"
            f"{_when(stream.first_recorded):<22}{_when(stream.last_recorded):<22}"
            f"{stream.gaps:>5}{stream.site or '-':>6}  {stream.url}"
        )


def _streams(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _listed(args, "streams", Streams, _print_streams)
    answer: Answer
    if args.action == "show":
        answer = _call(args, StreamDetail, "GET", f"/api/streams/{args.id}")
    else:
        canonical_url(args.url)  # a URL no agent could record is told here, as any argument
        body: dict[str, Any] = {"url": args.url}
        if args.action == "add":
            if args.site is not None:
                body["site"] = args.site
            answer = _call(args, Stream, "POST", "/api/streams", body)
        else:
            answer = _call(args, Stream, "POST", "/api/streams/stop", body)
    return _answered(answer)


def _add_stream_actions(actions: Subparsers) -> None:
    add = actions.add_parser("add", help="record a stream (registered if new)")
    add.add_argument("url", help="the stream's URL")
    add.add_argument("--site", type=positive_int, help="the id of the site it belongs to")
    _add_listing(
        actions,
        "the streams, with their state and agent",
        ("found", "waiting", "recording", "stopped"),
    )
    show = actions.add_parser("show", help="one stream, its recordings and the decisions about it")
    show.add_argument("id", type=positive_int)
    stop = actions.add_parser("stop", help="stop recording a stream")
    stop.add_argument("url", help="the stream's URL")


register_streams = _actions_command(
    "streams",
    "the live streams of the scheduler's sites: add, list, show, stop",
    _streams,
    _add_stream_actions,
)


def _campaign(args: argparse.Namespace) -> int:
    state = "paused" if args.action == "pause" else "running"
    return _answered(_call(args, SchedulerStatus, "POST", "/api/campaign", {"state": state}))


def register_campaign(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("campaign", help="start, pause or resume the crawl campaign")
    parser.add_argument("action", choices=("start", "pause", "resume"))
    _scheduler_option(parser)
    parser.set_defaults(run=_campaign)
