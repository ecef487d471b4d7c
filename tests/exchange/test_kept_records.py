"""The WARC records that are not captures (a warcinfo, a crawler's log under metadata:// or urn:)
are kept by an import, listed by `dlweb captures` at their URL of http://records.dlweb/, never
replayed, and written back by an export as they were read; importing the export adds nothing."""

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.warc.reader import kept_url
from deploy.testing.cluster import Cluster
from exchange.warcinfo import EXPORT_INFO

from .conftest import dlweb
from .test_import import import_ok
from .test_lossless_round_trip import export_ok, known_to_master

PAGE = "http://kept.example/"
LOG_URI = "metadata://kept.example/crawler/crawl.log"
URN = "urn:X-crawler:log"
CRAWL_FILE = "crawl-00001.warc.gz"
# Larger than a bundled record: stored as a content of its own.
LARGE_LOG = b"".join(b"%06d GET http://kept.example/ 200\n" % n for n in range(3000))

Seen = tuple[str, str | None, str | None, bytes]


def crawl_file(path: Path) -> None:
    """A crawl's WARC file: its warcinfo, a response, the crawler's log as a metadata:// record,
    a larger log as a urn: resource concurrent to it, and a conversion of the page; the records
    that are not captures name the warcinfo, as wget's do."""
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        info = {"software": "a crawler/1.0", "format": "WARC File Format 1.1"}
        warcinfo = writer.create_warcinfo_record(CRAWL_FILE, info)
        writer.write_record(warcinfo)
        links = {"WARC-Warcinfo-ID": warcinfo.rec_headers.get_header("WARC-Record-ID")}
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                PAGE, "response", payload=io.BytesIO(b"kept page"), http_headers=http
            )
        )
        for uri, rec_type, block in (
            (LOG_URI, "metadata", b"crawled 1 URL\n"),
            (URN, "resource", LARGE_LOG),
            (PAGE, "conversion", b"kept page, as text\n"),
        ):
            record = writer.create_warc_record(
                uri,
                rec_type,
                payload=io.BytesIO(block),
                warc_content_type="text/plain",
                warc_headers_dict=dict(links),
            )
            writer.write_record(record)
            if uri == LOG_URI:
                links["WARC-Concurrent-To"] = record.rec_headers.get_header("WARC-Record-ID")


def records_of(path: Path) -> list[Seen]:
    """Each record of a WARC file but the warcinfo of a dlweb export: its type, target URI,
    WARC-Filename and block."""
    seen = []
    with path.open("rb") as fh:
        for record in ArchiveIterator(fh, no_record_parse=True):
            block = record.raw_stream.read()
            if record.rec_type == "warcinfo" and block == EXPORT_INFO:
                continue
            headers = record.rec_headers
            seen.append(
                (
                    record.rec_type,
                    headers.get_header("WARC-Target-URI"),
                    headers.get_header("WARC-Filename"),
                    block,
                )
            )
    return seen


def links_of(path: Path) -> dict[str | None, tuple[str, str | None, str | None]]:
    """The records of a WARC file that are not captures, by target URI (None: the warcinfo of
    the crawl), each with its id and the ids its WARC-Concurrent-To and -Warcinfo-ID name."""
    links = {}
    with path.open("rb") as fh:
        for record in ArchiveIterator(fh, no_record_parse=True):
            headers = record.rec_headers
            if record.rec_type in ("warcinfo", "metadata", "resource", "conversion"):
                if record.rec_type == "warcinfo" and record.raw_stream.read() == EXPORT_INFO:
                    continue
                links[headers.get_header("WARC-Target-URI")] = (
                    headers.get_header("WARC-Record-ID"),
                    headers.get_header("WARC-Concurrent-To"),
                    headers.get_header("WARC-Warcinfo-ID"),
                )
    return links


def listed(config: Path, url: str) -> list[dict[str, object]]:
    done = dlweb("captures", "-c", str(config), "--json", url)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def test_records_that_are_not_captures_survive_the_round_trip(
    cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    config = cluster.config_path
    source = tmp_path / CRAWL_FILE
    crawl_file(source)
    summary = import_ok(config, source)
    assert "not imported" not in summary and "skipped" not in summary, summary
    assert "conversion 1, metadata 1, resource 1, response 1, warcinfo 1" in summary, summary

    known_to_master(cluster)
    warcinfo = listed(config, kept_url("warcinfo"))
    assert [(r["kind"], r["warc_type"], r["names"]) for r in warcinfo] == [
        ("metadata", "warcinfo", CRAWL_FILE)
    ]
    assert [r["names"] for r in listed(config, kept_url("metadata"))] == [LOG_URI]
    assert [r["names"] for r in listed(config, kept_url("resource"))] == [URN]
    assert [r["names"] for r in listed(config, kept_url("conversion"))] == [PAGE]
    # Never replayed: no capture stands at their URL.
    assert dlweb("get", "-c", str(config), kept_url("metadata")).returncode != 0

    out = tmp_path / "export.warc.gz"
    export_ok(cluster, out)
    written = records_of(out)
    assert written[0][0] == "warcinfo", "the warcinfo kept comes before the records it describes"
    assert sorted(written) == sorted(records_of(source))
    # Each keeps its id, so the links between them hold: the log's concurrent record, the
    # warcinfo of each.
    links = links_of(out)
    assert links == links_of(source)
    warcinfo_id, log_id = links[None][0], links[LOG_URI][0]
    assert links[URN][1:] == (log_id, warcinfo_id)
    assert {links[uri][2] for uri in (LOG_URI, URN, PAGE)} == {warcinfo_id}

    summary = import_ok(config, out)
    match = re.search(r"([\d,]+) records imported.*\n  ([\d,]+) new captures", summary)
    assert match is not None and match[1] == "5" and match[2] == "0", summary
    assert "the warcinfo of a dlweb export: 1" in summary
    known_to_master(cluster)
    assert len(listed(config, kept_url("warcinfo"))) == 1
    again = tmp_path / "again.warc.gz"
    export_ok(cluster, again)
    assert records_of(again) == written
