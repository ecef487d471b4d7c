"""The search indexer does not trust the archive. A payload that inflates to hundreds of
megabytes (in any Content-Encoding it reads) is cut at 5 MB with bounded memory; a page whose
charset is a codec of bytes is read; and a record its index cannot take (dated 9999 or 2500,
past what tantivy's dates hold), put straight into a structure file as a hostile archive could,
is set aside with its reason while the follower and a rebuild index the rest."""

import asyncio
import gzip
import hashlib
import json
import subprocess
import sys
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path

import brotlicffi
import pytest
import zstandard

from archive.header_block import parse_header_block
from archive.structure import Capture
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from deploy.testing.cluster import Cluster, clusters_in
from search.extract import extract
from search.index import open_index, search
from tests.proxy.conftest import Version, archive, header_block
from tests.search.conftest import dlweb
from tests.search.indexing import Indexer, hits

MB = 1024 * 1024
BOMB = 64 * MB  # what each bomb inflates to
HTML = ("Content-Type", "text/html; charset=utf-8")


def _compressed(coding: str, size: int) -> bytes:
    """`size` zero bytes in a Content-Encoding, compressed a megabyte at a time."""
    if coding == "br":
        brotli = brotlicffi.Compressor(quality=5)
        parts = [brotli.process(bytes(MB)) for _ in range(size // MB)]
        return b"".join(parts) + bytes(brotli.finish())
    if coding == "zstd":
        return zstandard.ZstdCompressor().compress(bytes(size))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    return b"".join(deflate.compress(bytes(MB)) for _ in range(size // MB)) + deflate.flush()


# Extracts a payload in a fresh process, and prints why it was left out and how much the
# process's peak memory grew meanwhile.
EXTRACT = """
import resource, sys, json
from archive.header_block import parse_header_block
from search.errors import NotIndexed
from search.extract import extract
coding, path = sys.argv[1], sys.argv[2]
header = parse_header_block(f"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nContent-Encoding: {coding}\\r\\n\\r\\n".encode())
payload = open(path, "rb").read()
plain = parse_header_block(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\n\\r\\n")
extract("http://x.test/", plain, b"<p>the modules and the language model loaded</p>")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    got = extract("http://x.test/", header, payload).text[:40]
except NotIndexed as exc:
    got = exc.reason
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps([got, grown * 1024]))
"""


def test_a_bomb_in_any_coding_is_cut_at_5_mb_in_bounded_memory(tmp_path: Path) -> None:
    for coding in ("br", "gzip", "deflate", "zstd"):
        bomb = tmp_path / f"bomb.{coding}"
        bomb.write_bytes(_compressed(coding, BOMB))
        done = subprocess.run(
            [sys.executable, "-c", EXTRACT, coding, str(bomb)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        reason, grown = json.loads(done.stdout)
        assert reason == "larger than 5 MB", (coding, reason)
        assert grown < 32 * MB, (coding, grown)
        page = b"<p>The keeper's logbook</p>"
        small = tmp_path / f"page.{coding}"
        small.write_bytes(_encoded(coding, page))
        done = subprocess.run(
            [sys.executable, "-c", EXTRACT, coding, str(small)], capture_output=True, text=True
        )
        assert json.loads(done.stdout)[0] == "The keeper's logbook", (coding, done.stdout)


@pytest.mark.parametrize("charset", ["rot13", "base64", "uu", "undefined", "idna", "punycode"])
def test_a_page_whose_charset_is_no_text_codec_is_read_as_utf8(charset: str) -> None:
    html = "<p>Le phare de l’île</p>".encode()
    said = parse_header_block(
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset={charset}\r\n\r\n".encode()
    )
    assert extract("http://x.test/", said, html).text == "Le phare de l’île"
    plain = parse_header_block(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
    meta = f'<meta charset="{charset}">'.encode() + html
    assert extract("http://x.test/", plain, meta).text == "Le phare de l’île"


def _encoded(coding: str, data: bytes) -> bytes:
    if coding == "br":
        return bytes(brotlicffi.compress(data))
    if coding == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    if coding == "gzip":
        return gzip.compress(data)
    return zlib.compress(data)


BEFORE = "http://museum.test/"
AFTER = "http://museum.test/after"
ROT13 = "http://museum.test/rot13"  # says its charset is rot13, a codec of bytes to bytes
BOMBED = "http://museum.test/bomb"
# Dates a hostile archive can write: tantivy's dates hold 1677 to 2262 only.
POISON = {
    "http://poison.test/9999": "9999-12-31T23:59:59Z",
    "http://poison.test/2500": "2500-06-01T00:00:00Z",
    "http://poison.test/1": "0001-01-01T00:00:00Z",
}


def _page(url: str, when: str, text: str, kind: tuple[str, str] = HTML) -> Version:
    body = f"<!doctype html><title>{text}</title><p>{text}</p>".encode()
    return Version(url, when, 200, header_block(200, "OK", kind), body)


def _send(cluster: Cluster, method: str, path: str, body: bytes) -> None:
    """A write to the cluster's storage node, with the cluster's token, as an archive's
    writer with the secret could make it."""
    node = next(iter(cluster.nodes.values()))
    request = urllib.request.Request(
        f"{node.url}{path}",
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {cluster.config.write_token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status in (200, 201), answer.read()


def _put_poison(cluster: Cluster) -> None:
    """Records the index node would refuse, appended to new structure files on the node."""
    header = header_block(200, "OK", HTML)
    body = b"<!doctype html><title>Poison</title><p>nightshade</p>"
    for data in (header, body):
        _send(cluster, "PUT", f"/content/{hashlib.sha256(data).hexdigest()}", data)
    for url, when in POISON.items():
        capture = Capture(
            parse_time(when),
            hashlib.sha256(body).hexdigest(),
            hashlib.sha256(header).hexdigest(),
            200,
        )
        append = {"url": url, "records": [capture.to_json()]}
        _send(cluster, "POST", f"/structure/{structure_name(url)}", json.dumps(append).encode())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with clusters_in(tmp_path_factory.mktemp("cluster")) as make:
        yield make(nodes=1, replicas=1)


def test_records_the_index_cannot_take_are_set_aside_and_the_pages_after_them_indexed(
    cluster: Cluster, tmp_path: Path
) -> None:
    asyncio.run(archive(cluster, [_page(BEFORE, "2019-03-01T10:00:00Z", "lighthouse")]))
    folder = tmp_path / "index"
    indexer = Indexer(cluster, folder).start()
    try:
        files = cluster.status()["files"]["structure"]
        _put_poison(cluster)
        cluster.wait_for(
            lambda status: status["files"]["structure"] == files + len(POISON),
            "the master to list the poisoned structure files (its change feed with them)",
        )
        rot13 = ("Content-Type", "text/html; charset=rot13")
        brotli = header_block(200, "OK", HTML, ("Content-Encoding", "br"))
        later = [
            _page(ROT13, "2019-03-02T10:00:00Z", "cormorant", rot13),
            Version(BOMBED, "2019-03-02T10:00:01Z", 200, brotli, _compressed("br", BOMB)),
            _page(AFTER, "2019-03-03T10:00:00Z", "albatross"),
        ]
        asyncio.run(archive(cluster, later))
        indexer.wait_until(lambda: bool(hits(folder, "albatross")), "the page after the poison")
        assert [url for url, _ in hits(folder, "cormorant")] == [ROT13]
        assert hits(folder, "nightshade") == [] and hits(folder, "bomb") == []
        about = dlweb("search", "--about", "--json", "--index", str(folder))
        assert about.returncode == 0, about.stderr
        told = json.loads(about.stdout)
        assert told["set_aside"] == len(POISON)
        assert {entry["url"] for entry in told["last_set_aside"]} == set(POISON)
        assert {entry["reason"] for entry in told["last_set_aside"]} == {
            "set aside: the index cannot take it"
        }
        assert "out of range" in told["last_set_aside"][0]["error"]
        assert "set aside" in indexer.log()
    finally:
        indexer.stop()
    rebuilt = tmp_path / "rebuilt"
    config = str(cluster.config_path)
    done = dlweb("search", "rebuild", "-c", config, "--index", str(rebuilt))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(POISON)} set aside: the index cannot take it" in done.stdout
    assert "1 larger than 5 MB" in done.stdout
    assert all(url in done.stdout for url in POISON)
    index = open_index(rebuilt)
    assert {hit.url for hit in search(index, "albatross OR cormorant OR lighthouse", 10).hits} == {
        AFTER, ROT13, BEFORE,
    }  # fmt: skip
