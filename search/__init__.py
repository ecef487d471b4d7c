"""Full-text search over the archive: an index of every version of every HTML and text page,
rebuilt from the archive alone, and queries over it (`dlweb search`, docs/search.md); and the
CDX API of pywb over the archive's captures (`dlweb cdx`, `http://api.dlweb/cdx`).

The public names are loaded on first use: every `dlweb` command imports this package for its
subcommand's options, and tantivy, lxml and the cluster client are slow to load.
"""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .cdx import CdxQuery, parse_query
    from .domains import host_of, registered_domain
    from .errors import BadCdxQuery, BadQuery, NoIndex, NotIndexed, NoUrlIndex
    from .extract import Extracted, Link, extract
    from .index import FIELDS, Answer, Hit, Page, open_index, search
    from .language import guess_language
    from .rebuild import RebuildSummary, rebuild
    from .simhash import distance, simhash
    from .urlkeys import UrlKeys, surt_key
    from .walk import Version, all_versions

_EXPORTS = {
    "Answer": "index",
    "BadCdxQuery": "errors",
    "BadQuery": "errors",
    "CdxQuery": "cdx",
    "Extracted": "extract",
    "FIELDS": "index",
    "Hit": "index",
    "Link": "extract",
    "NoIndex": "errors",
    "NotIndexed": "errors",
    "NoUrlIndex": "errors",
    "Page": "index",
    "RebuildSummary": "rebuild",
    "UrlKeys": "urlkeys",
    "Version": "walk",
    "all_versions": "walk",
    "distance": "simhash",
    "extract": "extract",
    "guess_language": "language",
    "host_of": "domains",
    "open_index": "index",
    "parse_query": "cdx",
    "rebuild": "rebuild",
    "registered_domain": "domains",
    "search": "index",
    "simhash": "simhash",
    "surt_key": "urlkeys",
}
__all__ = [
    "Answer",
    "BadCdxQuery",
    "BadQuery",
    "CdxQuery",
    "Extracted",
    "FIELDS",
    "Hit",
    "Link",
    "NoIndex",
    "NotIndexed",
    "NoUrlIndex",
    "Page",
    "RebuildSummary",
    "UrlKeys",
    "Version",
    "all_versions",
    "distance",
    "extract",
    "guess_language",
    "host_of",
    "open_index",
    "parse_query",
    "rebuild",
    "registered_domain",
    "search",
    "simhash",
    "surt_key",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
