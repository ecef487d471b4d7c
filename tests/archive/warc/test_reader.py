"""Reading damaged WARC and ARC files never fails: every record is read or reported."""

import base64
import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive.warc import reader
from archive.warc.digests import parse_digest
from archive.warc.reader import Ignored, Problem, SourceRecord, read_archive

from . import sources

MUTATIONS = 300


def read_all(path: Path, spool: Path) -> list[SourceRecord | Problem | Ignored]:
    items = list(read_archive(path, 1 << 20, spool))
    for item in items:
        if isinstance(item, SourceRecord):
            item.body.discard()
    return items


def test_a_response_without_headers_is_reported(tmp_path):
    path = tmp_path / "empty.warc"
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://empty.example/\r\n"
        b"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: 0\r\n\r\n\r\n\r\n"
    )
    (problem,) = read_all(path, tmp_path)
    assert isinstance(problem, Problem) and problem.offset == 0
    assert "no HTTP header block" in problem.reason


def test_a_response_cut_short_before_its_block_is_reported_as_truncated(tmp_path):
    path = tmp_path / "cut.warc"
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://cut.example/\r\n"
        b"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: 100\r\n\r\n"
    )
    (problem,) = read_all(path, tmp_path)
    assert isinstance(problem, Problem) and problem.offset == 0
    assert problem.reason == "truncated record: the file ends after 0 of its 100 bytes"


def read_by_warcio(path: Path, spool: Path) -> list[SourceRecord | Problem | Ignored]:
    """What warcio alone reads of a file, the reader FastWARC hands damaged records to."""
    with open(path, "rb") as fh:
        gzipped = fh.read(2) == reader.GZIP_MAGIC[:2]
        return list(reader._read_any(fh, path, gzipped, 0, 1 << 20, spool, None))


def described(items: list[SourceRecord | Problem | Ignored]) -> list[tuple[object, ...]]:
    """Each item as comparable values; a record's body is hashed and freed."""
    out: list[tuple[object, ...]] = []
    for item in items:
        if isinstance(item, SourceRecord):
            out.append(
                (item.offset, item.type, item.uri, item.time, item.body.name, item.http_header)
                + (item.status, item.truncated, tuple(item.fields))
            )
            item.body.discard()
        else:
            out.append((item.offset, type(item).__name__))
    return out


def mutants(seeds: list[bytes], count: int, seed: int) -> Iterator[bytes]:
    """Copies of the seeds with bytes changed, cut out or added, or cut short."""
    rng = random.Random(seed)
    for _ in range(count):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(data))
            action = rng.random()
            if action < 0.5:
                data[at] = rng.randrange(256)
            elif action < 0.7:
                del data[at : at + rng.randint(1, 200)]
            elif action < 0.9:
                data[at:at] = rng.randbytes(rng.randint(1, 50))
            else:
                del data[max(at, 1) :]
        yield bytes(data)


def test_fastwarc_reads_what_warcio_reads(tmp_path):
    """Sound files read the same as by warcio alone; of a damaged file, no record that warcio
    rejects is read (warcio takes over at the first record FastWARC cannot vouch for)."""
    spool = tmp_path / "spool"
    spool.mkdir()
    first = sources.warcio_file(tmp_path)
    seeds = [
        first.path,
        sources.later_revisit_file(tmp_path, first).path,
        sources.digest_mismatch(tmp_path).path,
        sources.malformed_header(tmp_path).path,
        sources.truncated_gzip_member(tmp_path).path,
    ]
    for path in seeds:
        assert described(read_all(path, spool)) == described(read_by_warcio(path, spool)), path
    path = tmp_path / "mutant.warc"
    for data in mutants([p.read_bytes() for p in seeds], MUTATIONS, seed=5):
        path.write_bytes(data)
        by_warcio = [d for d in described(read_by_warcio(path, spool)) if len(d) > 2]
        assert all(d in by_warcio for d in described(read_all(path, spool)) if len(d) > 2)


def test_a_fastwarc_panic_hands_the_file_to_warcio(tmp_path, monkeypatch):
    # One class a pyo3 extension loaded in this process (tantivy's too, when it was loaded).
    panic = reader._FASTWARC_PANICS[0]
    path = sources.warcio_file(tmp_path).path
    spool = tmp_path / "spool"
    spool.mkdir()
    expected = described(read_by_warcio(path, spool))
    fast = reader.FastIterator

    def panicking(*args: object, **options: object) -> Iterator[object]:
        yield from fast(*args, **options)
        raise panic("a bug in the parser")

    monkeypatch.setattr(reader, "FastIterator", panicking)
    assert described(read_all(path, spool)) == expected


