"""The HIP calls between the scheduler and its connectivity agents, typed once for both ends.

The scheduler calls an agent's `resolve_links` with the external links of one finished crawl
(ExternalLinks); the agent answers, for each link in order, the site it guesses the link belongs
to (ResolvedLinks): its start URL and delimitation, or NO_SITE for a link it cannot place.
"""

from archive.answers import Answer
from archive.hip import Method

__all__ = ["NO_SITE", "RESOLVE_LINKS", "ROLE", "ExternalLinks", "GuessedSite", "ResolvedLinks"]

ROLE = "connectivity"  # the HIP role of a connectivity agent


class ExternalLinks(Answer):
    """The canonical external links of the crawl `crawl`, in the order its report gave them."""

    crawl: int
    urls: tuple[str, ...]


class GuessedSite(Answer):
    """Where a site found through a link begins and ends (crawler/scheduler/guess.py)."""

    start_url: str
    accept: str
    reject: str


NO_SITE = GuessedSite("", "", "")


class ResolvedLinks(Answer):
    """The site of each link of `crawl`, in order; one whose start URL is empty (NO_SITE) for a
    link that belongs to none."""

    crawl: int
    sites: tuple[GuessedSite, ...]


RESOLVE_LINKS = Method("resolve_links", ExternalLinks, ResolvedLinks)
