"""WARC and ARC files written by other tools than dlweb (wget, warcio, by hand), and damaged ones.

Each function writes into a given directory and returns the path with what the file holds, so
tests can import it and compare what the archive keeps with what was written.
"""

import gzip
import io
import math
import subprocess
import tempfile
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

WGET_TIMEOUT = 60
# wget's exit status when a server answered an error (404, 500): the crawl itself went well.
WGET_SERVER_ERROR = 8
WARCIO_HOST = "http://warcio.example"
ARC_HOST = "http://arc.example"
DAMAGED_HOST = "http://damaged.example"


@dataclass(frozen=True, slots=True)
class Crawl:
    """The WARC file wget wrote and the CDX index it wrote beside it."""

    warc: Path
    cdx: Path


@dataclass(frozen=True, slots=True)
class Entry:
    """One record as written.

    `payload` is what the capture stands for: the body without chunk framing but with its content
    encoding (gzip stays gzip); for a revisit, the payload of the record it revisits; for a record
    without HTTP headers (resource, metadata, warcinfo), its whole block. `status` is 0 where there
    is no HTTP response.
    """

    type: str
    url: str
    date: str
    status: int
    payload: bytes
    header_block: bytes | None
    record_id: str | None = None
    payload_digest: str | None = None
    refers_to_uri: str | None = None
    refers_to_date: str | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """A file and its records, in the order they were written."""

    path: Path
    entries: list[Entry]

    def find(self, rec_type: str, url: str) -> Entry:
        """The first record of this type for this URL."""
        return next(e for e in self.entries if e.type == rec_type and e.url == url)


@dataclass(frozen=True, slots=True)
class Damaged:
    """A damaged file: where its bad record starts in the file as stored (a gzip member's offset
    in a .gz), where the next record starts (None when the bad one is last), the good records."""

    path: Path
    bad_offset: int
    bad_url: str
    good_urls: list[str]
    next_offset: int | None


def wget_crawl(site_base: str, directory: Path, name: str, dedup_cdx: Path | None = None) -> Crawl:
    """Crawl the site with GNU wget into `directory/name.warc.gz` (and `name.cdx`).

    With `dedup_cdx`, wget writes a revisit instead of a response for a payload that CDX lists
    under the same URL. That crawl starts in a second after the one the CDX was written in: WARC
    dates are whole seconds, and a revisit dated the second of the response it refers to (the
    same content, and the same header block, its Date header included) is that same capture,
    which an import keeps once.
    """
    if (
        dedup_cdx is not None
        and (left := math.floor(dedup_cdx.stat().st_mtime) + 1 - time.time()) > 0
    ):
        time.sleep(left)
    prefix = directory / name
    with tempfile.TemporaryDirectory() as downloads:
        command = [
            "wget",
            "--no-config",
            "--no-proxy",
            "--recursive",
            "--level=2",
            "--no-verbose",
            "--content-on-error",
            "--delete-after",
            f"--directory-prefix={downloads}",
            f"--warc-file={prefix}",
            "--warc-cdx",
            *([f"--warc-dedup={dedup_cdx}"] if dedup_cdx is not None else []),
            site_base + "/",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=WGET_TIMEOUT)
    if done.returncode not in (0, WGET_SERVER_ERROR):
        raise RuntimeError(f"wget failed with status {done.returncode}:\n{done.stderr}")
    crawl = Crawl(prefix.with_name(name + ".warc.gz"), prefix.with_name(name + ".cdx"))
    if not crawl.warc.is_file() or not crawl.cdx.is_file():
        raise RuntimeError(f"wget wrote no {crawl.warc.name} or {crawl.cdx.name}:\n{done.stderr}")
    return crawl


def _fields(rec_type: str, url: str, date: str) -> dict[str, str]:
    """The date and a record id derived from it, so that every run writes the same bytes."""
    record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{rec_type} {url} {date}")
    return {"WARC-Date": date, "WARC-Record-ID": f"<urn:uuid:{record_id}>"}


def _http_response(status: str, headers: list[tuple[str, str]]) -> StatusAndHeaders:
    return StatusAndHeaders(status, headers, protocol="HTTP/1.1")


