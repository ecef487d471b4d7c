"""The scheduler: master of the site crawler agents, which decides which site is crawled when.

Its state is in an on-disk database (`store`), so a campaign resumes where it stopped. Two
policies run at once: expansion (focused discovery: filters on each crawled site's report, a
blacklist, HITS ranks on the graph of links between sites, priorities for sites not crawled yet)
and temporal (each site crawled again at a frequency adapted to how much it changes).
"""

from .guess import GuessedSite, guess_site
from .policy import Filters, Verdict, change_rate, guess_language, judge, next_interval, priority
from .ranks import hits
from .store import Crawl, DuplicateSite, Site, SqliteStore, Store, StoreError

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
