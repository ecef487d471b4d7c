"""The site crawler: harvests one whole website at a time, politely and exhaustively, into the
archive through the cluster client's insertion path."""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .delimitation import BadExpression, BadOrder, Delimitation
    from .fetch import Fetched, Fetcher, FetchError, Politeness, Resolver
    from .links import Link, LinkKind
    from .order import Order, Signature, read_signatures
    from .report import SiteReport
    from .site import Progress, SiteCrawler

# Loaded on first use: every `dlweb` command imports this package for its subcommands' options,
# and most never crawl.
_EXPORTS = {
    "BadExpression": "delimitation",
    "BadOrder": "delimitation",
    "Delimitation": "delimitation",
    "FetchError": "fetch",
    "Fetched": "fetch",
    "Fetcher": "fetch",
    "Link": "links",
    "LinkKind": "links",
    "Order": "order",
    "Politeness": "fetch",
    "Progress": "site",
    "Resolver": "fetch",
    "Signature": "order",
    "SiteCrawler": "site",
    "SiteReport": "report",
    "read_signatures": "order",
}
__all__ = [
    "BadExpression",
    "BadOrder",
    "Delimitation",
    "FetchError",
    "Fetched",
    "Fetcher",
    "Link",
    "LinkKind",
    "Order",
    "Politeness",
    "Progress",
    "Resolver",
    "Signature",
    "SiteCrawler",
    "SiteReport",
    "read_signatures",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
