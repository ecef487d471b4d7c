"""Variant records: how the URLs of one path with other queries are found for fuzzy lookup.

Structure files are named by a hash of the whole URL key, so nothing lists the URLs that share
a path. When the structure file of a URL with a query is created, a variant record naming it is
added to the structure file of the same URL up to its `?` (docs/formats.md).
"""

from .structure import Capture, RecordKind


def path_of(url: str) -> str | None:
    """The URL up to its `?` (fragment dropped), or None when it has no query."""
    url = url.partition("#")[0]
    path, mark, _ = url.partition("?")
    return path if mark else None


def variant_record(structure: str, time: int) -> Capture:
    """The record that names the structure file `structure`, first captured at `time`, in the
    structure file of its path."""
    return Capture(time, structure, structure, 0, RecordKind.VARIANT)
