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

# Loaded on first use: every `dlweb` command imports this package for its subcommands' options,
# and most never crawl.
__getattr__ = lazy_exports(__name__, __file__)
