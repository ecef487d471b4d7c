"""Full-text search over the archive: an index of every version of every HTML, text and PDF page,
rebuilt from the archive alone, and queries over it (`dlweb search`, docs/search.md); and the
CDX API of pywb over the archive's captures (`dlweb cdx`, `http://api.dlweb/cdx`); backlinks and
similar pages from the index (`dlweb search --backlinks URL`, `--similar URL`).

The public names are loaded on first use: every `dlweb` command imports this package for its
subcommand's options, and tantivy, lxml and the cluster client are slow to load.
"""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from archive.simhash import distance, simhash

    from .backlinks import Backlink, Neighbours, Similar, backlinks, similar
    from .cdx import CdxQuery, parse_query
    from .domains import host_of, registered_domain
    from .errors import (
        BadCdxQuery,
        BadLinkQuery,
        BadQuery,
        NoIndex,
        NotIndexed,
        NoUrlIndex,
        OverBudget,
        PageNotIndexed,
    )
    from .extract import Extracted, Link, extract
    from .index import FIELDS, Answer, Hit, Page, open_index, search
    from .keys import link_key
    from .language import guess_language
    from .rebuild import RebuildSummary, rebuild
    from .shards import search_shards
    from .versions import Version

__all__ = [
    "Answer",
    "Backlink",
    "BadCdxQuery",
    "BadLinkQuery",
    "BadQuery",
    "CdxQuery",
    "Extracted",
    "FIELDS",
    "Hit",
    "Link",
    "Neighbours",
    "NoIndex",
    "NoUrlIndex",
    "NotIndexed",
    "OverBudget",
    "Page",
    "PageNotIndexed",
    "RebuildSummary",
    "Similar",
    "Version",
    "backlinks",
    "distance",
    "extract",
    "guess_language",
    "host_of",
    "link_key",
    "open_index",
    "parse_query",
    "rebuild",
    "registered_domain",
    "search",
    "search_shards",
    "simhash",
    "similar",
]

__getattr__ = lazy_exports(__name__, __file__)
