"""An archived payload that inflates to gigabytes ("a bomb") costs `api.dlweb/text` and `/links`
a few megabytes: its coding is undone with a cap, whatever the coding, and the harbor answers 422
saying so; a payload of a coding not read, or damaged, is a 422 too."""

import asyncio
import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import brotlicffi
import pytest
import zstandard

from deploy.testing.cluster import Cluster, clusters_in
from tests.proxy.conftest import Proxy, Version, archive, header_block, start_proxy, through
from tests.security.test_servers_fuzz import rss

INFLATED = 64 * 1024 * 1024  # the size of what each bomb inflates to: 8 times the cap
MAX_GROWTH = 96 * 1024 * 1024  # what the proxy may gain reading all of them
PAGE = b"<html><body><p>" + b"a" * 1000 + b"</p></body></html>"


def bombs() -> dict[str, tuple[str, bytes]]:
    """By name: a Content-Encoding and a payload that inflates to INFLATED bytes of HTML."""
    gzipped = gzip.compress(b"<p>" + b"\0" * INFLATED, compresslevel=9, mtime=0)
    deflated = zlib.compress(b"<p>" + b"\0" * INFLATED, 9)
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw_deflated = raw.compress(b"<p>" + b"\0" * INFLATED) + raw.flush()
    brotli = brotlicffi.compress(b"<p>" + b"\0" * INFLATED, quality=5)
    zstd = zstandard.ZstdCompressor(level=3).compress(b"<p>" + b"\0" * INFLATED)
    return {
        "gzip": ("gzip", gzipped),
        "x-gzip": ("x-gzip", gzipped),
        "deflate": ("deflate", deflated),
        "raw deflate": ("deflate", raw_deflated),
        "brotli": ("br", brotli),
        "zstd": ("zstd", zstd),
    }


def url_of(name: str) -> str:
    return f"http://bombs.example/{quote(name)}.html"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    folder: Path = tmp_path_factory.mktemp("bombs")
    with clusters_in(folder) as make:
        cluster: Cluster = make(nodes=1, replicas=1)
        versions = [
            Version(
                url_of(name),
                "2022-01-01",
                200,
                header_block(
                    200, "OK", ("Content-Type", "text/html"), ("Content-Encoding", coding)
                ),
                payload,
            )
            for name, (coding, payload) in bombs().items()
        ]
        for name, coding, payload in (
            ("damaged", "gzip", gzip.compress(PAGE)[:-20]),
            ("unknown", "compress", PAGE),
            ("plain", "identity", PAGE),
        ):
            header = header_block(
                200, "OK", ("Content-Type", "text/html"), ("Content-Encoding", coding)
            )
            versions.append(Version(url_of(name), "2022-01-01", 200, header, payload))
        asyncio.run(archive(cluster, versions))
        started = start_proxy(cluster, folder / "proxy", folder / "proxy.log")
        yield started
        started.stop()


@pytest.mark.parametrize("route", ["text", "links"])
def test_a_bomb_is_read_to_a_cap_and_refused_422(proxy: Proxy, route: str) -> None:
    before = rss(proxy.process.pid)
    for name in bombs():
        status, _, body = through(proxy, "GET", f"http://api.dlweb/{route}?url={url_of(name)}")
        assert status == 422 and b"inflates past" in body, (name, body[:300])
    assert rss(proxy.process.pid) - before < MAX_GROWTH


def test_a_damaged_or_unknown_coding_is_422_and_a_plain_page_is_read(proxy: Proxy) -> None:
    for name, said in (("damaged", b"not valid gzip"), ("unknown", b"compress-encoded")):
        status, _, body = through(proxy, "GET", f"http://api.dlweb/text?url={url_of(name)}")
        assert status == 422 and said in body, (name, body[:300])
    status, _, body = through(proxy, "GET", f"http://api.dlweb/text?url={url_of('plain')}")
    assert status == 200 and b"aaaa" in body
