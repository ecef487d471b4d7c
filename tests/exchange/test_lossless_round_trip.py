"""Importing dlweb's own export adds nothing: into the archive it came from, not one capture or
record; into an empty archive, captures that export to the same records. A capture is known by
what it is (archive/structure.py, `Capture.identity`), not by the file or the digest algorithm it
came from."""

import asyncio
import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.cluster import ClusterClient
from archive.structure import (
    REPLAYED_KINDS,
    Capture,
    RecordFlag,
    RecordKind,
    StructureFile,
    encode_file,
)
from deploy.testing.cluster import Cluster, clusters_in
from exchange.bundles import slice_field
from exchange.wacz import PAGES_PATH
from tests.archive.warc import sources
from tests.archive.warc.site import TestSite

from .conftest import dlweb
from .test_import import import_ok, post_exchanges_file

EXTRAS_HOST = "http://extras.example"
CUT = f"{EXTRAS_HOST}/cut"
WARC_MEMBER = "archive/data.warc.gz"
# The fields that name other records by id, which may differ from one export to the next.
LINKS = frozenset({"warc-record-id", "warc-concurrent-to"})
INDEX_FIELDS = (
    "warc-type,warc-target-uri,warc-date,warc-record-id,warc-concurrent-to,warc-refers-to-date,"
    "warc-payload-digest,warc-block-digest,length,http:status"
)


