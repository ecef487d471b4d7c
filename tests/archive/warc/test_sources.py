"""The source-file generators write what they claim, as warcio (not dlweb) reads it."""

import http.client
import io
import zlib
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParserException

from . import sources
from .site import PAGES, TestSite


@dataclass(frozen=True, slots=True)
class Block:
    """A record as warcio reads it: where it starts, its WARC fields and its raw block."""

    offset: int
    fields: StatusAndHeaders
    data: bytes

    def field(self, name: str) -> str | None:
        value: str | None = self.fields.get_header(name)
        return value

    @property
    def type(self) -> str:
        return self.field("WARC-Type") or ""

    @property
    def url(self) -> str:
        return self.field("WARC-Target-URI") or ""


def read_blocks(path: Path, start: int = 0) -> tuple[list[Block], tuple[int, Exception] | None]:
    """The records from `start` on, and where warcio failed and how, if it did."""
    found = []
    with open(path, "rb") as fh:
        fh.seek(start)
        records = ArchiveIterator(fh, no_record_parse=True, arc2warc=True)
        try:
            for record in records:
                data = record.raw_stream.read()
                found.append(Block(records.offset, record.rec_headers, data))
        except (ArchiveLoadFailed, StatusAndHeadersParserException, zlib.error, EOFError) as exc:
            return found, (records.offset, exc)
    return found, None


def digest_problems(path: Path) -> dict[int, list[str]]:
    """The digest problems warcio finds, by record offset."""
    problems = {}
    with open(path, "rb") as fh:
        records = ArchiveIterator(fh, check_digests=True)
        for record in records:
            record.content_stream().read()
            problems[records.offset] = list(record.digest_checker.problems)
    return problems


def payload(block: bytes) -> tuple[bytes, bytes]:
    """The HTTP header block and the payload (chunk framing removed) of an HTTP block."""
    head, sep, body = block.partition(b"\r\n\r\n")
    head += sep
    if body and b"transfer-encoding: chunked" in head.lower():
        body = ChunkedDataReader(io.BytesIO(body), raise_exceptions=True).read()
    return head, body


def status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


@pytest.fixture(scope="module")
def site() -> Iterator[TestSite]:
    with TestSite() as running:
        yield running


@pytest.fixture(scope="module")
def crawls(site: TestSite, tmp_path_factory: pytest.TempPathFactory) -> list[sources.Crawl]:
    directory = tmp_path_factory.mktemp("wget")
    first = sources.wget_crawl(site.base, directory, "first")
    return [first, sources.wget_crawl(site.base, directory, "second", dedup_cdx=first.cdx)]


def test_site_serves_the_expected_bytes(site: TestSite) -> None:
    for path, page in PAGES.items():
        with closing(http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)) as connection:
            connection.request("GET", path, headers={"Accept-Encoding": "identity"})
            answer = connection.getresponse()
            assert (answer.status, answer.read()) == (page.status, page.body), path
            assert (answer.getheader("Transfer-Encoding") == "chunked") == bool(page.chunks), path


def test_wget_records_every_page(site: TestSite, crawls: list[sources.Crawl]) -> None:
    blocks, error = read_blocks(crawls[0].warc)
    assert error is None
    responses = {b.url: payload(b.data) for b in blocks if b.type == "response"}
    requested = {b.url for b in blocks if b.type == "request"}
    assert set(responses) == requested == {site.base + path for path in PAGES}
    for path, page in PAGES.items():
        head, body = responses[site.base + path]
        assert (status(head), body) == (page.status, page.body), path
    assert b"Location: /new.html" in responses[site.base + "/old.html"][0]
    assert b"Transfer-Encoding: chunked" in responses[site.base + "/chunked.html"][0]
    indexed = {line.split()[0] for line in crawls[0].cdx.read_text().splitlines()[1:]}
    assert indexed == set(responses)


def test_wget_dedup_crawl_writes_revisits(site: TestSite, crawls: list[sources.Crawl]) -> None:
    first, _ = read_blocks(crawls[0].warc)
    second, error = read_blocks(crawls[1].warc)
    assert error is None
    originals = {b.url: b for b in first if b.type == "response"}
    revisits = {b.url: b for b in second if b.type == "revisit"}
    # wget dedups by URL and digest; its table keeps one URL per digest, so of the two copies
    # only one becomes a revisit.
    unique = {site.base + p for p in PAGES if p not in ("/copy-a.html", "/copy-b.html")}
    assert unique <= set(revisits)
    for url, revisit in revisits.items():
        original = originals[url]
        assert revisit.field("WARC-Payload-Digest") == original.field("WARC-Payload-Digest")
        assert revisit.field("WARC-Refers-To") == original.field("WARC-Record-ID")
        assert (revisit.field("WARC-Profile") or "").endswith("/revisit/identical-payload-digest")
        assert payload(revisit.data) == (revisit.data, b"")


