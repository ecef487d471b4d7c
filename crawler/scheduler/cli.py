"""`dlweb scheduler` runs the scheduler; `dlweb sites`, `dlweb streams` and `dlweb campaign`
talk to it."""

import argparse
import json
import urllib.error
import urllib.parse
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
from archive.crawl_calls import MAX_INJECTED
from archive.errors import DlwebError
from archive.scheduler_answers import (
    BlacklistPatterns,
    Domains,
    DomainSettings,
    InjectedUrls,
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

    from ..focus_file import load_focus
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
        focus=load_focus(args.focus) if args.focus else None,
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
        "--focus",
        type=Path,
        metavar="FILE",
        help="a focused campaign: the YAML file of its keywords, examples (texts or files),"
        " url_scores, spam, weights and update, which every crawl scores pages and links by",
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
    if action == "inject":
        return _inject(args)
    if action == "blacklist":
        return _blacklist(args)
    if action == "domain":
        return _domain(args)
    path = f"/api/sites/{args.id}"
    answer: Answer
    if action == "show":
        answer = _call(args, SiteDetail, "GET", path)
    elif action == "second-agent":
        answer = _call(args, SecondAgentSent, "POST", f"{path}/second-agent", {})
    else:
        answer = _call(args, Site, "DELETE", path)
    return _answered(answer)


def _inject(args: argparse.Namespace) -> int:
    """A site crawled next with a priority, or URLs into the next crawls of their sites."""
    targets: list[str] = args.targets
    if len(targets) == 1 and targets[0].isdigit():
        if args.priority is None or args.score is not None:
            raise DlwebError("sites inject ID takes --priority (--score is for URLs)")
        path = f"/api/sites/{targets[0]}/inject"
        return _answered(_call(args, Site, "POST", path, {"priority": args.priority}))
    if args.score is None or args.priority is not None:
        raise DlwebError("sites inject URL... takes --score (--priority is for a site id)")
    urls: list[Any] = []
    for start in range(0, len(targets), MAX_INJECTED):
        body = {
            "urls": [
                {"url": url, "score": args.score, "campaign": args.campaign}
                for url in targets[start : start + MAX_INJECTED]
            ]
        }
        urls.extend(_call(args, InjectedUrls, "POST", "/api/urls/inject", body).urls)
    return _answered(InjectedUrls(tuple(urls)))


def _blacklist(args: argparse.Namespace) -> int:
    """A site blacklisted, patterns added to or removed from the campaign's blacklist, or (with
    none of these) the blacklist shown."""
    if args.id is None and not args.pattern and not args.remove_pattern:
        return _answered(_call(args, BlacklistPatterns, "GET", "/api/blacklist"))
    answer: Answer | None = None
    if args.id is not None:
        answer = _call(args, Site, "POST", f"/api/sites/{args.id}/blacklist", {})
    if args.pattern:
        body = {"patterns": args.pattern}
        answer = _call(args, BlacklistPatterns, "POST", "/api/blacklist", body)
    if args.remove_pattern:
        body = {"patterns": args.remove_pattern}
        answer = _call(args, BlacklistPatterns, "DELETE", "/api/blacklist", body)
    assert answer is not None
    return _answered(answer)


def _domain(args: argparse.Namespace) -> int:
    """A domain's settings set, or every domain's shown."""
    if args.domain is None:
        return _answered(_call(args, Domains, "GET", "/api/domains"))
    body = {"budget": args.budget, "min_delay": args.min_delay, "max_delay": args.max_delay}
    path = f"/api/domains/{urllib.parse.quote(args.domain, safe='')}"
    return _answered(_call(args, DomainSettings, "PUT", path, body))


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
        ("remove", "forget it"),
        ("second-agent", "send a free agent on a site being crawled, for a second copy"),
    ):
        actions.add_parser(name, help=text).add_argument("id", type=int)
    _add_steering_actions(actions)


def _add_steering_actions(actions: Subparsers) -> None:
    """inject, blacklist and domain: what steers a running campaign."""
    inject = actions.add_parser(
        "inject",
        help="crawl a site next (ID --priority P), or put URLs into the next crawls of their"
        " sites (URL... --score S), registering a site for a URL no site takes",
        description="With a site id and --priority: crawl that site next, with that priority."
        " With URLs and --score: each waits for the next crawl of the site that takes it,"
        " brought forward, crawled before the site's other pages in order of score; a URL no"
        " site takes gets a site of its own, registered as the campaign's discovered sites are."
        " A URL the blacklist blocks is refused.",
    )
    inject.add_argument("targets", nargs="+", metavar="ID|URL", help="a site id, or URLs")
    inject.add_argument("--priority", type=float, help="the site's new priority (with an ID)")
    inject.add_argument(
        "--score", type=_score, help="the URLs' score, from 0 to 1: the higher, the sooner"
    )
    inject.add_argument("--campaign", default="", help="the campaign the URLs serve (with URLs)")
    blacklist = actions.add_parser(
        "blacklist",
        help="never crawl a site again (ID), or add or remove blacklist patterns; with neither,"
        " show the blacklist",
    )
    blacklist.add_argument("id", type=int, nargs="?", help="the site to blacklist")
    blacklist.add_argument(
        "--pattern",
        metavar="P",
        action="append",
        default=[],
        help="keep every crawl away from URLs matching host:HOST, prefix:URL or re:REGEX (repeat)",
    )
    blacklist.add_argument(
        "--remove-pattern",
        metavar="P",
        action="append",
        default=[],
        help="a pattern to remove (repeat)",
    )
    domain = actions.add_parser(
        "domain",
        help="bound the crawls of a domain's sites (and its subdomains') from their next order;"
        " with no DOMAIN, show every domain's settings",
    )
    domain.add_argument(
        "domain",
        nargs="?",
        help="a domain or host name; given without settings, its settings are forgotten",
    )
    domain.add_argument("--budget", type=positive_int, help="the most pages a crawl fetches")
    domain.add_argument("--min-delay", type=non_negative, help="the least politeness delay, s")
    domain.add_argument("--max-delay", type=non_negative, help="the most politeness delay, s")


def _score(text: str) -> float:
    """An argparse type for a score from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number from 0 to 1")
    return value


register_sites = _actions_command(
    "sites",
    "the scheduler's sites: add, list, show, inject, blacklist, domain, remove",
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
