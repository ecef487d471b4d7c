"""`dlweb connectivity-agent`: the expansion policy's guesswork for a scheduler, as a HIP slave
of it (role `connectivity`).

The scheduler calls `resolve_links` with the external links of one finished crawl; the agent
answers the site each link most likely belongs to (crawler/scheduler/guess.py: start URL,
accept and reject expressions), which the scheduler matches against its registered sites and
applies (crawler/scheduler/expansion.py). The agent keeps nothing: killed, it loses no link, as
the scheduler keeps the crawl waiting until some agent answers. The calls and their messages are
archive/connectivity_calls.py's.
"""

import argparse
import asyncio
import sys

from archive.command_line import standalone
from archive.connectivity_calls import RESOLVE_LINKS, ROLE, ExternalLinks, ResolvedLinks
from archive.hip import Peer

from .scheduler.cli import add_connectivity_agent_arguments
from .scheduler.expansion import resolve_links
from .scheduler_slave import serve_slave

__all__ = ["run"]


async def _resolve(_: Peer, links: ExternalLinks) -> ResolvedLinks:
    return ResolvedLinks(links.crawl, resolve_links(links.urls))


def run(args: argparse.Namespace) -> int:
    asyncio.run(serve_slave(args, ROLE, {RESOLVE_LINKS.name: RESOLVE_LINKS.handler(_resolve)}))
    return 0


if __name__ == "__main__":
    sys.exit(
        standalone(
            "python -m crawler.connectivity_agent",
            "dlweb connectivity agent",
            add_connectivity_agent_arguments,
        )
    )