def test_warcio_file_holds_what_it_describes(tmp_path: Path) -> None:
    source = sources.warcio_file(tmp_path)
    blocks, error = read_blocks(source.path)
    assert error is None
    assert [(b.type, b.url, b.field("WARC-Date")) for b in blocks] == [
        (e.type, e.url, e.date) for e in source.entries
    ]
    assert all(not problems for problems in digest_problems(source.path).values())
    for block, entry in zip(blocks, source.entries, strict=True):
        assert block.field("WARC-Record-ID") == entry.record_id
        assert block.field("WARC-Payload-Digest") == entry.payload_digest
        if entry.header_block is None:
            assert block.data == entry.payload
        elif entry.type == "revisit":
            assert block.data == entry.header_block
        else:
            assert payload(block.data) == (entry.header_block, entry.payload), entry.url
            assert entry.type == "request" or status(entry.header_block) == entry.status
    a = source.find("response", "http://warcio.example/a")
    same_url = source.find("revisit", "http://warcio.example/a")
    copy = source.find("revisit", "http://warcio.example/a-copy")
    assert same_url.payload_digest == copy.payload_digest == a.payload_digest
    assert (same_url.refers_to_uri, same_url.refers_to_date) == (None, None)
    assert (copy.refers_to_uri, copy.refers_to_date) == (a.url, a.date)
    chunked = source.find("response", "http://warcio.example/chunked")
    assert chunked.payload not in blocks[source.entries.index(chunked)].data
    assert source.find("response", "http://warcio.example/redirect").status == 302
    dates = [e.date for e in source.entries if e.type != "request"]
    assert dates == sorted(set(dates))


def test_later_revisits_point_into_the_first_file(tmp_path: Path) -> None:
    first = sources.warcio_file(tmp_path)
    later = sources.later_revisit_file(tmp_path, first)
    blocks, error = read_blocks(later.path)
    assert error is None
    assert [(b.type, b.url) for b in blocks] == [
        ("revisit", "http://warcio.example/a-later"),
        ("revisit", "http://warcio.example/b"),
    ]
    a = first.find("response", "http://warcio.example/a")
    b = first.find("response", "http://warcio.example/b")
    a_later, b_again = blocks
    assert a_later.field("WARC-Payload-Digest") == a.payload_digest
    assert a_later.field("WARC-Refers-To-Target-URI") == a.url
    assert a_later.field("WARC-Refers-To-Date") == a.date
    assert b_again.field("WARC-Payload-Digest") == b.payload_digest
    assert b_again.field("WARC-Refers-To-Target-URI") is None


@pytest.mark.parametrize("gzipped", [False, True])
def test_arc_file_is_readable(tmp_path: Path, gzipped: bool) -> None:
    source = sources.arc_file(tmp_path, gzipped)
    blocks, error = read_blocks(source.path)
    assert error is None
    assert [b.type for b in blocks] == ["warcinfo", "response", "response"]
    assert blocks[1].offset > 0
    for block, entry in zip(blocks[1:], source.entries, strict=True):
        assert (block.url, block.field("WARC-Date")) == (entry.url, entry.date)
        assert payload(block.data) == (entry.header_block, entry.payload)


def good_urls(blocks: list[Block]) -> list[str]:
    return [b.url for b in blocks if b.url != sources.BAD_URL]


def test_truncated_gzip_member_stops_warcio_at_it(tmp_path: Path) -> None:
    damaged = sources.truncated_gzip_member(tmp_path)
    before, error = read_blocks(damaged.path)
    assert error is not None and error[0] == damaged.bad_offset
    assert [b.offset for b in before] == [0]
    assert damaged.next_offset is not None
    after, error = read_blocks(damaged.path, damaged.next_offset)
    assert error is None
    assert good_urls(before) + good_urls(after) == damaged.good_urls


def test_truncated_last_member_ends_short(tmp_path: Path) -> None:
    damaged = sources.truncated_at_end(tmp_path)
    blocks, _ = read_blocks(damaged.path)
    assert damaged.next_offset is None
    assert good_urls(blocks) == damaged.good_urls
    bad = blocks[-1]
    assert (bad.offset, bad.url) == (damaged.bad_offset, damaged.bad_url)
    assert len(bad.data) < int(bad.field("Content-Length") or 0)


def test_malformed_header_breaks_warcio_there(tmp_path: Path) -> None:
    damaged = sources.malformed_header(tmp_path)
    blocks, error = read_blocks(damaged.path)
    assert error is not None
    assert [(b.offset, b.field("Content-Length")) for b in blocks][-1] == (
        damaged.bad_offset,
        "abc",
    )
    assert damaged.next_offset is not None
    after, error = read_blocks(damaged.path, damaged.next_offset)
    assert error is None
    assert good_urls(blocks) + good_urls(after) == damaged.good_urls


def test_digest_mismatch_is_found_in_the_bad_record_only(tmp_path: Path) -> None:
    damaged = sources.digest_mismatch(tmp_path)
    problems = digest_problems(damaged.path)
    assert len(problems) == 1 + len(damaged.good_urls)
    assert {offset for offset, found in problems.items() if found} == {damaged.bad_offset}
    assert len(problems[damaged.bad_offset]) == 2  # the block digest and the payload digest


def test_large_record_sits_between_small_ones(tmp_path: Path) -> None:
    size = 300_000
    damaged = sources.large_record(tmp_path, size)
    blocks, error = read_blocks(damaged.path)
    assert error is None
    assert [b.url for b in blocks] == [
        damaged.good_urls[0],
        damaged.bad_url,
        *damaged.good_urls[1:],
    ]
    large = blocks[1]
    assert large.offset == damaged.bad_offset
    assert len(payload(large.data)[1]) == size
    assert blocks[2].offset == damaged.next_offset
