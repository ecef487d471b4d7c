"""WARC and ARC files as a format: reading their records (and getting past damaged ones), and
writing WARC records. Importing them into the archive and exporting it is exchange/'s work."""

from .reader import Ignored, Problem, SourceRecord, read_archive

__all__ = ["Ignored", "Problem", "SourceRecord", "read_archive"]
