"""Reading damaged WARC and ARC files never fails: every record is read or reported."""

import random
from pathlib import Path

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


def test_randomly_damaged_files_give_problems_not_exceptions(tmp_path):
    """Bytes changed, cut out, added or the file cut short, in gzipped, plain and ARC files."""
    seeds = [
        sources.warcio_file(tmp_path).path.read_bytes(),
        sources.malformed_header(tmp_path).path.read_bytes(),
        sources.arc_file(tmp_path, gzipped=False).path.read_bytes(),
        sources.arc_file(tmp_path, gzipped=True).path.read_bytes(),
    ]
    rng = random.Random(4)
    path = tmp_path / "mutant.warc"
    spool = tmp_path / "spool"
    spool.mkdir()
    read = 0
    for _ in range(MUTATIONS):
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
        path.write_bytes(bytes(data))
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
