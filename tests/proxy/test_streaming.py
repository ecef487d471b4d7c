"""Large captures go from the storage node to the browser as they are read: whole bodies
checked on the way, a damaged copy cut short and reported, ranges read from the node, and the
proxy's memory flat whatever the size."""

import asyncio
import hashlib
import http.client
import json
import os
import ssl
from pathlib import Path
from urllib.parse import quote

from deploy.testing.cluster import Cluster, alive
from deploy.testing.waits import wait_until

from .conftest import Proxy, Version, archive, header_block

BIG = "http://media.example/big.bin"


def request(
    proxy: Proxy, url: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """One request through the proxy; the status, headers (lower-case names) and body read
    until the proxy ends or cuts it."""
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60)
    try:
        connection.request(method, url, headers=headers or {})
        answer = connection.getresponse()
        try:
            body = answer.read()
        except http.client.IncompleteRead as cut:
            body = cut.partial
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body
    finally:
        connection.close()


def big_capture(cluster: Cluster, size: int) -> bytes:
    body = os.urandom(size)
    header = header_block(200, "OK", ("Content-Type", "application/octet-stream"), ("ETag", '"v1"'))
    asyncio.run(archive(cluster, [Version(BIG, "2024-01-01", 200, header, body)]))
    return body


def stored_copies(cluster: Cluster, body: bytes) -> list[Path]:
    name = hashlib.sha256(body).hexdigest()
    return [
        path
        for node in cluster.nodes
        if (path := cluster.root / node / "content" / name[:2] / name[2:4] / name).exists()
    ]


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_a_large_capture_streams_whole_with_its_archived_headers(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=2, replicas=1)
    body = big_capture(cluster, 5 * 1024 * 1024 + 17)
    proxy = proxy_factory(cluster)
    status, headers, got = request(proxy, BIG)
    assert status == 200
    assert got == body
    assert headers["content-length"] == str(len(body))
    assert headers["content-type"] == "application/octet-stream"
    assert headers["accept-ranges"] == "bytes"
    assert "memento-datetime" in headers
    status, _, got = request(proxy, f"http://api.dlweb/capture?url={quote(BIG, safe='')}")
    assert status == 200
    assert json.loads(got)["content"] == hashlib.sha256(body).hexdigest()


def test_ranges_of_a_large_capture_are_read_from_the_node(cluster_factory, proxy_factory) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    body = big_capture(cluster, 3 * 1024 * 1024)
    proxy = proxy_factory(cluster)
    size = len(body)
    for asked, first, last in (
        ("bytes=0-0", 0, 0),
        ("bytes=1000000-1000999", 1_000_000, 1_000_999),
        ("bytes=-1", size - 1, size - 1),
        ("bytes=-70000", size - 70_000, size - 1),
        (f"bytes={size - 10}-", size - 10, size - 1),
    ):
        status, headers, got = request(proxy, BIG, {"Range": asked})
        assert status == 206, asked
        assert headers["content-range"] == f"bytes {first}-{last}/{size}", asked
        assert got == body[first : last + 1], asked
    status, headers, got = request(proxy, BIG, {"Range": f"bytes={size}-"})
    assert (status, headers["content-range"], got) == (416, f"bytes */{size}", b"")
    status, _, got = request(proxy, BIG, {"Range": "bytes=0-9", "If-Range": '"v1"'})
    assert (status, got) == (206, body[:10])
    status, _, got = request(proxy, BIG, {"Range": "bytes=0-9", "If-Range": '"v0"'})
    assert (status, got) == (200, body)
    status, headers, got = request(proxy, BIG, method="HEAD")
    assert (status, headers["content-length"], got) == (200, str(size), b"")


def test_a_damaged_copy_is_cut_short_and_the_next_request_reads_a_good_one(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=2, replicas=2)
    body = big_capture(cluster, 2 * 1024 * 1024 + 5)
    cluster.wait_settled(contents=2)
    damaged, good = stored_copies(cluster, body)
    with open(damaged, "r+b") as out:
        out.seek(len(body) // 2)
        out.write(bytes([body[len(body) // 2] ^ 0xFF]))
    good_node = cluster.nodes[good.relative_to(cluster.root).parts[0]]
    good_node.stop()
    proxy = proxy_factory(cluster)
    status, _, got = request(proxy, BIG)
    assert status == 200
    assert len(got) < len(body), "a damaged copy was sent whole"
    # The node is asked to check its copy once the connection is cut: it re-hashes it first.
    wait_until(lambda: not damaged.exists(), "the damaged copy to be quarantined")
    damaged_root = cluster.root / damaged.relative_to(cluster.root).parts[0]
    assert (damaged_root / "quarantine" / "content" / damaged.name).exists()
    good_node.start()
    cluster.wait_for(lambda s: alive(s) == 2, "the good node to come back")
    status, _, got = request(proxy, BIG)
    assert (status, got == body) == (200, True)


def test_replaying_a_gigabyte_raises_the_proxys_peak_memory_by_at_most_16_mib(
    cluster_factory, proxy_factory, tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    size = 1024 * 1024 * 1024
    piece = os.urandom(1024 * 1024)
    digest = hashlib.sha256()
    source = tmp_path / "big.bin"
    with open(source, "wb") as out:
        for _ in range(size // len(piece)):
            out.write(piece)
            digest.update(piece)
    name = digest.hexdigest()
    header = header_block(200, "OK", ("Content-Type", "video/mp4"))
    asyncio.run(_insert_file(cluster, name, source, header, size))
    source.unlink()
    proxy = proxy_factory(cluster)
    request(proxy, "http://media.example/warm-up.html")
    before = peak_rss_kib(proxy.process.pid)
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=120)
    connection.request("GET", "http://media.example/film.mp4")
    answer = connection.getresponse()
    assert answer.status == 200
    received = hashlib.sha256()
    total = 0
    while chunk := answer.read(1024 * 1024):
        received.update(chunk)
        total += len(chunk)
    connection.close()
    assert (total, received.hexdigest()) == (size, name)
    grown = peak_rss_kib(proxy.process.pid) - before
    assert grown <= 16 * 1024, f"the proxy's peak memory grew by {grown} KiB"


async def _insert_file(cluster: Cluster, name: str, source: Path, header: bytes, size: int) -> None:
    from archive.cluster import ClusterClient, NewCapture
    from archive.timestamps import parse_time

    header_name = hashlib.sha256(header).hexdigest()
    files: dict[str, bytes | Path] = {name: source, header_name: header}
    capture = NewCapture(
        "http://media.example/film.mp4",
        parse_time("2024-01-01"),
        name,
        header_name,
        200,
        size,
        len(header),
    )
    async with ClusterClient(cluster.config) as client:
        await client.insert([capture], files.__getitem__)


def test_a_large_capture_of_an_https_site_streams_inside_the_tunnel(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    body = os.urandom(3 * 1024 * 1024)
    header = header_block(200, "OK", ("Content-Type", "video/mp4"))
    url = "https://media.example/secure.mp4"
    asyncio.run(archive(cluster, [Version(url, "2024-01-01", 200, header, body)]))
    proxy = proxy_factory(cluster)
    trusting = ssl.create_default_context(cafile=str(proxy.data / "ca" / "mitmproxy-ca-cert.pem"))
    connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=trusting, timeout=60)
    connection.set_tunnel("media.example", 443)
    try:
        for asked, status, expected in ((None, 200, body), ("bytes=10-19", 206, body[10:20])):
            connection.request("GET", "/secure.mp4", headers={"Range": asked} if asked else {})
            answer = connection.getresponse()
            assert (answer.status, answer.read()) == (status, expected)
    finally:
        connection.close()