def _entry(record: ArcWarcRecord, payload: bytes) -> Entry:
    """What a written record holds, read from the record warcio wrote."""
    fields = record.rec_headers
    http = record.http_headers
    return Entry(
        type=record.rec_type,
        url=fields.get_header("WARC-Target-URI") or "",
        date=fields.get_header("WARC-Date"),
        status=int(http.get_statuscode()) if http and record.rec_type != "request" else 0,
        payload=payload,
        header_block=http.headers_buff if http else None,
        record_id=fields.get_header("WARC-Record-ID"),
        payload_digest=fields.get_header("WARC-Payload-Digest"),
        refers_to_uri=fields.get_header("WARC-Refers-To-Target-URI"),
        refers_to_date=fields.get_header("WARC-Refers-To-Date"),
    )


def _response_record(
    writer: WARCWriter,
    url: str,
    date: str,
    body: bytes,
    status: str = "200 OK",
    headers: list[tuple[str, str]] | None = None,
) -> ArcWarcRecord:
    """A response record whose HTTP body is `body` as given (already chunked, if it should be)."""
    if headers is None:
        headers = [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
    return writer.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=_http_response(status, headers),
        warc_headers_dict=_fields("response", url, date),
    )


def _write_exchange(
    writer: WARCWriter,
    url: str,
    date: str,
    payload: bytes,
    status: str = "200 OK",
    headers: list[tuple[str, str]] | None = None,
    body: bytes | None = None,
) -> list[Entry]:
    """A response and its request; `body` is the HTTP body as recorded when it is not `payload`."""
    response = _response_record(
        writer, url, date, payload if body is None else body, status, headers
    )
    parts = urlsplit(url)
    request = writer.create_warc_record(
        url,
        "request",
        http_headers=StatusAndHeaders(
            f"GET {parts.path} HTTP/1.1", [("Host", parts.netloc), ("User-Agent", "warcio-test")]
        ),
        warc_headers_dict=_fields("request", url, date),
    )
    writer.write_request_response_pair(request, response)
    return [_entry(response, payload), _entry(request, b"")]


def _write_revisit(writer: WARCWriter, url: str, date: str, original: Entry, refers: bool) -> Entry:
    """A revisit of `original`'s payload; with `refers`, it names the original's URL and date."""
    record = writer.create_revisit_record(
        url,
        digest=original.payload_digest,
        refers_to_uri=original.url,
        refers_to_date=original.date,
        http_headers=_http_response(
            "200 OK",
            [("Content-Type", "text/html"), ("Content-Length", str(len(original.payload)))],
        ),
        warc_headers_dict=_fields("revisit", url, date),
    )
    if not refers:
        record.rec_headers.remove_header("WARC-Refers-To-Target-URI")
        record.rec_headers.remove_header("WARC-Refers-To-Date")
    writer.write_record(record)
    return _entry(record, original.payload)


