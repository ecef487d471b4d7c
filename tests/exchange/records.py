"""The records a file holds as dlweb reads them, and the bundles an import makes of them."""

from pathlib import Path

from archive.warc.reader import SourceRecord, read_archive
from exchange.bundles import Bundle, Bundler


def records_of(path: Path, spool: Path) -> list[SourceRecord]:
    return [r for r in read_archive(path, 1 << 30, spool) if isinstance(r, SourceRecord)]


def requests_in(path: Path, spool: Path) -> list[SourceRecord]:
    return [r for r in records_of(path, spool) if r.type == "request"]


def bundle_all(*files: list[SourceRecord]) -> list[Bundle]:
    """The bundles of the side records of files read one after the other in one import."""
    bundler, bundles = Bundler(), []
    for records in files:
        for record in records:
            assert bundler.takes(record)
            bundles.append(bundler.add(record))
        bundles.append(bundler.close())
    return [bundle for bundle in bundles if bundle is not None]