@pytest.mark.parametrize(
    "fields",
    [
        b"WARC-Target-URI: http://latin.example/caf\xe9\r\n",
        b"WARC-Target-URI: http://lf.example/\nWARC-Concurrent-To: <urn:x>\r\n",
        b"WARC-Target-URI: <http://wget.example/a b>\r\n",
    ],
    ids=["latin-1", "bare LF", "wget 1.19 brackets"],
)
def test_odd_fields_read_as_warcio_reads_them(tmp_path, fields: bytes):
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody"
    record = (
        b"WARC/1.1\r\nWARC-Type: response\r\n%sWARC-Date: 2024-01-01T00:00:00Z\r\n"
        b"Content-Length: %d\r\n\r\n%s\r\n\r\n" % (fields, len(block), block)
    )
    path = tmp_path / "odd.warc"
    path.write_bytes(record * 2)
    spool = tmp_path / "spool"
    spool.mkdir()
    got = described(read_all(path, spool))
    assert got == described(read_by_warcio(path, spool))
    assert [d[1] for d in got] == ["response", "response"]


def test_randomly_damaged_files_give_problems_not_exceptions(tmp_path):
    """Bytes changed, cut out, added or the file cut short, in gzipped, plain and ARC files."""
    seeds = [
        sources.warcio_file(tmp_path).path.read_bytes(),
        sources.malformed_header(tmp_path).path.read_bytes(),
        sources.arc_file(tmp_path, gzipped=False).path.read_bytes(),
        sources.arc_file(tmp_path, gzipped=True).path.read_bytes(),
    ]
    path = tmp_path / "mutant.warc"
    spool = tmp_path / "spool"
    spool.mkdir()
    read = 0
    for data in mutants(seeds, MUTATIONS, seed=4):
        path.write_bytes(data)
        items = read_all(path, spool)
        read += sum(isinstance(item, SourceRecord) for item in items)
    assert read > MUTATIONS  # most damage leaves records around it readable
    assert list(spool.iterdir()) == []


def test_a_response_whose_status_line_is_not_http_is_reported(tmp_path):
    path = tmp_path / "status.warc"
    block = b"HTTP/1.1 2xx Fine\r\nContent-Type: text/plain\r\n\r\nbody"
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://status.example/\r\n"
        b"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n"
        % (len(block), block)
    )
    (problem,) = read_all(path, tmp_path)
    assert isinstance(problem, Problem) and problem.offset == 0
    assert "malformed HTTP header block" in problem.reason and "'2xx'" in problem.reason


def sha1_field(data: bytes) -> bytes:
    return b"sha1:" + base64.b32encode(hashlib.sha1(data).digest())


def response_with_digests(path: Path, block_digest: bytes | None, payload_digest: bytes) -> None:
    payload = b"the payload"
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + payload
    digests = b"WARC-Payload-Digest: " + payload_digest + b"\r\n"
    if block_digest is not None:
        digests += b"WARC-Block-Digest: " + block_digest + b"\r\n"
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://digest.example/\r\n"
        b"WARC-Date: 2024-01-01T00:00:00Z\r\n%sContent-Length: %d\r\n\r\n%s\r\n\r\n"
        % (digests, len(block), block)
    )


def test_a_payload_digest_is_checked_when_no_block_digest_is(tmp_path):
    path = tmp_path / "payload.warc"
    response_with_digests(path, None, sha1_field(b"another payload"))
    (problem,) = read_all(path, tmp_path)
    assert isinstance(problem, Problem)
    assert "WARC-Payload-Digest" in problem.reason and "does not match" in problem.reason
    response_with_digests(path, None, sha1_field(b"the payload"))
    (record,) = read_all(path, tmp_path)
    assert isinstance(record, SourceRecord)


def test_a_block_digest_checked_stands_for_the_payload_digest(tmp_path):
    path = tmp_path / "block.warc"
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nthe payload"
    written = sha1_field(b"what the writer hashed")
    response_with_digests(path, sha1_field(block), written)
    (record,) = read_all(path, tmp_path)
    assert isinstance(record, SourceRecord)
    assert record.payload_digest == parse_digest(written.decode())
    response_with_digests(path, sha1_field(block + b"!"), sha1_field(b"the payload"))
    (problem,) = read_all(path, tmp_path)
    assert isinstance(problem, Problem)
    assert "WARC-Block-Digest" in problem.reason and "does not match" in problem.reason


def test_a_header_block_that_ends_where_a_read_ends_is_followed_by_its_body(tmp_path):
    path = tmp_path / "long-head.warc"
    start = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Long: "
    end = b"\r\n\r\n"
    head = start + b"a" * (reader.READ_SIZE - len(start) - len(end)) + end
    block = head + b"the body after a header block of exactly one read"
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://long.example/\r\n"
        b"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n"
        % (len(block), block)
    )
    (record,) = list(read_archive(path, 1 << 20, tmp_path))
    assert isinstance(record, SourceRecord), record
    assert len(record.http_header or b"") == reader.READ_SIZE
    assert record.body.body() == b"the body after a header block of exactly one read"
    record.body.discard()
