"""`dlweb export` and `dlweb cdxj`: the archive written back out as standard WARC 1.1."""

import base64
import hashlib
import io
import json
import shutil
import subprocess
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import surt
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive import pack
from archive.cache import ReadCache
from archive.cluster import ClusterClient
from archive.structure import RecordFlag
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from deploy.testing.cluster import settled
from deploy.testing.disk import damage_content
from exchange.exporter import Selection, export_warc
from tests.archive.warc import sources
from tests.archive.warc.site import PAGES, TestSite

from .conftest import dlweb


@dataclass
class Written:
    """One record of an exported file, read back with warcio."""

    type: str
    url: str
    time: int
    fields: dict[str, str]
    block: bytes
    offset: int

    @property
    def head(self) -> bytes:
        return self.block.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"

    @property
    def payload(self) -> bytes:
        """The HTTP payload, chunked framing removed as a replay tool does."""
        raw = self.block.partition(b"\r\n\r\n")[2]
        if b"transfer-encoding: chunked" in self.head.lower():
            return ChunkedDataReader(io.BytesIO(raw)).read()
        return raw


def read_warc(path: Path) -> list[Written]:
    written = []
    with open(path, "rb") as fh:
        records = ArchiveIterator(fh, no_record_parse=True)
        for record in records:
            fields = dict(record.rec_headers.headers)
            block = record.raw_stream.read()
            date = fields["WARC-Date"]
            url = fields.get("WARC-Target-URI", "")
            written.append(
                Written(record.rec_type, url, parse_time(date), fields, block, records.offset)
            )
    return written


