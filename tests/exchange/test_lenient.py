"""Records other tools write that warcio (and so pywb) reads, hand-made one quirk a file: read
alike by FastWARC and warcio, imported, and read back from a real cluster as written."""

import base64
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from archive.cluster import ClusterClient
from archive.reading import CaptureReader
from archive.structure import RecordKind
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from archive.warc.reader import Problem, SourceRecord, split_kept
from exchange.bundles import bundled_body
from tests.archive.warc.test_reader import described, read_all, read_by_warcio

from .conftest import dlweb

HOST = "http://lenient.example"


@dataclass(frozen=True)
class Quirk:
    """A response written with one quirk: its HTTP header block and payload as written."""

    name: str
    head: bytes
    payload: bytes
    status: int
    marker: bytes = b"WARC/1.1"
    eol: bytes = b"\r\n"  # ending the lines of the WARC header
    content_type: str | None = "text/plain"

    @property
    def url(self) -> str:
        return f"{HOST}/{self.name}"


QUIRKS = [
    Quirk(
        "cr-cr-lf",
        b"HTTP/1.1 200 OK\r\r\nContent-Type: text/plain\r\r\nX-Kept: yes\r\r\n\r\r\n",
        b"ended by CR CR LF\r\n\r\nwith a blank line in the payload",
        200,
    ),
    Quirk(
        "no-reason-space",
        b"HTTP/1.0 302 \r\nLocation: http://lenient.example/to\r\n\r\n",
        b"",
        302,
        content_type=None,
    ),
    Quirk(
        "no-reason", b"HTTP/1.1 200\r\nContent-Type: text/plain\r\n\r\n", b"no reason phrase", 200
    ),
    Quirk(
        "headers-only",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Kept: yes",
        b"",
        200,
    ),
    Quirk("status-only", b"HTTP/1.1 404 Not Found", b"", 404, content_type=None),
    Quirk(
        "lf",
        b"HTTP/1.1 200 OK\nContent-Type: text/plain\n\n",
        b"LF endings\r\n\r\nthen CRLF ones in the payload",
        200,
        eol=b"\n",
    ),
    Quirk(
        "wrong-length",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\n",
        b"longer than its Content-Length says",
        200,
    ),
    Quirk(
        "longer-length",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 9999\r\n\r\n",
        b"shorter than its Content-Length says",
        200,
    ),
    Quirk("warc-1-0", b"HTTP/1.1 200 OK\r\n\r\n", b"WARC/1.0", 200, b"WARC/1.0", content_type=None),
    Quirk(
        "lower-1-0", b"HTTP/1.1 200 OK\r\n\r\n", b"warc/1.0", 200, b"warc/1.0", content_type=None
    ),
    Quirk(
        "lower-1-1", b"HTTP/1.1 200 OK\r\n\r\n", b"warc/1.1", 200, b"warc/1.1", content_type=None
    ),
    Quirk(
        "mixed-1-1", b"HTTP/1.1 200 OK\r\n\r\n", b"Warc/1.1", 200, b"Warc/1.1", content_type=None
    ),
]
DATE = "2024-05-01T00:00:00Z"
# A request of headers only, its block ending without the blank line.
REQUEST_URL = f"{HOST}/request"
REQUEST_HEAD = b"GET /request HTTP/1.1\r\nHost: lenient.example\r\nUser-Agent: hand"


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def record(
    rec_type: str,
    url: str,
    date: str,
    block: bytes,
    payload: bytes | None,
    marker: bytes = b"WARC/1.1",
    eol: bytes = b"\r\n",
) -> bytes:
    """A record by hand; with `payload`, its WARC-Payload-Digest, checked by the reader against
    the bytes after the HTTP header block as it finds it (so where it ends is checked too)."""
    fields = [
        marker.decode(),
        f"WARC-Type: {rec_type}",
        f"WARC-Target-URI: {url}",
        f"WARC-Date: {date}",
        f"Content-Type: application/http; msgtype={rec_type}",
    ]
    if payload is not None:
        fields.append(f"WARC-Payload-Digest: {sha1(payload)}")
    fields.append(f"Content-Length: {len(block)}")
    head = eol.join(field.encode() for field in fields) + eol + eol
    return head + block + eol + eol


def quirk_file(directory: Path, quirk: Quirk, gzipped: bool) -> Path:
    """The quirky response, then a sound one: reading goes on past it."""
    records = [
        record(
            "response",
            quirk.url,
            DATE,
            quirk.head + quirk.payload,
            quirk.payload,
            quirk.marker,
            quirk.eol,
        ),
        record("response", f"{quirk.url}/next", DATE, b"HTTP/1.1 200 OK\r\n\r\nnext", b"next"),
    ]
    path = directory / f"{quirk.name}.warc{'.gz' if gzipped else ''}"
    path.write_bytes(b"".join(gzip.compress(r) for r in records) if gzipped else b"".join(records))
    return path


@pytest.mark.parametrize("gzipped", [False, True], ids=["warc", "warc.gz"])
@pytest.mark.parametrize("quirk", QUIRKS, ids=[q.name for q in QUIRKS])
def test_a_quirk_is_read_as_warcio_reads_it(tmp_path, quirk: Quirk, gzipped: bool):
    path = quirk_file(tmp_path, quirk, gzipped)
    spool = tmp_path / "spool"
    spool.mkdir()
    first, second = read_all(path, spool)
    assert isinstance(first, SourceRecord) and isinstance(second, SourceRecord)
    assert (first.uri, first.status, first.http_header) == (quirk.url, quirk.status, quirk.head)
    assert second.uri == f"{quirk.url}/next"
    assert described(read_all(path, spool)) == described(read_by_warcio(path, spool))


