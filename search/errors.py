"""The errors of full-text search, each a one-line message for the user, never a traceback."""

from archive.errors import ClientFault, DlwebError, NotFound, ServerFault
from archive.url_index import NoUrlIndex

__all__ = [
    "BadCdxQuery",
    "BadLinkQuery",
    "BadQuery",
    "NoIndex",
    "NoUrlIndex",
    "NotIndexed",
    "OverBudget",
    "PageNotIndexed",
]


class BadQuery(ClientFault):
    """A query the query parser cannot read: its sender must write it again."""


class NoIndex(DlwebError):
    """A search index folder that is missing, or was built by another version of its schema."""


class NotIndexed(DlwebError):
    """A capture left out of the index; `reason` is a short category for the rebuild's summary."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class BadCdxQuery(ClientFault):
    """A CDX query with a parameter that cannot be read (an unknown matchType, output or sort, a
    bad timestamp, regex or limit): its sender must write it again."""


class BadLinkQuery(ClientFault):
    """A backlinks or similar pages query without a URL, or with one that is not http(s)."""


class PageNotIndexed(NotFound):
    """A URL with no version in the search index (similar pages need one to compare with)."""


class OverBudget(ServerFault):
    """An answer that would take longer than its time budget (budget.py): its asker may narrow
    the query, or ask again later."""

    status = 503
