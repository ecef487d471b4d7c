"""Bundles of small request and metadata records: where they end, and each record's slice."""

import hashlib
import io
from dataclasses import replace
from pathlib import Path

import pytest
from warcio.warcwriter import WARCWriter

from archive.errors import CorruptFile
from archive.structure import Capture, RecordFlag, RecordKind
from archive.warc.reader import SourceRecord
from exchange.bundles import (
    BOUNDARY,
    BUNDLE_BYTES,
    BUNDLE_RECORDS,
    BUNDLED_MAX_RECORD,
    Bundler,
    bundled_body,
    slice_field,
)
from tests.archive.warc import sources

from .records import bundle_all, records_of, requests_in


def requests_of(tmp_path: Path, name: str, first: int, count: int) -> list[SourceRecord]:
    """The request records of a file of `count` exchanges written for the test."""
    return requests_in(sources.exchanges_file(tmp_path, name, first, count).path, tmp_path)


def test_a_bundle_ends_where_its_records_say(tmp_path):
    requests = requests_of(tmp_path, "many.warc.gz", 0, 600)
    bundles = bundle_all(requests)
    assert [r for b in bundles for r, _, _ in b.records] == requests
    for bundle in bundles[:-1]:
        last = bundle.records[-1][0]
        assert (
            int(last.body.name[:8], 16) % BOUNDARY == 0
            or len(bundle.records) == BUNDLE_RECORDS
            or len(bundle.body) >= BUNDLE_BYTES
        )
    # Content-defined ends: 64 records on average, so a few bundles, not one per record.
    assert 2 <= len(bundles) <= 600 // 8
    for bundle in bundles:
        assert bundle.name == hashlib.sha256(bundle.body).hexdigest()


def test_the_same_records_make_the_same_bundles_on_both_sides_of_a_join(tmp_path):
    first = requests_of(tmp_path, "first.warc.gz", 0, 300)
    second = requests_of(tmp_path, "second.warc.gz", 300, 300)
    apart = {b.name for b in bundle_all(first) + bundle_all(second)}
    joined = {b.name for b in bundle_all(first + second)}
    # Only the bundle across the join differs (none, had the first file ended on a boundary).
    assert len(joined - apart) <= 1 and len(apart - joined) <= 2
    assert len(joined & apart) >= len(joined) - 1 >= 2


def test_each_record_is_read_back_from_its_slice(tmp_path):
    requests = requests_of(tmp_path, "many.warc.gz", 0, 200)
    for bundle in bundle_all(requests):
        for record, start, length in bundle.records:
            capture = Capture(
                record.time,
                bundle.name,
                bundle.name,
                0,
                RecordKind.REQUEST,
                RecordFlag.IMPORTED | RecordFlag.BUNDLED,
                slice_field(start, length, record.body.name),
            )
            assert bundled_body(capture, bundle.body) == record.body.body()
            with pytest.raises(CorruptFile, match="outside its bundle"):
                bundled_body(capture, bundle.body[: start + length - 1])
            # A record bundled before bundled records had checksums: its slice alone.
            legacy = replace(capture, offset=start << 32 | length)
            assert bundled_body(legacy, bundle.body) == record.body.body()
    whole = Capture(0, "ab" * 32, "ab" * 32, 0, RecordKind.REQUEST, RecordFlag.IMPORTED, 99)
    assert bundled_body(whole, b"a record stored alone") == b"a record stored alone"


def test_responses_and_large_side_records_are_not_bundled(tmp_path):
    path = tmp_path / "mixed.warc.gz"
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for size in (100, BUNDLED_MAX_RECORD + 1):
            record = writer.create_warc_record(
                f"http://metadata.example/{size}",
                "metadata",
                payload=io.BytesIO(b"x" * size),
                warc_content_type="application/warc-fields",
            )
            writer.write_record(record)
    small, large = records_of(path, tmp_path)
    assert Bundler.takes(small) and not Bundler.takes(large)
    response = records_of(sources.exchanges_file(tmp_path, "one.warc.gz", 0, 1).path, tmp_path)[0]
    assert response.type == "response" and not Bundler.takes(response)
