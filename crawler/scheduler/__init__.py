"""The scheduler: master of the site crawler agents, which decides which site is crawled when.

Its state is in an on-disk database (`store`), so a campaign resumes where it stopped. Two
policies run at once: expansion (focused discovery: filters on each crawled site's report, a
blacklist, HITS ranks on the graph of links between sites, priorities for sites not crawled yet)
and temporal (each site crawled again at a frequency adapted to how much it changes).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .guess import GuessedSite, guess_site
    from .policy import (
        Filters,
        Verdict,
        change_rate,
        guess_language,
        judge,
        next_interval,
        priority,
    )
    from .ranks import hits
    from .store import Crawl, DuplicateSite, Site, SqliteStore, Store, StoreError

# Loaded on first use: every `dlweb` command imports this package for its subcommands' options,
# and most never crawl.
_EXPORTS = {
    "Crawl": "store",
    "DuplicateSite": "store",
    "Filters": "policy",
    "GuessedSite": "guess",
    "Site": "store",
    "SqliteStore": "store",
    "Store": "store",
    "StoreError": "store",
    "Verdict": "policy",
    "change_rate": "policy",
    "guess_language": "policy",
    "guess_site": "guess",
    "hits": "ranks",
    "judge": "policy",
    "next_interval": "policy",
    "priority": "policy",
}
__all__ = [
    "Crawl",
    "DuplicateSite",
    "Filters",
    "GuessedSite",
    "Site",
    "SqliteStore",
    "Store",
    "StoreError",
    "Verdict",
    "change_rate",
    "guess_language",
    "guess_site",
    "hits",
    "judge",
    "next_interval",
    "priority",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
