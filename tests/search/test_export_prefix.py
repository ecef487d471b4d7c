"""`dlweb export --url-prefix` finds its URLs by the URL-key index of a search index, reading only
their structure files, and writes what a walk over every file writes."""

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from . import pages
from .conftest import Archive, dlweb

MUSEUM_URLS = 5  # its home page, the French page, the notes, the logo and the moved page


def export(archive: Archive, out: Path, prefix: str, index: Path) -> tuple[str, list[tuple]]:
    """What the export printed, and its records but the warcinfo: (type, URL, date)."""
    config = str(archive.cluster.config_path)
    done = dlweb(
        "export",
        "-c",
        config,
        "--out",
        str(out),
        "--url-prefix",
        prefix,
        "--search-index",
        str(index),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out, "rb") as stream:
        records = [
            (
                r.rec_type,
                r.rec_headers.get_header("WARC-Target-URI"),
                r.rec_headers.get_header("WARC-Date"),
            )
            for r in ArchiveIterator(stream)
            if r.rec_type != "warcinfo"
        ]
    return done.stdout, records


def test_a_prefix_export_reads_only_its_urls_files_and_writes_what_a_full_walk_writes(
    archive: Archive, tmp_path: Path
) -> None:
    printed, chosen = export(archive, tmp_path / "a.warc.gz", pages.MUSEUM, archive.index)
    assert f"from {MUSEUM_URLS} structure files (the URL-key index in {archive.index})" in printed
    walked_line, walked = export(archive, tmp_path / "b.warc.gz", pages.MUSEUM, tmp_path / "none")
    assert "URL-key index" not in walked_line and f"from {MUSEUM_URLS} " not in walked_line
    assert chosen == walked
    assert {url for _, url, _ in chosen} == {
        c.url for c in pages.CAPTURES if c.url.startswith(pages.MUSEUM)
    }


def test_a_prefix_that_names_no_whole_host_is_exported_by_reading_every_file(
    archive: Archive, tmp_path: Path
) -> None:
    printed, records = export(archive, tmp_path / "c.warc.gz", "http://museum.dlweb", archive.index)
    assert "URL-key index" not in printed
    assert {url for _, url, _ in records} == {
        c.url for c in pages.CAPTURES if c.url.startswith("http://museum.dlweb")
    }