def name(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- a capture's identity, in a structure file ------------------------------------------------

T = 1_700_000_000_000_000
URL = "http://example.org/"
IMPORTED, BUNDLED = RecordFlag.IMPORTED, RecordFlag.IMPORTED | RecordFlag.BUNDLED
BUNDLE, DESCRIBED = name("bundle"), name("described")
RESPONSE = Capture(T, name("page"), name("head"), 200, RecordKind.RESPONSE, IMPORTED, 12345)
REQUEST = Capture(
    T, BUNDLE, BUNDLE, 0, RecordKind.REQUEST, BUNDLED, slice_field(80, 300, name("request"))
)
# A metadata record bundled before bundled records had checksums: its slice alone.
LEGACY = Capture(T, BUNDLE, BUNDLE, 0, RecordKind.METADATA, BUNDLED, 380 << 32 | 120)
LARGE = Capture(T, name("large"), name("large"), 0, RecordKind.METADATA, IMPORTED, 777)
SEGMENT = Capture(T, name("chunk"), name("head"), 200, RecordKind.STREAM_SEGMENT, offset=4096)
PENDING = Capture(T, DESCRIBED, DESCRIBED, 200, RecordKind.PENDING, IMPORTED, 99)


def stored(tmp_path: Path, records: list[Capture]) -> Path:
    path = tmp_path / "structure"
    path.write_bytes(encode_file(URL, records))
    return path


def test_one_capture_read_from_two_files_is_stored_once(tmp_path: Path) -> None:
    path = stored(tmp_path, [RESPONSE, REQUEST, LEGACY, LARGE, SEGMENT, PENDING])
    again = [
        # Its payload digest in another algorithm, or none kept.
        replace(RESPONSE, offset=67890),
        # Written as a revisit of an earlier capture of its content, by an export.
        replace(RESPONSE, kind=RecordKind.REVISIT, offset=0),
        # Made by the crawler (not flagged imported), or flagged cut short by another file.
        replace(RESPONSE, flags=0),
        replace(RESPONSE, flags=IMPORTED | RecordFlag.TRUNCATED),
        # The same request in another bundle, at another place in it.
        replace(
            REQUEST,
            content=name("other"),
            header=name("other"),
            offset=slice_field(0, 300, name("request")),
        ),
        # The legacy record, imported again with its checksum.
        replace(LEGACY, content=name("other"), offset=slice_field(7, 120, name("meta"))),
        replace(LARGE, offset=0),
    ]
    with StructureFile(path) as structure:
        assert structure.plan_append(again) == ([], True)
    with StructureFile(stored(tmp_path, [])) as empty:
        assert empty.plan_append([RESPONSE, *again[:4]]) == ([RESPONSE], True)


def test_other_captures_at_the_same_time_are_all_stored(tmp_path: Path) -> None:
    path = stored(tmp_path, [RESPONSE, REQUEST, SEGMENT, PENDING])
    others = [
        replace(RESPONSE, status=404),
        replace(RESPONSE, header=name("other head")),
        replace(RESPONSE, content=name("other page")),
        replace(RESPONSE, kind=RecordKind.NOT_MODIFIED),
        # Another request of the same length, and a metadata record of the same bytes.
        replace(REQUEST, offset=slice_field(80, 300, name("other request"))),
        replace(REQUEST, kind=RecordKind.METADATA),
        # A stream's segment is a point in its chunk: another offset is another point.
        replace(SEGMENT, offset=8192),
        # The copy of a registry entry that marks it resolved.
        replace(PENDING, flags=RecordFlag.RESOLVED),
    ]
    with StructureFile(path) as structure:
        assert structure.plan_append(others) == (others, True)


# -- an archive exported and imported again ---------------------------------------------------


@dataclass(frozen=True)
class Archive:
    cluster: Cluster
    structures: dict[str, list[Capture]]
    home: str


def extras_file(path: Path) -> None:
    """Records the other sources lack: two revisits whose originals are in no file (one naming
    its original's URL and date, one only its payload digest), a response cut short, and a
    metadata record too large for a bundle."""
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for number, refers in ((1, True), (2, False)):
            revisit = writer.create_revisit_record(
                f"{EXTRAS_HOST}/pending-{number}",
                digest="sha1:" + base64.b32encode(hashlib.sha1(bytes([number])).digest()).decode(),
                refers_to_uri=f"{EXTRAS_HOST}/gone",
                refers_to_date="2023-06-01T00:00:00Z",
                http_headers=http,
                warc_headers_dict={"WARC-Date": f"2024-05-01T00:00:0{number}Z"},
            )
            if not refers:
                revisit.rec_headers.remove_header("WARC-Refers-To-Target-URI")
                revisit.rec_headers.remove_header("WARC-Refers-To-Date")
            writer.write_record(revisit)
        cut = b"the first bytes of a longer answer"
        response = writer.create_warc_record(
            CUT,
            "response",
            payload=io.BytesIO(cut),
            length=len(cut),
            http_headers=http,
            warc_headers_dict={"WARC-Date": "2024-05-01T00:00:03Z", "WARC-Truncated": "length"},
        )
        writer.write_record(response)
        outlinks = "".join(f"outlink: {EXTRAS_HOST}/{n}\r\n" for n in range(3000)).encode()
        metadata = writer.create_warc_record(
            CUT,
            "metadata",
            payload=io.BytesIO(outlinks),
            length=len(outlinks),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Date": "2024-05-01T00:00:03Z"},
        )
        writer.write_record(metadata)


def known_to_master(cluster: Cluster) -> None:
    """Wait until the master lists every structure file the node holds: it learns of them from
    the node's inventory, a moment after they are written."""
    (node,) = cluster.nodes.values()
    with urllib.request.urlopen(f"{node.url}/status") as answer:
        held = json.load(answer)["files"]["structure"]
    cluster.wait_for(lambda s: s["files"]["structure"] == held, f"the master to list {held} files")


async def structures_of(cluster: Cluster) -> dict[str, list[Capture]]:
    """Every record of every structure file, by URL."""
    known_to_master(cluster)
    found = {}
    async with ClusterClient(cluster.config) as client:
        async for file, holders in client.structure_files():
            url, records = await client.read_structure(file, holders=holders)
            found[url] = records
    return found


def next_second() -> None:
    """Wait for the next second: wget dates its records to the second."""
    time.sleep(1.01 - time.time() % 1)


@pytest.fixture(scope="module")
def archive(site: TestSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archive]:
    """A cluster holding two wget crawls of the test site (the second with revisits of the
    first), a warcio file of every record type, POST exchanges and the extras, none of whose
    records is skipped."""
    work = tmp_path_factory.mktemp("sources")
    with clusters_in(tmp_path_factory.mktemp("archive")) as make:
        cluster = make(nodes=1, replicas=1)
        first = sources.wget_crawl(site.base, work, "first")
        next_second()
        second = sources.wget_crawl(site.base, work, "second", dedup_cdx=first.cdx)
        warcio = sources.warcio_file(work)
        post_exchanges_file(work / "post.warc.gz")
        extras_file(work / "extras.warc.gz")
        files = [first.warc, second.warc, warcio.path, work / "post.warc.gz"]
        summary = import_ok(cluster.config_path, *files, work / "extras.warc.gz")
        assert "2 revisits pending" in summary and "0 pending revisits resolved" in summary
        assert "skipped" not in summary
        yield Archive(cluster, asyncio.run(structures_of(cluster)), site.base + "/")


def export_ok(cluster: Cluster, out: Path) -> None:
    known_to_master(cluster)
    done = dlweb("export", "-c", str(cluster.config_path), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr


def imported_again(config: Path, path: Path) -> str:
    """Import a file, checking that it added no capture."""
    summary = import_ok(config, path)
    match = re.search(r"read 1 file: ([\d,]+) records imported.*\n  ([\d,]+) new captures", summary)
    assert match is not None, summary
    assert int(match[1].replace(",", "")) > 0 and match[2] == "0", summary
    assert "skipped" not in summary
    return summary


def warc_records(data: bytes) -> list[tuple[str, tuple[tuple[str, str], ...], bytes]]:
    """Each record of a WARC file but its warcinfo: type, fields but those naming record ids,
    and block."""
    records = []
    for record in ArchiveIterator(io.BytesIO(data), no_record_parse=True):
        if record.rec_type != "warcinfo":
            headers = record.rec_headers.headers
            fields = tuple((k, v) for k, v in headers if k.lower() not in LINKS)
            records.append((record.rec_type, fields, record.raw_stream.read()))
    return records


def warcio_index(path: Path) -> list[str]:
    """`warcio index` of a WARC file, as a user would compare two: each record's type, URI, date,
    id, links, digests, length and HTTP status, but the export's own warcinfo."""
    done = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "index", "-f", INDEX_FIELDS, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if '"warcinfo"' not in line]


def packaged(path: Path) -> tuple[bytes, bytes]:
    """The WARC file and the pages of a WACZ package."""
    with zipfile.ZipFile(path) as package:
        return package.read(WARC_MEMBER), package.read(PAGES_PATH)


def listed_once(config: Path, url: str, expected: list[Capture]) -> None:
    """`dlweb captures` lists each capture of a URL once."""
    done = dlweb("captures", "-c", str(config), url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(set(lines)) == len(expected) >= 2, done.stdout


async def test_a_warc_export_imported_again_adds_nothing(
    archive: Archive, cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    config = archive.cluster.config_path
    out = tmp_path / "all.warc.gz"
    export_ok(archive.cluster, out)
    written = warc_records(out.read_bytes())
    kinds = {"response", "revisit", "resource", "request", "metadata"}
    assert {kind for kind, _, _ in written} == kinds
    (cut,) = [
        dict(f) for k, f, _ in written if (k, dict(f)["WARC-Target-URI"]) == ("response", CUT)
    ]
    assert cut["WARC-Truncated"] == "unspecified"

    summary = imported_again(config, out)
    # The pending revisits are kept pending once.
    assert "2 revisits pending, their originals not archived yet (0 kept" in summary
    assert await structures_of(archive.cluster) == archive.structures
    home = [c for c in archive.structures[archive.home] if c.kind in REPLAYED_KINDS]
    listed_once(config, archive.home, home)
    again = tmp_path / "again.warc.gz"
    export_ok(archive.cluster, again)
    assert warc_records(again.read_bytes()) == written

    # Into an empty archive, then out again: the same records.
    empty = cluster_factory(nodes=1, replicas=1)
    import_ok(empty.config_path, out)
    copy = tmp_path / "copy.warc.gz"
    export_ok(empty, copy)
    assert warc_records(copy.read_bytes()) == written
    indexed = warcio_index(out)
    assert len(indexed) == len(written) and warcio_index(copy) == indexed
    imported_again(empty.config_path, copy)


async def test_a_wacz_export_imported_again_adds_nothing(
    archive: Archive, cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    config = archive.cluster.config_path
    out = tmp_path / "all.wacz"
    export_ok(archive.cluster, out)
    warc, pages = packaged(out)

    imported_again(config, out)
    assert await structures_of(archive.cluster) == archive.structures
    again = tmp_path / "again.wacz"
    export_ok(archive.cluster, again)
    assert warc_records(packaged(again)[0]) == warc_records(warc)

    empty = cluster_factory(nodes=1, replicas=1)
    import_ok(empty.config_path, out)
    copy = tmp_path / "copy.wacz"
    export_ok(empty, copy)
    copied_warc, copied_pages = packaged(copy)
    assert warc_records(copied_warc) == warc_records(warc)
    assert copied_pages == pages
    imported_again(empty.config_path, copy)
