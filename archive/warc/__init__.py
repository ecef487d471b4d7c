"""WARC and ARC files: importing them into the archive, exporting the archive as WARC."""

from .commands import register
from .importer import Importer, ImportSummary
from .reader import Ignored, Problem, SourceRecord, read_archive

__all__ = [
    "Ignored",
    "ImportSummary",
    "Importer",
    "Problem",
    "SourceRecord",
    "read_archive",
    "register",
]
