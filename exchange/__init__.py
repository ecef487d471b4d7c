"""WARC and WACZ in and out of the archive: `dlweb import`, `dlweb export` and `dlweb cdxj`.

The WARC format itself (reading and writing records) is the kernel's, in archive/warc/.
"""

from typing import TYPE_CHECKING

from archive.lazy import lazy_exports

from .commands import register

if TYPE_CHECKING:
    from .importer import Importer, ImportSummary

# The importer needs the cluster client, whose network modules every `dlweb` command would load.
__getattr__ = lazy_exports(__name__, __file__)

__all__ = ["ImportSummary", "Importer", "register"]
