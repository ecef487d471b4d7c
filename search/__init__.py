"""Full-text search over the archive: an index of every version of every HTML and text page,
rebuilt from the archive alone, and queries over it (`dlweb search`, docs/search.md).

The public names are loaded on first use: every `dlweb` command imports this package for its
subcommand's options, and tantivy, lxml and the cluster client are slow to load.
"""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

if TYPE_CHECKING:
    from .domains import host_of, registered_domain
    from .errors import BadQuery, NoIndex, NotIndexed
    from .extract import Extracted, Link, extract
    from .index import FIELDS, Answer, Hit, Page, open_index, search
    from .language import guess_language
    from .rebuild import RebuildSummary, rebuild
    from .simhash import distance, simhash
    from .walk import Version, all_versions

_EXPORTS = {
    "Answer": "index",
    "BadQuery": "errors",
    "Extracted": "extract",
    "FIELDS": "index",
    "Hit": "index",
    "Link": "extract",
    "NoIndex": "errors",
    "NotIndexed": "errors",
    "Page": "index",
    "RebuildSummary": "rebuild",
    "Version": "walk",
    "all_versions": "walk",
    "distance": "simhash",
    "extract": "extract",
    "guess_language": "language",
    "host_of": "domains",
    "open_index": "index",
    "rebuild": "rebuild",
    "registered_domain": "domains",
    "search": "index",
    "simhash": "simhash",
}
__all__ = [
    "Answer",
    "BadQuery",
    "Extracted",
    "FIELDS",
    "Hit",
    "Link",
    "NoIndex",
    "NotIndexed",
    "Page",
    "RebuildSummary",
    "Version",
    "all_versions",
    "distance",
    "extract",
    "guess_language",
    "host_of",
    "open_index",
    "rebuild",
    "registered_domain",
    "search",
    "simhash",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