def _chunked(body: bytes, pieces: int) -> bytes:
    """`body` in HTTP/1.1 chunked transfer encoding."""
    size = -(-len(body) // pieces)
    parts = [body[start : start + size] for start in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def _html(text: str) -> bytes:
    return f"<!DOCTYPE html>\n<html><body><p>{text}</p></body></html>\n".encode()


def warcio_file(directory: Path) -> Source:
    """A WARC/1.1 file written by warcio: every record type and kind of revisit dlweb reads."""
    path = directory / "warcio.warc.gz"
    entries: list[Entry] = []
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        info_fields = {"software": "warcio", "format": "WARC File Format 1.1"}
        info = writer.create_warcinfo_record(path.name, info_fields)
        for name, value in _fields("warcinfo", path.name, "2024-01-01T00:00:00Z").items():
            info.rec_headers.replace_header(name, value)
        writer.write_record(info)
        info_block = "".join(f"{name}: {value}\r\n" for name, value in info_fields.items())
        entries.append(_entry(info, info_block.encode()))
        a_url, b_url = f"{WARCIO_HOST}/a", f"{WARCIO_HOST}/b"
        a_entries = _write_exchange(writer, a_url, "2024-01-01T00:00:01Z", _html("Page a"))
        entries += a_entries
        entries += _write_exchange(writer, b_url, "2024-01-01T00:00:02Z", _html("Page b"))
        a = a_entries[0]
        entries.append(_write_revisit(writer, a_url, "2024-02-01T00:00:00Z", a, refers=False))
        entries.append(
            _write_revisit(writer, f"{a_url}-copy", "2024-02-01T00:00:01Z", a, refers=True)
        )
        notes = b"Notes kept as a resource record.\n"
        entries.append(
            _write_block(
                writer, "resource", f"{WARCIO_HOST}/notes.txt", "2024-02-01T00:00:02Z", notes
            )
        )
        outlinks = f"outlink: {b_url}\r\n".encode()
        entries.append(_write_block(writer, "metadata", a_url, "2024-02-01T00:00:03Z", outlinks))
        moved = _html("Moved to b")
        entries += _write_exchange(
            writer,
            f"{WARCIO_HOST}/redirect",
            "2024-02-01T00:00:04Z",
            moved,
            "302 Found",
            [
                ("Location", b_url),
                ("Content-Type", "text/html"),
                ("Content-Length", str(len(moved))),
            ],
        )
        chunked_payload = _html("Sent in chunks. " * 30)
        entries += _write_exchange(
            writer,
            f"{WARCIO_HOST}/chunked",
            "2024-02-01T00:00:05Z",
            chunked_payload,
            headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
            body=_chunked(chunked_payload, 3),
        )
        gzipped = gzip.compress(_html("Compressed. " * 30), mtime=0)
        entries += _write_exchange(
            writer,
            f"{WARCIO_HOST}/gzip",
            "2024-02-01T00:00:06Z",
            gzipped,
            headers=[
                ("Content-Type", "text/html"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", str(len(gzipped))),
            ],
        )
    return Source(path, entries)


CONTENT_TYPES = {"resource": "text/plain", "metadata": "application/warc-fields"}


def exchanges_file(directory: Path, name: str, first: int, count: int) -> Source:
    """`count` responses with their requests, one a second from 2024-03-01 (number `first` on)."""
    path = directory / name
    entries: list[Entry] = []
    start = datetime(2024, 3, 1, tzinfo=UTC)
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for number in range(first, first + count):
            date = (start + timedelta(seconds=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
            url = f"{WARCIO_HOST}/many/{number}"
            entries += _write_exchange(writer, url, date, _html(f"Page {number}"))
    return Source(path, entries)


def _write_block(writer: WARCWriter, rec_type: str, url: str, date: str, block: bytes) -> Entry:
    """A record whose block is no HTTP message: a resource (text) or metadata (WARC fields)."""
    record = writer.create_warc_record(
        url,
        rec_type,
        payload=io.BytesIO(block),
        length=len(block),
        warc_content_type=CONTENT_TYPES[rec_type],
        warc_headers_dict=_fields(rec_type, url, date),
    )
    writer.write_record(record)
    return _entry(record, block)


def later_revisit_file(directory: Path, first: Source) -> Source:
    """A WARC of revisits only, whose originals are in `first` (a `warcio_file`): a URL-agnostic
    revisit of /a at /a-later naming /a, and a same-URL revisit of /b naming nothing."""
    path = directory / "later.warc.gz"
    a = first.find("response", f"{WARCIO_HOST}/a")
    b = first.find("response", f"{WARCIO_HOST}/b")
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        entries = [
            _write_revisit(
                writer, f"{WARCIO_HOST}/a-later", "2024-03-01T00:00:00Z", a, refers=True
            ),
            _write_revisit(writer, b.url, "2024-03-01T00:00:01Z", b, refers=False),
        ]
    return Source(path, entries)


ARC_VERSION_BLOCK = b"1 0 dlweb-tests\nURL IP-address Archive-date Content-type Archive-length\n"
ARC_PAGES = {
    f"{ARC_HOST}/": ("20050101000000", _html("ARC home")),
    f"{ARC_HOST}/page": ("20050101000001", _html("ARC page")),
}


def arc_file(directory: Path, gzipped: bool) -> Source:
    """An ARC v1 file, written by hand as warcio cannot write ARC; gzipped, one member a record."""
    path = directory / ("old.arc.gz" if gzipped else "old.arc")
    records = [
        b"filedesc://%s 0.0.0.0 20050101000000 text/plain %d\n%s\n"
        % (path.name.encode(), len(ARC_VERSION_BLOCK), ARC_VERSION_BLOCK)
    ]
    entries = []
    for url, (stamp, body) in ARC_PAGES.items():
        length = f"Content-Length: {len(body)}\r\n".encode()
        head = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n" + length + b"\r\n"
        records.append(
            b"%s 192.0.2.1 %s text/html %d\n%s%s\n"
            % (url.encode(), stamp.encode(), len(head) + len(body), head, body)
        )
        date = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:]}Z"
        entries.append(Entry("response", url, date, 200, body, head))
    path.write_bytes(b"".join(_gzip_member(r) if gzipped else r for r in records))
    return Source(path, entries)


def _gzip_member(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


BAD_URL = f"{DAMAGED_HOST}/bad"
# Text, so that deflate codes it and a cut member cannot be read as stored bytes.
DAMAGED_BODY = _html(" ".join(f"word{n}" for n in range(800)))


def _damaged_file(
    path: Path,
    bad_body: bytes,
    change: Callable[[bytes], bytes] | None = None,
    gzipped: bool = True,
    after: int = 2,
    mismatch: bool = False,
) -> Damaged:
    """A good response, the bad one and `after` good ones. `change` rewrites the bad record as
    stored (its gzip member, or its bytes); with `mismatch`, its payload is changed, keeping its
    length, after its digests were computed."""
    urls = [f"{DAMAGED_HOST}/before", BAD_URL, *(f"{DAMAGED_HOST}/after-{n}" for n in range(after))]
    offsets = []
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=gzipped, warc_version="1.1")
        for n, url in enumerate(urls):
            offsets.append(out.tell())
            body = bad_body if url == BAD_URL else _html(f"Good record {n}")
            record = _response_record(writer, url, f"2024-04-01T00:00:{n:02d}Z", body)
            if url == BAD_URL and mismatch:
                writer.ensure_digest(record, block=True, payload=False)
                record.raw_stream = io.BytesIO(body.swapcase())
            writer.write_record(record)
        offsets.append(out.tell())
    data = path.read_bytes()
    start, end = offsets[1], offsets[2]
    bad = data[start:end] if change is None else change(data[start:end])
    path.write_bytes(data[:start] + bad + data[end:])
    good = [url for url in urls if url != BAD_URL]
    return Damaged(path, start, BAD_URL, good, start + len(bad) if after else None)


def _first_half(member: bytes) -> bytes:
    """The member holding only the first half of its record, ending at a deflate sync point as a
    write cut off after a flush leaves it: a reader then fails at once on the next member's bytes
    (read as an invalid deflate block) rather than decoding them as data."""
    record = zlib.decompress(member, wbits=31)
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(record[: len(record) // 2]) + compressor.flush(zlib.Z_FULL_FLUSH)


def _length_abc(record: bytes) -> bytes:
    """The record with `Content-Length: abc` in its WARC header."""
    head, sep, block = record.partition(b"\r\n\r\n")
    lines = [
        b"Content-Length: abc" if line.startswith(b"Content-Length:") else line
        for line in head.split(b"\r\n")
    ]
    return b"\r\n".join(lines) + sep + block


def truncated_gzip_member(directory: Path) -> Damaged:
    """A .warc.gz with a gzip member cut short in the middle, intact members after it."""
    return _damaged_file(directory / "cut-member.warc.gz", DAMAGED_BODY, _first_half)


def truncated_at_end(directory: Path) -> Damaged:
    """A .warc.gz whose last gzip member, the bad record, ends early."""
    return _damaged_file(directory / "cut-end.warc.gz", DAMAGED_BODY, _first_half, after=0)


def malformed_header(directory: Path) -> Damaged:
    """An uncompressed .warc where one record says `Content-Length: abc`."""
    return _damaged_file(directory / "bad-header.warc", DAMAGED_BODY, _length_abc, gzipped=False)


def digest_mismatch(directory: Path) -> Damaged:
    """A .warc.gz where one response's payload no longer matches its block and payload digests."""
    return _damaged_file(directory / "digest.warc.gz", DAMAGED_BODY, mismatch=True)


def large_record(directory: Path, size: int) -> Damaged:
    """A .warc.gz with a response whose payload is `size` bytes between two small ones."""
    body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
    return _damaged_file(directory / "large.warc.gz", body, after=1)
