"""Finding each site's latest signature file in the folder of earlier crawls."""

import os
from pathlib import Path

from crawler.pool import latest_signatures


def crawl_files(folder: Path, host: str, stamp: str, pid: int) -> Path:
    """The three files a crawl of a site leaves; its signature file."""
    for suffix in (".chunks", ".graph"):
        (folder / f"{host}-{stamp}-{pid}{suffix}").write_bytes(b"")
    signatures = folder / f"{host}-{stamp}-{pid}.signatures"
    signatures.write_bytes(b"")
    return signatures


def test_each_site_gets_its_own_latest_signature_file(tmp_path: Path) -> None:
    crawl_files(tmp_path, "site-1.example", "20260101000000", 7)
    newest = crawl_files(tmp_path, "site-1.example", "20260301000000", 8)
    # A host whose name starts with the other's, crawled later: never taken for it.
    other = crawl_files(tmp_path, "site-1.example-2.example", "20260401000000", 9)
    (tmp_path / "notes.txt").write_text("not a crawl's")
    found = latest_signatures(
        tmp_path,
        ["http://site-1.example/", "http://site-1.example-2.example/a", "http://never.example/"],
    )
    assert found == {
        "http://site-1.example/": newest,
        "http://site-1.example-2.example/a": other,
    }


def test_two_crawls_in_the_same_second_are_told_apart_by_their_time(tmp_path: Path) -> None:
    first = crawl_files(tmp_path, "a.example_8080", "20260101000000", 900)
    second = crawl_files(tmp_path, "a.example_8080", "20260101000000", 100)
    os.utime(first, (1_000, 1_000))
    os.utime(second, (2_000, 2_000))
    assert latest_signatures(tmp_path, ["http://a.example:8080/"]) == {
        "http://a.example:8080/": second
    }