def export(config: Path, out: Path, *options: str) -> list[Written]:
    done = dlweb("export", "-c", str(config), "--out", str(out), *options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"wrote {out}" in done.stdout
    return read_warc(out)


def by_url_and_time(records: list[Written], rec_type: str) -> dict[tuple[str, int], Written]:
    return {(r.url, r.time): r for r in records if r.type == rec_type}


async def test_export_writes_what_was_imported(cluster_factory, site: TestSite, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    crawl = sources.wget_crawl(site.base, tmp_path, "crawl")
    done = dlweb("import", "-c", str(cluster.config_path), str(source.path), str(crawl.warc))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "all.warc.gz"
    written = export(cluster.config_path, out)

    warcio = shutil.which("warcio")
    assert warcio is not None, "warcio's command is installed with the package"
    check = subprocess.run([warcio, "check", "-v", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout and "digest failed" not in check.stdout

    assert written[0].type == "warcinfo"
    assert [r.time for r in written[1:]] == sorted(r.time for r in written[1:])
    responses = by_url_and_time(written, "response")
    revisits = by_url_and_time(written, "revisit")
    for entry in source.entries:
        key = (entry.url, parse_time(entry.date))
        if entry.type == "response":
            record = responses[key]
            assert record.head == entry.header_block, entry.url
            assert record.payload == entry.payload, entry.url
        elif entry.type == "revisit":
            record = revisits[key]
            assert record.head == entry.header_block
            first = source.find("response", f"{sources.WARCIO_HOST}/a")
            assert record.fields["WARC-Refers-To-Target-URI"] == first.url
            assert parse_time(record.fields["WARC-Refers-To-Date"]) == parse_time(first.date)
            original = responses[(first.url, parse_time(first.date))]
            assert record.fields["WARC-Payload-Digest"] == original.fields["WARC-Payload-Digest"]
        elif entry.type in ("resource", "metadata"):
            record = by_url_and_time(written, entry.type)[key]
            assert record.block == entry.payload
        elif entry.type == "request":
            record = by_url_and_time(written, "request")[key]
            assert record.block.startswith(b"GET /")
            response = responses[key]
            assert record.fields["WARC-Concurrent-To"] == response.fields["WARC-Record-ID"]
    # wget's own log records are written back too, under their metadata:// URIs.
    notes = list(by_url_and_time(written, "resource").values())
    assert sorted(r.url.partition(":")[0] for r in notes) == ["http", "metadata", "metadata"]
    assert {r.fields["Content-Type"] for r in notes} == {"text/plain"}

    # The crawl's duplicate payload is written once; the later copy refers to the first.
    copies = [
        r
        for r in written
        if r.url.endswith(("/copy-a.html", "/copy-b.html")) and r.type != "request"
    ]
    assert [r.type for r in copies] == ["response", "revisit"]
    assert copies[-1].fields["WARC-Refers-To-Target-URI"] == copies[0].url
    home = responses[next(k for k in responses if k[0] == site.base + "/")]
    assert home.payload == PAGES["/"].body

    index = tmp_path / "all.cdxj"
    done = dlweb("cdxj", str(out), "--out", str(index))
    assert done.returncode == 0, done.stderr
    lines = index.read_text().splitlines()
    assert lines == sorted(lines)
    indexed = [
        r
        for r in written
        if r.type in ("response", "revisit", "resource") and r.url.startswith("http")
    ]
    assert len(lines) == len(indexed)
    offsets = {r.offset: r for r in written}
    for line in lines:
        key, stamp, data = line.split(" ", 2)
        fields = json.loads(data)
        record = offsets[int(fields["offset"])]
        assert key == surt.surt(record.url) and fields["url"] == record.url
        assert stamp == record.fields["WARC-Date"][:19].translate(str.maketrans("", "", "-T:"))
        assert fields["filename"] == out.name
        if record.type == "revisit":
            assert fields["mime"] == "warc/revisit"
        assert fields.get("digest") == record.fields.get("WARC-Payload-Digest")


async def test_export_chooses_by_url_prefix_and_dates(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    assert dlweb("import", "-c", str(cluster.config_path), str(source.path)).returncode == 0

    prefixed = export(
        cluster.config_path, tmp_path / "a.warc.gz", "--url-prefix", f"{sources.WARCIO_HOST}/a"
    )
    urls = {r.url for r in prefixed if r.type != "warcinfo"}
    assert urls == {f"{sources.WARCIO_HOST}/a", f"{sources.WARCIO_HOST}/a-copy"}
    # /a's revisit comes with its original, as a revisit naming it.
    assert [r.type for r in prefixed if r.url.endswith("/a") and r.type != "request"][:2] == [
        "response",
        "revisit",
    ]

    window = export(
        cluster.config_path,
        tmp_path / "feb.warc.gz",
        "--from",
        "2024-02-01T00:00:02Z",
        "--to",
        "20240201000004",
    )
    times = [r.time for r in window if r.type != "warcinfo"]
    assert times and min(times) >= parse_time("2024-02-01T00:00:02Z")
    assert max(times) <= parse_time("2024-02-01T00:00:04Z")
    # The first capture of a content in the file is a response, even when it was a revisit.
    assert {r.type for r in window} >= {"resource", "metadata", "response"}


async def test_export_writes_back_each_request_of_the_bundles(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    # 600 requests in bundles of up to a few hundred: bundles span the export's fetch chunks.
    source = sources.exchanges_file(tmp_path, "many.warc.gz", 0, 600)
    assert dlweb("import", "-c", str(cluster.config_path), str(source.path)).returncode == 0
    written = export(cluster.config_path, tmp_path / "many-out.warc.gz")
    requests = by_url_and_time(written, "request")
    responses = by_url_and_time(written, "response")
    sent = [e for e in source.entries if e.type == "request"]
    assert len(requests) == len(sent) == 600
    for entry in sent:
        key = (entry.url, parse_time(entry.date))
        assert requests[key].block == entry.header_block
        assert requests[key].fields["WARC-Concurrent-To"] == responses[key].fields["WARC-Record-ID"]

    # A bundle is read once by a client with a cache (as `dlweb export` has), then kept.
    async with ClusterClient(cluster.config, cache=ReadCache()) as client:
        home = await client.read_structure(structure_name(sent[0].url))
        bundle = next(c.content for c in home[1] if c.flags & RecordFlag.BUNDLED)
        first = await client.get_small_contents([bundle])
        for node in cluster.nodes.values():
            node.stop()
        assert await client.get_small_contents([bundle]) == first and bundle in first


def test_export_refuses_bad_options_and_leaves_nothing(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    config = str(cluster.config_path)
    out = tmp_path / "x.warc.gz"
    backwards = dlweb("export", "-c", config, "--out", str(out), "--from", "2024", "--to", "2023")
    assert backwards.returncode == 2 and "--from is later than --to" in backwards.stderr
    nowhere = dlweb("export", "-c", config, "--out", str(tmp_path / "no" / "x.warc.gz"))
    assert nowhere.returncode == 2 and "not a file in an existing folder" in nowhere.stderr
    date = dlweb("export", "-c", config, "--out", str(out), "--from", "soon")
    assert date.returncode == 2 and "--from" in date.stderr
    assert list(tmp_path.glob("*.warc.gz")) == [] and list(tmp_path.glob(".*.part")) == []
    broken = tmp_path / "broken.warc"
    broken.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://x.example/\r\n"
        b"Content-Length: zz\r\n\r\n"
    )
    index = dlweb("cdxj", str(broken), "--out", str(tmp_path / "i.cdxj"))
    assert index.returncode == 2 and f"{broken}: offset" in index.stderr
    assert "Traceback" not in index.stderr and not (tmp_path / "i.cdxj").exists()


async def test_an_export_missing_a_content_fails_and_leaves_no_file(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    source = sources.warcio_file(tmp_path)
    assert dlweb("import", "-c", str(cluster.config_path), str(source.path)).returncode == 0
    async with ClusterClient(cluster.config) as client:
        (capture, *_) = [
            c for c in await client.captures(f"{sources.WARCIO_HOST}/b") if c.status == 200
        ]
    node = cluster.nodes["node1"]
    auth = {"Authorization": f"Bearer {cluster.config.write_token}"}
    async with (
        aiohttp.ClientSession(headers=auth) as session,
        session.delete(f"{node.url}/content/{capture.content}") as answer,
    ):
        assert answer.status == 200
    out = tmp_path / "lost.warc.gz"
    lost = dlweb("export", "-c", str(cluster.config_path), "--out", str(out))
    assert lost.returncode == 2, lost.stdout + lost.stderr
    assert "Traceback" not in lost.stderr
    assert f"content {capture.content} is on no node" in lost.stderr
    assert list(tmp_path.glob("*.warc.gz")) == [source.path]
    assert list(tmp_path.glob(".*.part")) == []


def _spread_file(path: Path, count: int) -> dict[str, bytes]:
    """A .warc.gz of `count` resource records of 2 KB each (large enough for one copy a
    replica), and their payloads by URL."""
    payloads = {f"http://spread.example/{n}": (b"%06d " % n) * 300 for n in range(count)}
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, body in payloads.items():
            writer.write_record(
                writer.create_warc_record(
                    url, "resource", payload=io.BytesIO(body), warc_content_type="text/plain"
                )
            )
    return payloads


async def test_an_export_reads_its_contents_from_the_nodes_still_up(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=3, replicas=2)
    payloads = _spread_file(tmp_path / "spread.warc.gz", 40)
    big = sources.large_record(tmp_path, pack.MAX_PACKED + 4096)  # too large for a pack
    done = dlweb(
        "import", "-c", str(cluster.config_path), str(tmp_path / "spread.warc.gz"), str(big.path)
    )
    assert done.returncode == 0, done.stdout + done.stderr

    names: set[str] = set()
    async with ClusterClient(cluster.config) as client:
        for url in [*payloads, big.bad_url, *big.good_urls]:
            names.update(n for c in await client.captures(url) for n in (c.content, c.header))

    def placed(status: dict[str, Any]) -> bool:
        return status["files"]["content"] == len(names) and settled(status)

    status = cluster.wait_for(placed, "every content to have its copies")
    # The node holding most, which the export would ask first, is gone: the packs come from the
    # others, and the content too large for a pack is read alone.
    first = max(status["nodes"], key=lambda node: node["files"])["id"]
    cluster.nodes[first].stop()
    cluster.wait_for(
        lambda s: not next(n for n in s["nodes"] if n["id"] == first)["connected"],
        f"{first} to be seen gone",
    )
    written = export(cluster.config_path, tmp_path / "all.warc.gz")
    resources = {r.url: r.block for r in written if r.type == "resource"}
    assert resources == payloads
    (large,) = [r for r in written if r.url == big.bad_url]
    assert len(large.payload) == pack.MAX_PACKED + 4096
    assert large.payload.startswith(b"0123456789abcdef")


LARGE_HOST = "http://large.example"
LARGE = 3 * 1024 * 1024


def _pattern(size: int, seed: int = 0) -> bytes:
    """`size` bytes where every 16 differ from the others, so that pieces out of place show."""
    lines = (b"%02d:%012d\n" % (seed, n) for n in range(size // 16 + 1))
    return b"".join(lines)[:size]


def _write_response(
    writer: WARCWriter,
    url: str,
    date: str,
    body: bytes,
    headers: list[tuple[str, str]] | None = None,
) -> None:
    """A response record whose HTTP body is `body` as given (already chunked, if it says so)."""
    if headers is None:
        headers = [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))]
    writer.write_record(
        writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": date},
        )
    )


def _large_file(path: Path, payloads: dict[str, bytes]) -> None:
    """A .warc.gz of the large payloads by URL, between two small responses: /large and /copy
    (the same payload, so a revisit in the export) as responses, /chunked as a response sent in
    HTTP chunks, /resource as a resource record."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        _write_response(writer, f"{LARGE_HOST}/before", "2024-05-01T00:00:00Z", b"small before")
        for second, url in enumerate(["/large", "/copy"], 1):
            date = f"2024-05-01T00:00:{second:02d}Z"
            _write_response(writer, LARGE_HOST + url, date, payloads[LARGE_HOST + url])
        chunked = payloads[f"{LARGE_HOST}/chunked"]
        pieces = [chunked[start : start + 700_000] for start in range(0, len(chunked), 700_000)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
        headers = [("Content-Type", "application/octet-stream"), ("Transfer-Encoding", "chunked")]
        _write_response(writer, f"{LARGE_HOST}/chunked", "2024-05-01T00:00:03Z", body, headers)
        resource = payloads[f"{LARGE_HOST}/resource"]
        writer.write_record(
            writer.create_warc_record(
                f"{LARGE_HOST}/resource",
                "resource",
                payload=io.BytesIO(resource),
                length=len(resource),
                warc_content_type="application/octet-stream",
                warc_headers_dict={"WARC-Date": "2024-05-01T00:00:04Z"},
            )
        )
        _write_response(writer, f"{LARGE_HOST}/after", "2024-05-01T00:00:05Z", b"small after")


def _warc_digest(data: bytes) -> str:
    return "sha256:" + base64.b32encode(hashlib.sha256(data).digest()).decode("ascii")


async def test_an_export_streams_large_contents_into_valid_records(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    large = _pattern(LARGE)
    payloads = {
        f"{LARGE_HOST}/large": large,
        f"{LARGE_HOST}/copy": large,
        f"{LARGE_HOST}/chunked": _pattern(LARGE + 5, seed=1),
        f"{LARGE_HOST}/resource": _pattern(LARGE, seed=2),
    }
    source = tmp_path / "large.warc.gz"
    _large_file(source, payloads)
    done = dlweb("import", "-c", str(cluster.config_path), str(source))
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "large-out.warc.gz"
    written = export(cluster.config_path, out)

    warcio = shutil.which("warcio")
    assert warcio is not None
    check = subprocess.run([warcio, "check", "-v", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("digest pass") == 6 and "digest failed" not in check.stdout

    records = {r.url: r for r in written if r.type != "warcinfo"}
    assert [r.url.removeprefix(LARGE_HOST) for r in written[1:]] == [
        "/before",
        "/large",
        "/copy",
        "/chunked",
        "/resource",
        "/after",
    ]
    assert [r.type for r in written[1:]] == [
        "response",
        "response",
        "revisit",
        "response",
        "resource",
        "response",
    ]
    assert records[f"{LARGE_HOST}/before"].payload == b"small before"
    assert records[f"{LARGE_HOST}/after"].payload == b"small after"
    first = records[f"{LARGE_HOST}/large"]
    assert first.payload == large
    # The payload digest of a content is its name, spelled in base32.
    assert first.fields["WARC-Payload-Digest"] == _warc_digest(large)
    assert first.fields["WARC-Block-Digest"] == _warc_digest(first.block)
    copy = records[f"{LARGE_HOST}/copy"]
    assert copy.fields["WARC-Refers-To-Target-URI"] == first.url
    assert copy.fields["WARC-Payload-Digest"] == first.fields["WARC-Payload-Digest"]
    # Sent in chunks, it is written as one chunk of the whole payload.
    chunked = records[f"{LARGE_HOST}/chunked"]
    assert chunked.block.partition(b"\r\n\r\n")[2].startswith(b"%x\r\n" % (LARGE + 5))
    assert chunked.payload == payloads[f"{LARGE_HOST}/chunked"]
    resource = records[f"{LARGE_HOST}/resource"]
    assert resource.block == payloads[f"{LARGE_HOST}/resource"]
    assert resource.fields["WARC-Block-Digest"] == _warc_digest(resource.block)


async def test_an_export_of_a_huge_content_never_holds_it(cluster_factory, tmp_path):
    cluster = cluster_factory(nodes=1, replicas=1)
    huge = _pattern(32 * 1024 * 1024)
    digest = hashlib.sha256(huge).hexdigest()
    source = tmp_path / "huge.warc.gz"
    with open(source, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.1")
        _write_response(writer, f"{LARGE_HOST}/huge", "2024-05-01T00:00:00Z", huge)
    del huge
    done = dlweb("import", "-c", str(cluster.config_path), str(source))
    assert done.returncode == 0, done.stdout + done.stderr

    out = tmp_path / "huge-out.warc.gz"
    async with ClusterClient(cluster.config, cache=ReadCache()) as client:
        tracemalloc.start()
        try:
            summary = await export_warc(client, out, Selection())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert summary.records == {"warcinfo": 1, "response": 1}
    # Read whole, the content alone would be 32 MiB of it (about 65 MB with its copies).
    assert peak < 16 * 1024 * 1024, f"{peak:,} bytes at the peak"

    read = hashlib.sha256()
    with open(out, "rb") as fh:
        for record in ArchiveIterator(fh, check_digests=True):
            if record.rec_type == "response":
                while piece := record.content_stream().read(1024 * 1024):
                    read.update(piece)
                assert record.digest_checker.passed is True
    assert read.hexdigest() == digest


async def test_a_large_content_read_wrong_ends_the_export_and_leaves_no_file(
    cluster_factory, tmp_path
):
    cluster = cluster_factory(nodes=1, replicas=1)
    large = _pattern(LARGE)
    source = tmp_path / "large.warc.gz"
    with open(source, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.1")
        _write_response(writer, f"{LARGE_HOST}/large", "2024-05-01T00:00:00Z", large)
    assert dlweb("import", "-c", str(cluster.config_path), str(source)).returncode == 0
    name = hashlib.sha256(large).hexdigest()
    damage_content(cluster.root / "node1", name, at=-1)

    out = tmp_path / "damaged.warc.gz"
    failed = dlweb("export", "-c", str(cluster.config_path), "--out", str(out))
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr
    assert f"content {name}: the bytes hash to" in failed.stderr
    assert list(tmp_path.glob("*.warc.gz")) == [source]
    assert list(tmp_path.glob(".*.part")) == []
