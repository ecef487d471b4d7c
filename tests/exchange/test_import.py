"""`dlweb import` of WARC and ARC files written by wget, warcio and by hand, into a real cluster."""

import fcntl
import hashlib
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive.cluster import ClusterClient
from archive.errors import NotFound
from archive.requestkey import lookup_url
from archive.structure import REPLAYED_KINDS, Capture, RecordFlag, RecordKind
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from archive.warc.reader import split_kept
from archive.warc.spool import SPOOL_IN_MEMORY
from exchange.batches import BATCH_RECORDS
from exchange.bundles import bundled_body
from tests.archive.warc import sources
from tests.archive.warc.site import PAGES, TestSite

from .conftest import COMMAND_TIMEOUT, dlweb
from .records import bundle_all, requests_in


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def capture_at(client: ClusterClient, url: str, date: str) -> Capture:
    return (await client.closest(url, parse_time(date), "exact")).capture


def import_ok(config: Path, *files: Path) -> str:
    done = dlweb("import", "-c", str(config), *map(str, files))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


async def test_a_wget_crawl_is_imported_payloads_as_served(
    cluster_factory, site: TestSite, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    crawl = sources.wget_crawl(site.base, tmp_path, "first")
    summary = import_ok(cluster.config_path, crawl.warc)
    # wget's warcinfo and its own log records are kept (tests/exchange/test_kept_records.py).
    assert "warcinfo 1)" in summary and "not imported" not in summary
    async with ClusterClient(cluster.config) as client:
        for path, page in PAGES.items():
            captures = await client.captures(site.base + path)
            assert len(captures) == 1, path
            capture = captures[0]
            assert capture.kind is RecordKind.RESPONSE and capture.flags & RecordFlag.IMPORTED
            assert capture.status == page.status, path
            # The payload as sent: chunking removed, the site's own gzip kept.
            assert await client.get_content(capture.content) == page.body, path
            header = await client.get_header_block(capture.header)
            assert header.startswith(f"HTTP/1.1 {page.status} ".encode()), path
        moved = (await client.captures(site.base + "/old.html"))[0]
        assert b"Location: /new.html\r\n" in await client.get_header_block(moved.header)
        chunked = (await client.captures(site.base + "/chunked.html"))[0]
        assert b"Transfer-Encoding: chunked" in await client.get_header_block(chunked.header)
        copy_a = (await client.captures(site.base + "/copy-a.html"))[0]
        copy_b = (await client.captures(site.base + "/copy-b.html"))[0]
        assert copy_a.content == copy_b.content
        # The request record is kept beside the response in the URL's structure file.
        _, records = await client.read_structure(structure_name(site.base + "/"))
        assert sorted(r.kind for r in records) == [RecordKind.RESPONSE, RecordKind.REQUEST]
    # The master learns of the stored files from the node's inventory, a moment later.
    match = re.search(r"([\d,]+) new contents", summary)
    assert match is not None, summary
    stored = int(match[1].replace(",", ""))
    files_before = cluster.wait_for(
        lambda status: status["files"]["content"] == stored, f"the master to know {stored} contents"
    )["files"]

    again = import_ok(cluster.config_path, crawl.warc)
    assert "0 new captures" in again and "0 new contents" in again
    assert cluster.status()["files"] == files_before

    # wget's own deduplication against the first crawl writes revisit records.
    second = sources.wget_crawl(site.base, tmp_path, "second", dedup_cdx=crawl.cdx)
    import_ok(cluster.config_path, second.warc)
    async with ClusterClient(cluster.config) as client:
        home = await client.captures(site.base + "/")
        assert [c.kind for c in home] == [RecordKind.RESPONSE, RecordKind.REVISIT]
        assert home[0].content == home[1].content
        assert await client.get_content(home[1].content) == PAGES["/"].body


async def test_every_record_type_and_revisit_of_a_warcio_file(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    summary = import_ok(cluster.config_path, source.path)
    assert "warcinfo 1)" in summary
    async with ClusterClient(cluster.config) as client:
        for entry in source.entries:
            if entry.type in ("response", "revisit"):
                capture = await capture_at(client, entry.url, entry.date)
                assert capture.status == entry.status, entry.url
                assert await client.get_content(capture.content) == entry.payload, entry.url
                assert await client.get_header_block(capture.header) == entry.header_block
                kind = RecordKind.RESPONSE if entry.type == "response" else RecordKind.REVISIT
                assert capture.kind is kind, entry.url
        a = source.find("response", f"{sources.WARCIO_HOST}/a")
        for revisit in [e for e in source.entries if e.type == "revisit"]:
            capture = await capture_at(client, revisit.url, revisit.date)
            assert capture.content == sha(a.payload)

        notes = source.find("resource", f"{sources.WARCIO_HOST}/notes.txt")
        capture = await capture_at(client, notes.url, notes.date)
        assert capture.flags & RecordFlag.SYNTHETIC_HEADERS and capture.status == 200
        assert await client.get_content(capture.content) == notes.payload
        assert b"Content-Type: text/plain" in await client.get_header_block(capture.header)

        meta = source.find("metadata", f"{sources.WARCIO_HOST}/a")
        _, records = await client.read_structure(structure_name(meta.url))
        kinds = {c.kind: c for c in records if c.kind not in REPLAYED_KINDS}
        assert set(kinds) == {RecordKind.REQUEST, RecordKind.METADATA}
        assert all(c.kind in REPLAYED_KINDS for c in await client.captures(meta.url))
        stored = kinds[RecordKind.METADATA]
        assert stored.flags & RecordFlag.BUNDLED
        fields, block = split_kept(bundled_body(stored, await client.get_content(stored.content)))
        assert block == meta.payload
        assert ("Content-Type", "application/warc-fields") in fields
        stored = kinds[RecordKind.REQUEST]
        fields, block = split_kept(bundled_body(stored, await client.get_content(stored.content)))
        assert block.startswith(b"GET /a HTTP/1.1\r\n")
        # Lookups never meet the records kept for export.
        assert (await client.closest(meta.url, parse_time(meta.date))).capture.kind in (
            RecordKind.RESPONSE,
            RecordKind.REVISIT,
        )


async def test_request_records_go_in_bundles_that_the_same_records_always_make(
    cluster_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    # 1,200 exchanges: the bundles span the import's batches of 1,000 records.
    first = sources.exchanges_file(tmp_path, "first.warc.gz", 0, 1_200)
    summary = import_ok(cluster.config_path, first.path)
    first_bundles = bundle_all(requests_in(first.path, tmp_path))
    responses = [e for e in first.entries if e.type == "response"]
    contents = {sha(e.payload) for e in responses} | {sha(e.header_block) for e in responses}
    assert f"{len(contents) + len(first_bundles):,} new contents" in summary
    again = import_ok(cluster.config_path, first.path)
    assert "0 new captures" in again and "0 new contents" in again

    # The same records in a file joined from two: only the bundle across the join is new, and
    # its records are known in the bundles they were stored in.
    second = sources.exchanges_file(tmp_path, "second.warc.gz", 1_200, 300)
    import_ok(cluster.config_path, second.path)
    joined = tmp_path / "joined.warc.gz"
    joined.write_bytes(first.path.read_bytes() + second.path.read_bytes())
    apart = {b.name for b in first_bundles + bundle_all(requests_in(second.path, tmp_path))}
    across = [b for b in bundle_all(requests_in(joined, tmp_path)) if b.name not in apart]
    assert len(across) == 1 and sum(len(b.records) for b in across) < 1_500 // 2
    summary = import_ok(cluster.config_path, joined)
    assert "0 new captures" in summary and "1 new contents" in summary

    async with ClusterClient(cluster.config) as client:
        for entry in [e for e in first.entries + second.entries if e.type == "request"][::50]:
            _, records = await client.read_structure(structure_name(entry.url))
            request = next(r for r in records if r.kind is RecordKind.REQUEST)
            stored = bundled_body(request, await client.get_content(request.content))
            assert split_kept(stored)[1] == entry.header_block


async def test_revisits_of_originals_already_in_the_archive(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    first = sources.warcio_file(tmp_path)
    later = sources.later_revisit_file(tmp_path, first)

    import_ok(cluster.config_path, first.path)
    summary = import_ok(cluster.config_path, later.path)
    assert "revisits pending" not in summary
    async with ClusterClient(cluster.config) as client:
        for entry in later.entries:
            capture = await capture_at(client, entry.url, entry.date)
            assert capture.kind is RecordKind.REVISIT
            assert await client.get_content(capture.content) == entry.payload


@pytest.mark.parametrize("gzipped", [True, False], ids=["arc.gz", "arc"])
async def test_arc_files(cluster_factory, tmp_path, gzipped: bool):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.arc_file(tmp_path, gzipped)
    import_ok(cluster.config_path, source.path)
    async with ClusterClient(cluster.config) as client:
        for entry in source.entries:
            capture = await capture_at(client, entry.url, entry.date)
            assert await client.get_content(capture.content) == entry.payload
            assert await client.get_header_block(capture.header) == entry.header_block


DAMAGES = {
    "truncated gzip member": (sources.truncated_gzip_member, "damaged gzip member", "gzip"),
    "truncated at the end": (sources.truncated_at_end, "truncated record", "truncated"),
    "malformed header": (
        sources.malformed_header,
        "Content-Length 'abc' is not a number",
        "malformed header",
    ),
    "digest mismatch": (sources.digest_mismatch, "Digest", "digest mismatch"),
    "too large": (
        # Larger than what its gzip member may inflate to once it is refused.
        lambda d: sources.large_record(d, 1024 * 1024),
        "larger than the limit",
        "too large: 1",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
async def test_damaged_files_keep_their_good_records(cluster_factory, tmp_path, damage: str):
    make, reason, kind = DAMAGES[damage]
    cluster = cluster_factory(nodes=1, replicas=1)
    damaged = make(tmp_path)
    done = dlweb(
        "import", "-c", str(cluster.config_path), "--max-record-size", "32K", str(damaged.path)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipped:")]
    assert len(skipped) == 1, done.stderr
    assert f"{damaged.path}: offset {damaged.bad_offset}: " in skipped[0]
    assert reason in skipped[0]
    assert "1 records skipped with problems" in done.stdout and kind in done.stdout
    async with ClusterClient(cluster.config) as client:
        for url in damaged.good_urls:
            assert len(await client.captures(url)) == 1, url
        with pytest.raises(NotFound):
            await client.captures(damaged.bad_url)
    for node in cluster.nodes.values():
        assert list((node.root / "content" / ".tmp").iterdir()) == []


def test_bad_command_lines_get_clear_messages(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    config = str(cluster.config_path)
    missing = dlweb("import", "-c", config, str(tmp_path / "nowhere.warc.gz"))
    assert missing.returncode == 2 and "nowhere.warc.gz: no such file" in missing.stderr
    size = dlweb("import", "-c", config, "--max-record-size", "lots", str(tmp_path))
    assert size.returncode == 2 and "--max-record-size" in size.stderr
    text = tmp_path / "notes.txt"
    text.write_text("these are not the records you are looking for\n" * 10)
    garbage = dlweb("import", "-c", config, str(text))
    assert garbage.returncode == 1 and "Traceback" not in garbage.stderr
    assert f"{text}: offset 0: " in garbage.stderr


async def test_a_record_larger_than_memory_spool_goes_through_a_file(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    size = SPOOL_IN_MEMORY + 1024 * 1024
    big = sources.large_record(tmp_path, size)
    import_ok(cluster.config_path, big.path)
    async with ClusterClient(cluster.config) as client:
        (capture,) = await client.captures(big.bad_url)
        data = await client.get_content(capture.content)
    assert len(data) == size and data.startswith(b"0123456789abcdef")


def _import_on_a_terminal(config: Path, source: Path) -> tuple[int, str]:
    """`dlweb import` with its stderr on a pseudo-terminal, as a user at a shell runs it: the
    exit status and what the terminal received."""
    controller, terminal = pty.openpty()
    # A terminal of 30 rows and 120 columns (a new pseudo-terminal has none, so no room for a bar).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "dlweb", "import", "-c", str(config), str(source)],
        stdout=subprocess.DEVNULL,
        stderr=terminal,
    )
    os.close(terminal)
    received = bytearray()
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:  # the terminal is gone once the command exited: EIO
            break
        if not data:
            break
        received += data
    os.close(controller)
    return process.wait(timeout=COMMAND_TIMEOUT), received.decode("utf-8", "replace")


def test_a_progress_bar_with_records_and_bytes_per_second_on_a_terminal_only(
    cluster_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    status, shown = _import_on_a_terminal(cluster.config_path, source.path)
    assert status == 0, shown
    assert "importing" in shown and "\r" in shown
    assert re.search(r"[\d.]+ ?[kMG]?B/s", shown), shown
    assert re.search(r"\d+ records, [\d,]+ records/s", shown), shown

    piped = dlweb("import", "-c", str(cluster.config_path), str(source.path))
    assert piped.returncode == 0
    assert "importing" not in piped.stderr and "\r" not in piped.stderr


POST_HOST = "http://post.example"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request and its response as written: where the response is found is `lookup`."""

    method: str
    url: str
    date: str
    content_type: str | None
    body: bytes
    answer: bytes

    @property
    def lookup(self) -> str:
        return lookup_url(self.method, self.url, self.content_type, self.body)


def write_exchange(
    writer: WARCWriter, exchange: Exchange, request_first: bool, linked: bool = True
) -> None:
    """The response and request records of an exchange, in either order; with `linked`, the
    second names the first in WARC-Concurrent-To."""
    parts = urlsplit(exchange.url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    headers = [("Host", parts.netloc)]
    if exchange.content_type is not None:
        headers.append(("Content-Type", exchange.content_type))
    if exchange.body:
        headers.append(("Content-Length", str(len(exchange.body))))
    request = writer.create_warc_record(
        exchange.url,
        "request",
        payload=io.BytesIO(exchange.body),
        length=len(exchange.body),
        http_headers=StatusAndHeaders(f"{exchange.method} {target} HTTP/1.1", headers),
        warc_headers_dict={"WARC-Date": exchange.date},
    )
    answer = exchange.answer
    response = writer.create_warc_record(
        exchange.url,
        "response",
        payload=io.BytesIO(answer),
        length=len(answer),
        http_headers=StatusAndHeaders(
            "200 OK",
            [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))],
            protocol="HTTP/1.1",
        ),
        warc_headers_dict={"WARC-Date": exchange.date},
    )
    first, second = (request, response) if request_first else (response, request)
    if linked:
        record_id = first.rec_headers.get_header("WARC-Record-ID")
        second.rec_headers.add_header("WARC-Concurrent-To", record_id)
    writer.write_record(first)
    writer.write_record(second)


async def kinds_of(client: ClusterClient, url: str) -> list[RecordKind]:
    """The kinds of the records kept under a URL itself (not the variants of its query)."""
    _, records = await client.read_structure(structure_name(url))
    return [record.kind for record in records if record.kind is not RecordKind.VARIANT]


API = f"{POST_HOST}/api"
CATS = Exchange("POST", API, "2024-04-01T00:00:00Z", JSON, b'{"q": "cats"}', b'["tabby"]')
DOGS = Exchange("POST", API, "2024-04-01T00:00:01Z", JSON, b'{"q": "dogs"}', b'["collie"]')
FORM_POST = Exchange(
    "POST", f"{POST_HOST}/form?x=1", "2024-04-01T00:00:02Z", FORM, b"a=1&b=two", b'"sent"'
)
PUT = Exchange("PUT", f"{POST_HOST}/item/7", "2024-04-01T00:00:03Z", None, b"\x00\x01", b'"put"')
GET = Exchange("GET", API, "2024-04-01T00:00:04Z", None, b"", b'["all"]')


def post_exchanges_file(path: Path) -> list[Exchange]:
    """POST and PUT exchanges with the request before the response (as wget writes them) and
    after it (as warcio and pywb do), linked by WARC-Concurrent-To or only next to each other,
    and a GET of the same URL as the POSTs."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        write_exchange(writer, CATS, request_first=True)
        write_exchange(writer, DOGS, request_first=False)
        write_exchange(writer, FORM_POST, request_first=False, linked=False)
        write_exchange(writer, PUT, request_first=True, linked=False)
        write_exchange(writer, GET, request_first=False)
    return [CATS, DOGS, FORM_POST, PUT, GET]


async def test_a_post_response_is_imported_under_the_lookup_url_of_its_request(
    cluster_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    path = tmp_path / "post.warc.gz"
    exchanges = post_exchanges_file(path)
    import_ok(cluster.config_path, path)
    assert CATS.lookup != DOGS.lookup
    assert GET.lookup == API
    async with ClusterClient(cluster.config) as client:
        for exchange in exchanges:
            (capture,) = await client.captures(exchange.lookup)
            assert capture.time == parse_time(exchange.date), exchange
            assert await client.get_content(capture.content) == exchange.answer, exchange
            found = await client.closest(exchange.lookup, parse_time(exchange.date))
            assert found.capture == capture
        # The request records stay under their own URI, beside the GET's response.
        assert (
            sorted(await kinds_of(client, API)) == [RecordKind.RESPONSE] + [RecordKind.REQUEST] * 3
        )
    again = import_ok(cluster.config_path, path)
    assert "0 new captures" in again and "0 new contents" in again


async def test_a_post_exchange_split_between_two_batches_keeps_its_lookup_url(
    cluster_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    path = tmp_path / "straddle.warc.gz"
    written = 0

    def fill(writer: WARCWriter, up_to: int) -> None:
        """GET exchanges (and a metadata record when the count is odd) up to record `up_to`."""
        nonlocal written
        if (up_to - written) % 2:
            url = f"{POST_HOST}/note/{written}"
            notes = writer.create_warc_record(
                url,
                "metadata",
                payload=io.BytesIO(b"note: filler\r\n"),
                length=len(b"note: filler\r\n"),
                warc_content_type="application/warc-fields",
                warc_headers_dict={"WARC-Date": "2024-03-01T00:00:00Z"},
            )
            writer.write_record(notes)
            written += 1
        while written < up_to:
            url = f"{POST_HOST}/page/{written}"
            page = Exchange("GET", url, "2024-03-01T00:00:00Z", None, b"", url.encode())
            write_exchange(writer, page, request_first=written // 2 % 2 == 0)
            written += 2

    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        # The response ends the first batch, and its request starts the second.
        fill(writer, BATCH_RECORDS - 1)
        write_exchange(writer, CATS, request_first=False)
        written += 2
        # The request ends the second batch, and its response starts the third.
        fill(writer, 2 * BATCH_RECORDS - 1)
        write_exchange(writer, DOGS, request_first=True)
    import_ok(cluster.config_path, path)
    async with ClusterClient(cluster.config) as client:
        for exchange in (CATS, DOGS):
            print(exchange.lookup, await client.captures(exchange.lookup))
            (capture,) = await client.captures(exchange.lookup)
            assert await client.get_content(capture.content) == exchange.answer
        assert await kinds_of(client, API) == [RecordKind.REQUEST] * 2
        (page,) = await client.captures(f"{POST_HOST}/page/1001")
        assert await client.get_content(page.content) == f"{POST_HOST}/page/1001".encode()


async def test_an_export_writes_a_post_response_under_its_original_uri(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = tmp_path / "post.warc.gz"
    exchanges = post_exchanges_file(source)
    import_ok(cluster.config_path, source)
    out = tmp_path / "exported.warc.gz"
    done = dlweb("export", "-c", str(cluster.config_path), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    responses: dict[str, tuple[str, bytes]] = {}
    requests: dict[tuple[str, bytes], str] = {}
    with open(out, "rb") as fh:
        for record in ArchiveIterator(fh):
            uri = record.rec_headers.get_header("WARC-Target-URI")
            record_id = record.rec_headers.get_header("WARC-Record-ID")
            if record.rec_type == "response":
                responses[record_id] = (uri, record.content_stream().read())
            elif record.rec_type == "request":
                linked = record.rec_headers.get_header("WARC-Concurrent-To")
                requests[(uri, record.content_stream().read())] = linked
    assert sorted(responses.values()) == sorted((e.url, e.answer) for e in exchanges)
    # Each request is linked to its response, so that a replay tool pairs them again.
    for exchange in exchanges:
        linked = requests[(exchange.url, exchange.body)]
        assert responses[linked] == (exchange.url, exchange.answer)
    # Imported again, the exported file puts each response back under the same URL (beside
    # the first import's, from which it differs by its payload digest, SHA-256 here).
    import_ok(cluster.config_path, out)
    async with ClusterClient(cluster.config) as client:
        for exchange in exchanges:
            captures = await client.captures(exchange.lookup)
            assert {c.content for c in captures} == {sha(exchange.answer)}, exchange
