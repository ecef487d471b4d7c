"""WARC and ARC files: importing them into the archive, exporting the archive as WARC."""

from ..lazy import lazy_exports
from .commands import register
from .reader import Ignored, Problem, SourceRecord, read_archive

# The importer needs the cluster client, whose network modules every `dlweb` command would load.
__getattr__ = lazy_exports(__name__, {"Importer": "importer", "ImportSummary": "importer"})

__all__ = [
    "Ignored",
    "ImportSummary",
    "Importer",
    "Problem",
    "SourceRecord",
    "read_archive",
    "register",
]