CR_CR_LF_HEAD = b"HTTP/1.0 302 \r\r\nLocation: http://lenient.example/to\r\r\n\r\r\n"


@pytest.mark.parametrize("gzipped", [False, True], ids=["warc", "warc.gz"])
@pytest.mark.parametrize("followed", [False, True], ids=["alone", "then-as-long"])
def test_a_warc_header_of_lines_ended_by_cr_cr_lf_ends_at_its_blank_line(
    tmp_path, gzipped: bool, followed: bool
):
    """As in pywb's missing-status-text.warc: warcio ends the header at the line CR CR LF;
    FastWARC reads on, into the HTTP header block to the end of the file when the record is
    alone, else into the next record's header, whose block (as long as this one's) it would take
    for this record's."""
    url = f"{HOST}/cr-cr-lf-warc"
    records = [record("response", url, DATE, CR_CR_LF_HEAD, b"", eol=b"\r\r\n")]
    if followed:
        block = b"HTTP/1.1 200 OK\r\n\r\n"
        block += b"x" * (len(CR_CR_LF_HEAD) - len(block))
        records.append(record("response", f"{url}/next", DATE, block, None))
    path = tmp_path / f"cr-cr-lf.warc{'.gz' if gzipped else ''}"
    path.write_bytes(b"".join(gzip.compress(r) for r in records) if gzipped else b"".join(records))
    items = read_all(path, tmp_path)
    assert [getattr(item, "uri", None) for item in items] == [url, f"{url}/next"][: len(records)]
    first = items[0]
    assert isinstance(first, SourceRecord)
    assert (first.status, first.http_header) == (302, CR_CR_LF_HEAD)
    assert described(read_all(path, tmp_path)) == described(read_by_warcio(path, tmp_path))


def test_a_request_of_headers_only_is_read(tmp_path):
    path = tmp_path / "request.warc"
    path.write_bytes(record("request", REQUEST_URL, DATE, REQUEST_HEAD, None))
    (request,) = read_all(path, tmp_path)
    assert isinstance(request, SourceRecord) and request.http_header == REQUEST_HEAD


def test_what_stays_refused_is_named_and_reading_goes_on_at_any_warc_marker(tmp_path):
    """A block of more than 256 KiB with no blank line, and a status that is not 3 digits, are
    still refused, each with its offset; the records around them are read, the one after a
    damaged record found by its `warc/1.0` line."""
    endless = b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"x" * (300 * 1024)
    records = [
        record("response", f"{HOST}/before", DATE, b"HTTP/1.1 200 OK\r\n\r\nbefore", b"before"),
        record("response", f"{HOST}/endless", DATE, endless, None),
        record("response", f"{HOST}/2xx", DATE, b"HTTP/1.1 2xx Fine\r\n\r\n", None),
        b"WARC/1.1\r\nContent-Length: x\r\n\r\n",
        record(
            "response", f"{HOST}/after", DATE, b"HTTP/1.1 200\r\n\r\nafter", b"after", b"warc/1.0"
        ),
    ]
    path = tmp_path / "refused.warc"
    path.write_bytes(b"".join(records))
    offsets = [sum(map(len, records[:n])) for n in range(len(records))]
    items = read_all(path, tmp_path)
    assert [(type(i).__name__, i.offset) for i in items] == [
        ("SourceRecord", offsets[0]),
        ("Problem", offsets[1]),
        ("Problem", offsets[2]),
        ("Problem", offsets[3]),
        ("SourceRecord", offsets[4]),
    ]
    problems = [i for i in items if isinstance(i, Problem)]
    assert "no blank line ends it in its first 256 KiB" in problems[0].reason
    assert "status '2xx' is not 3 digits" in problems[1].reason
    assert "Content-Length 'x' is not a number" in problems[2].reason
    assert str(problems[0]).startswith(f"{path}: offset {offsets[1]}: ")


async def test_every_quirk_is_imported_and_read_back_as_written(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    files = [quirk_file(tmp_path, q, gzipped=n % 2 == 1) for n, q in enumerate(QUIRKS)]
    request = tmp_path / "request.warc"
    request.write_bytes(
        record("request", REQUEST_URL, DATE, REQUEST_HEAD, None)
        + record("response", REQUEST_URL, DATE, b"HTTP/1.1 204 No Content\r\n\r\n", b"")
    )
    done = dlweb("import", "-c", str(cluster.config_path), *map(str, [*files, request]))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped" not in done.stderr and "Traceback" not in done.stderr
    async with ClusterClient(cluster.config) as client:
        reader = CaptureReader(client)
        for quirk in QUIRKS:
            reading = await reader.read_at(quirk.url, parse_time(DATE), "exact")
            assert reading.capture.kind is RecordKind.RESPONSE, quirk.name
            # The header block byte for byte as written, the payload as the record bounds it,
            # and the status and headers as the proxy reads them to replay.
            assert reading.block == quirk.head, quirk.name
            assert await reader.whole_body(reading) == quirk.payload, quirk.name
            assert reading.header.status == quirk.status, quirk.name
            assert reading.header.get("Content-Type") == quirk.content_type, quirk.name
            if b"X-Kept" in quirk.head:
                assert reading.header.get("X-Kept") == "yes", quirk.name
            (next_capture,) = await client.captures(f"{quirk.url}/next")
            assert await client.get_content(next_capture.content) == b"next", quirk.name
        moved = await reader.read_at(f"{HOST}/no-reason-space", parse_time(DATE), "exact")
        assert (moved.header.reason, moved.header.get("Location")) == ("", f"{HOST}/to")
        _, records = await client.read_structure(structure_name(REQUEST_URL))
        kept = next(r for r in records if r.kind is RecordKind.REQUEST)
        body = bundled_body(kept, await client.get_content(kept.content))
        assert split_kept(body)[1] == REQUEST_HEAD
