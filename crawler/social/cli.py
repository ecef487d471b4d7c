"""`dlweb api-crawler`: follow a campaign's hashtags, accounts and feeds through their APIs,
archive the answers and the posts, and inject the URLs the posts link to into the scheduler."""

import argparse
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from archive.command_line import (
    add_config_option,
    add_number_option,
    command,
    counting_to,
    non_negative,
    positive_int,
)
from archive.config import load_config
from archive.errors import DlwebError

from ..cli import add_resolve_option, resolve_map
from .follows import MAX_LIMIT, account, check_feed, check_instance, hashtag
from .sources import Source

__all__ = ["add_arguments", "main", "register"]

MAX_CAMPAIGN = 200  # characters, as a ScoredUrl's campaign


def _checked(check: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse type from a check that raises ValueError with its message."""

    def parse(text: str) -> str:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = check.__name__
    return parse


def scheduler_api(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} is not the scheduler's http://host:port")
    return text.rstrip("/")


def campaign(text: str) -> str:
    if len(text) > MAX_CAMPAIGN:
        raise ValueError(f"a campaign name has at most {MAX_CAMPAIGN} characters")
    return text


def _sources(args: argparse.Namespace) -> list[Source]:
    """The sources the options name; a DlwebError when they name none or lack the instance."""
    from .feeds import Feed
    from .mastodon import AccountTimeline, TagTimeline

    tags, accounts, feeds = args.hashtag or [], args.account or [], args.feed or []
    if not tags and not accounts and not feeds:
        raise DlwebError("nothing to follow: give --hashtag, --account or --feed")
    if (tags or accounts) and args.instance is None:
        raise DlwebError("--hashtag and --account need the Mastodon --instance to ask")
    sources: list[Source] = [TagTimeline(args.instance, t, args.limit, args.pages) for t in tags]
    sources += [AccountTimeline(args.instance, a, args.limit, args.pages) for a in accounts]
    sources += [Feed(url) for url in feeds]
    return sources


def _run(args: argparse.Namespace) -> int:
    from .crawl import Plan, crawl

    plan = Plan(
        sources=_sources(args),
        campaign=args.campaign,
        scheduler=args.scheduler_api or "",
        resolve=resolve_map(args),
        max_wait=args.max_wait,
        rounds=args.rounds,
        every=args.every,
        report=args.report,
    )
    config = load_config(args.config)
    report = asyncio.run(crawl(config, plan, args.name or f"api-crawler-{os.getpid()}"))
    skipped = ", ".join(f"{kind} {n}" for kind, n in report["skipped"].items()) or "none"
    print(
        f"{report['posts']} posts, {report['pages']} post pages, {report['archived']} answers"
        f" archived, {len(report['links'])} links, {report['injected']} injected;"
        f" 429 obeyed {report['throttled']} times ({report['waited']:.1f} s waited);"
        f" skipped: {skipped}"
    )
    if report["refused"]:
        print(f"NOT INJECTED: {report['refused']}")
        return 1
    return 0


def _add_follow_arguments(parser: argparse.ArgumentParser) -> None:
    """What to follow."""
    parser.add_argument(
        "--instance",
        type=_checked(check_instance),
        metavar="URL",
        help="the Mastodon instance whose public API is asked (https://host)",
    )
    for flag, check, what in (
        ("--hashtag", hashtag, "a hashtag to follow"),
        ("--account", account, "an account to follow, user or user@domain"),
        ("--feed", check_feed, "an RSS or Atom feed"),
    ):
        parser.add_argument(flag, type=_checked(check), action="append", help=f"{what} (repeat)")
    add_number_option(
        parser,
        "--limit",
        counting_to(MAX_LIMIT),
        20,
        f"statuses asked per page of a timeline (at most {MAX_LIMIT})",
    )
    add_number_option(parser, "--pages", positive_int, 5, "pages of a timeline read per round")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_follow_arguments(parser)
    parser.add_argument(
        "--campaign", type=_checked(campaign), default="", help="the campaign the URLs serve"
    )
    parser.add_argument(
        "--scheduler-api",
        type=_checked(scheduler_api),
        metavar="URL",
        help="inject the linked URLs into this scheduler (http://host:port; default: none)",
    )
    add_number_option(
        parser,
        "--max-wait",
        non_negative,
        300.0,
        "seconds a rate limit may hold a request; a longer Retry-After skips it",
    )
    add_number_option(
        parser, "--rounds", counting_to(10**9, lowest=0), 1, "rounds to run (0: no end)"
    )
    add_number_option(
        parser, "--every", non_negative, 300.0, "seconds from the start of a round to the next"
    )
    add_resolve_option(parser)
    parser.add_argument("--name", help="this crawler's name in the cluster")
    parser.add_argument("--report", type=Path, help="write the report as JSON to this file")
    add_config_option(parser)
    parser.set_defaults(run=_run, collection=None)


register, main = command(
    "api-crawler",
    "follow hashtags, accounts and feeds through social-media APIs into the cluster",
    "dlweb API crawler",
    add_arguments,
)
