"""The direct front: the archive at pywb's archival URLs, from a real proxy process started with
--direct, asked by a plain HTTP client with no proxy setting."""

import asyncio
import gzip
import hashlib
import json
import re
import socket
from collections.abc import Callable, Iterator

import aiohttp
import lxml.html
import pytest
from multidict import CIMultiDictProxy
from passlib.apache import HtpasswdFile

from archive.timestamps import format_http_date, parse_time
from deploy.testing.cdx_toolkit import iterate
from deploy.testing.cluster import Cluster
from deploy.testing.memento_clients import memento_info, memento_list
from deploy.testing.ports import free_port
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)

from .conftest import (
    Proxy,
    Version,
    archive,
    header_block,
    run_proxy_to_its_end,
    start_proxy,
)
from .test_banner import NAVIGATION
from .test_proxy import LOST, MOVED, NEW, OLD, PAGE, fetch
from .test_streaming import stored_copies

QUERIED = Version(
    "http://old.example/find?q=lamp&page=2",
    "2021-03-04T05:06:07Z",
    200,
    header_block(200, "OK", ("Content-Type", "text/plain")),
    b"found: the lamp",
)
LARGE = Version(
    "http://old.example/film.webm",
    "2021-05-05T00:00:00Z",
    200,
    header_block(200, "OK", ("Content-Type", "video/webm")),
    bytes(range(256)) * 8192,  # 2 MiB: streamed from its node, not read whole
)
ZIPPED = Version(
    "http://old.example/zipped.html",
    "2022-01-01T00:00:00Z",
    200,
    header_block(200, "OK", ("Content-Type", "text/html"), ("Content-Encoding", "gzip")),
    gzip.compress(b"<html><body>a compressed page</body></html>", mtime=0),
)
_LINK = re.compile(r'<([^>]+)>; rel="([^"]+)"(?:; type="[^"]+")?(?:; datetime="([^"]+)")?')


def _links(header: str) -> dict[str, tuple[str, str]]:
    return {rel: (uri, when) for uri, rel, when in _LINK.findall(header)}


def _date(version: Version) -> str:
    return format_http_date(parse_time(version.date))


@pytest.fixture(scope="module")
def front(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Proxy]]:
    """The root of the front's collection, and the proxy that runs it (the module's tests only
    read from it)."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, [OLD, NEW, MOVED, LOST, QUERIED, LARGE]))
    folder = tmp_path_factory.mktemp("front")
    port = free_port()
    proxy = start_proxy(
        cluster, folder / "proxy", folder / "proxy.log", "--direct", f"127.0.0.1:{port}"
    )
    yield f"http://127.0.0.1:{port}/web", proxy
    proxy.stop()


async def _get(url: str, method: str = "GET", **headers: str) -> tuple[int, dict, bytes]:
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.request(method, url, headers=sent, allow_redirects=False) as answer,
    ):
        return answer.status, answer.headers, await answer.read()


async def test_a_memento_is_its_archived_answer_at_an_address_of_its_own(front) -> None:
    root, _ = front
    status, headers, body = await _get(f"{root}/20200101000000id_/{PAGE}")
    assert (status, body, headers["X-Version"]) == (200, OLD.body, "old")
    assert headers["Content-Type"] == "text/html"
    assert headers["Memento-Datetime"] == _date(OLD)
    links = _links(headers["Link"])
    assert links["original"] == (PAGE, "")
    assert links["timegate"] == (f"{root}/{PAGE}", "")
    assert links["timemap"] == (f"{root}/timemap/link/{PAGE}", "")
    assert links["memento"] == (f"{root}/20200101000000/{PAGE}", _date(OLD))
    assert links["next memento"] == (f"{root}/20220101000000/{PAGE}", _date(NEW))
    # Every modifier answers the bytes as they are: the front never rewrites.
    for modifier in ("", "mp_", "if_", "js_"):
        status, _, body = await _get(f"{root}/20220101000000{modifier}/{PAGE}")
        assert (status, body) == (200, NEW.body), modifier
    status, headers, body = await _get(f"{root}/20200101000000id_/{PAGE}", "HEAD")
    assert (status, body, headers["Content-Length"]) == (200, b"", str(len(OLD.body)))


async def test_a_time_that_is_not_a_capture_s_redirects_to_the_closest(front) -> None:
    root, _ = front
    status, headers, _ = await _get(f"{root}/2019id_/{PAGE}")
    assert (status, headers["Location"]) == (302, f"{root}/20200101000000id_/{PAGE}")
    status, headers, _ = await _get(f"{root}/20211231/{PAGE}")
    assert (status, headers["Location"]) == (302, f"{root}/20220101000000/{PAGE}")
    # The archived redirect is the memento's own answer, sent as it was.
    status, headers, _ = await _get(f"{root}/20210101000000id_/{MOVED.url}")
    assert (status, headers["Location"]) == (301, PAGE)


async def test_urls_with_queries_and_large_bodies_come_whole(front) -> None:
    root, _ = front
    status, _, body = await _get(f"{root}/20210304050607id_/{QUERIED.url}")
    assert (status, body) == (200, QUERIED.body)
    status, headers, body = await _get(f"{root}/20210505000000id_/{LARGE.url}")
    assert status == 200 and headers["Content-Length"] == str(len(LARGE.body))
    assert hashlib.sha256(body).digest() == hashlib.sha256(LARGE.body).digest()


async def test_the_url_alone_is_its_timegate(front) -> None:
    root, _ = front
    july = "Wed, 01 Jul 2020 00:00:00 GMT"
    status, headers, _ = await _get(f"{root}/{PAGE}", Accept_Datetime=july)
    assert (status, headers["Location"]) == (302, f"{root}/20200101000000/{PAGE}")
    assert headers["Vary"] == "accept-datetime"
    assert _links(headers["Link"])["original"] == (PAGE, "")
    status, headers, _ = await _get(f"{root}/{PAGE}")  # no date: the latest
    assert (status, headers["Location"]) == (302, f"{root}/20220101000000/{PAGE}")
    status, _, body = await _get(f"{root}/{PAGE}", Accept_Datetime="last tuesday")
    assert status == 400 and b"HTTP date" in body


async def test_the_timemaps_list_every_memento_by_its_uri_m(front) -> None:
    root, _ = front
    status, headers, body = await _get(f"{root}/timemap/link/{PAGE}")
    assert (status, headers["Content-Type"]) == (200, "application/link-format")
    listed = _LINK.findall(body.decode())
    assert listed[:3] == [
        (PAGE, "original", ""),
        (f"{root}/timemap/link/{PAGE}", "self", ""),
        (f"{root}/{PAGE}", "timegate", ""),
    ]
    # Each memento by its URI-M, each with the rel `memento` as pywb lists them.
    assert listed[3:] == [
        (f"{root}/20200101000000/{PAGE}", "memento", _date(OLD)),
        (f"{root}/20220101000000/{PAGE}", "memento", _date(NEW)),
    ]
    status, _, body = await _get(f"{root}/timemap/json/{PAGE}")
    assert status == 200
    assert [line.split(b'"timestamp": "')[1][:14] for line in body.splitlines()] == [
        b"20200101000000",
        b"20220101000000",
    ]
    for cdx in (f"{root}/cdx", f"{root.rsplit('/', 1)[0]}/cdx"):
        status, _, body = await _get(f"{cdx}?url={PAGE}&output=text&fl=timestamp")
        assert (status, body) == (200, b"20200101000000\n20220101000000\n")


async def test_the_proxy_names_each_memento_by_its_uri_m(front, sessions) -> None:
    root, proxy = front
    status, headers, body = await fetch(sessions(), proxy, PAGE)
    assert (status, body) == (200, NEW.body)
    assert headers["Content-Location"] == f"{root}/20220101000000/{PAGE}"
    links = _links(headers["Link"])
    assert links["memento"] == (f"{root}/20220101000000/{PAGE}", _date(NEW))
    assert links["prev memento"] == (f"{root}/20200101000000/{PAGE}", _date(OLD))
    assert links["timegate"] == (PAGE, "")  # in proxy mode the URL is its own time gate
    assert links["timemap"][0] == f"{root}/timemap/link/{PAGE}"


BAD_ADDRESSES = [
    (f"/web/123456789012345id_/{PAGE}", 400, b"15 digits"),
    (f"/web/20201340000000id_/{PAGE}", 400, b"not a valid"),
    ("/web/2020id_/about/page", 400, b"not an absolute URL"),
    ("/web/2020id_/ftp://old.example/", 400, b"http and https"),
    ("/web/timemap/xml/http://old.example/", 400, b"TimeMap formats"),
    ("/cdx?url=http://old.example/&matchType=sideways", 400, b"matchType"),
    (f"/other/2020id_/{PAGE}", 404, b"no collection"),
    ("/web/2020id_/http://never.example/", 404, b"never.example"),
    ("/web/timemap/link/http://never.example/", 404, b"never.example"),
]


async def test_bad_addresses_get_a_clear_4xx(front) -> None:
    root, _ = front
    for path, status, said in BAD_ADDRESSES:
        got, headers, body = await _get(root.rsplit("/", 1)[0] + path)
        assert (got, said in body) == (status, True), (path, body)
        assert headers["Content-Type"].startswith(("text/plain", "application/json")), path


async def test_the_front_is_read_only(front) -> None:
    root, _ = front
    status, headers, _ = await _get(f"{root}/2020id_/{PAGE}", "POST")
    assert (status, headers["Allow"]) == (405, "GET, HEAD")


async def test_memento_cli_lists_every_memento_by_its_uri_m(front) -> None:
    root, _ = front
    listed = await asyncio.to_thread(memento_list, f"{root}/20200101000000/{PAGE}")
    assert listed == [
        f"2020-01-01 00:00:00 {root}/20200101000000/{PAGE}",
        f"2022-01-01 00:00:00 {root}/20220101000000/{PAGE}",
    ]


async def test_memento_client_follows_the_timegate_to_the_closest_memento(front) -> None:
    root, _ = front
    found = await asyncio.to_thread(
        memento_info, f"{root}/", f"{root}/20220101000000/{PAGE}", "2020-07-01T00:00:00"
    )
    assert found["original"] == PAGE
    mementos = found["mementos"]
    assert mementos["closest"] == [f"{root}/20200101000000/{PAGE}", "2020-01-01T00:00:00"]
    assert mementos["first"] == mementos["closest"]
    assert mementos["last"] == [f"{root}/20220101000000/{PAGE}", "2022-01-01T00:00:00"]


async def test_a_proxy_that_asks_for_a_password_has_a_front_that_does_too(
    cluster_factory, proxy_factory, tmp_path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [NEW])
    users = HtpasswdFile(str(tmp_path / "users.htpasswd"), new=True)
    users.set_password("researcher", "long enough secret")
    users.save()
    port = free_port()
    proxy_factory(
        cluster, "--auth", str(tmp_path / "users.htpasswd"), "--direct", f"127.0.0.1:{port}"
    )
    memento = f"http://127.0.0.1:{port}/web/20220101000000id_/{PAGE}"
    status, headers, _ = await _get(memento)
    assert (status, headers["WWW-Authenticate"]) == (401, 'Basic realm="dlweb"')
    wrong = aiohttp.encode_basic_auth("researcher", "guess")
    assert (await _get(memento, Authorization=wrong))[0] == 401
    right = aiohttp.encode_basic_auth("researcher", "long enough secret")
    assert (await _get(memento, Authorization=right))[::2] == (200, NEW.body)


async def test_cdx_toolkit_lists_from_the_front_and_fetches_each_capture_there(front) -> None:
    """cdx-toolkit's own client, paging the front's CDX API and fetching each capture from its
    `{timestamp}id_/` URL (it quotes the URL whole: `http%3A//...`)."""
    root, _ = front
    base = root.rsplit("/", 1)[0]
    done = await asyncio.to_thread(iterate, f"{base}/cdx", PAGE, 1, None, root)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(line["timestamp"], line["content_sha256"]) for line in lines] == [
        ("20200101000000", hashlib.sha256(OLD.body).hexdigest()),
        ("20220101000000", hashlib.sha256(NEW.body).hexdigest()),
    ]


async def test_a_range_of_a_memento_is_those_bytes_with_206_and_content_range(front) -> None:
    root, _ = front
    size = len(NEW.body)
    for mode in ("id_", ""):
        memento = f"{root}/20220101000000{mode}/{PAGE}"
        status, headers, body = await _get(memento, Range="bytes=6-11")
        assert (status, body) == (206, NEW.body[6:12]), mode
        assert headers["Content-Range"] == f"bytes 6-11/{size}"
        assert headers["Content-Length"] == "6"
        status, headers, body = await _get(memento, Range="bytes=-4")
        assert (status, body, headers["Content-Range"]) == (
            206,
            NEW.body[-4:],
            f"bytes {size - 4}-{size - 1}/{size}",
        )
    memento = f"{root}/20220101000000id_/{PAGE}"
    # As the proxy answers them: a range past the end is a 416, disjoint ranges the whole body.
    status, headers, body = await _get(memento, Range=f"bytes={size}-")
    assert (status, headers["Content-Range"], body) == (416, f"bytes */{size}", b"")
    status, headers, body = await _get(memento, Range="bytes=0-1,5-6")
    assert (status, body, headers["Accept-Ranges"]) == (200, NEW.body, "bytes")
    status, headers, body = await _get(memento, "HEAD", Range="bytes=0-9")
    assert (status, headers["Content-Length"], body) == (206, "10", b"")


async def test_a_range_of_a_large_content_is_read_from_its_node_over_that_span_only(
    cluster_factory, proxy_factory
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [LARGE])
    # A byte outside the span, damaged: a whole read would end on a wrong hash.
    (stored,) = stored_copies(cluster, LARGE.body)
    with open(stored, "r+b") as out:
        out.seek(len(LARGE.body) - 1)
        out.write(bytes([LARGE.body[-1] ^ 0xFF]))
    port = free_port()
    proxy_factory(cluster, "--direct", f"127.0.0.1:{port}")
    memento = f"http://127.0.0.1:{port}/web/20210505000000id_/{LARGE.url}"
    size = len(LARGE.body)
    status, headers, body = await _get(memento, Range="bytes=1000000-1199999")
    assert (status, body) == (206, LARGE.body[1_000_000:1_200_000])
    assert headers["Content-Range"] == f"bytes 1000000-1199999/{size}"
    assert headers["Content-Length"] == "200000"


async def test_the_banner_is_on_browser_mode_html_mementos_when_on_and_never_on_id_(
    cluster_factory, proxy_factory, tmp_path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    await archive(cluster, [OLD, NEW, ZIPPED])
    on, off = free_port(), free_port()
    proxy_factory(cluster, "--direct", f"127.0.0.1:{on}", "--direct-banner")
    proxy_factory(cluster, "--direct", f"127.0.0.1:{off}", data=tmp_path / "off")
    root = f"http://127.0.0.1:{on}/web"
    status, headers, body = await _get(f"{root}/20200101000000/{PAGE}", **NAVIGATION)
    assert status == 200 and b'id="dlweb-banner"' in body
    assert headers["Content-Length"] == str(len(body))
    assert headers["Cache-Control"] == "no-store"
    page = lxml.html.fromstring(body)
    assert page.xpath('//a[@rel="next"]/@href') == [f"{root}/20220101000000/{PAGE}"]
    assert page.xpath('//a[text()="hide the bar"]/@href') == [f"{root}/20200101000000id_/{PAGE}"]
    assert page.xpath("//iframe") == []  # the coherence figure is the proxy's
    start = body.index(b'<div id="dlweb-banner">')
    end = body.index(b"</script>", start) + len(b"</script>")
    assert body[:start] + body[end:] == OLD.body
    # `id_`, another modifier, a load that is not a page's, a compressed page: as archived.
    for memento, headers_sent, archived in (
        (f"{root}/20200101000000id_/{PAGE}", NAVIGATION, OLD.body),
        (f"{root}/20200101000000mp_/{PAGE}", NAVIGATION, OLD.body),
        (f"{root}/20200101000000/{PAGE}", {"Accept": "*/*"}, OLD.body),
        (f"{root}/20220101000000/{ZIPPED.url}", NAVIGATION, ZIPPED.body),
        (f"http://127.0.0.1:{off}/web/20200101000000/{PAGE}", NAVIGATION, OLD.body),
    ):
        status, _, body = await _get(memento, **headers_sent)
        assert (status, body) == (200, archived), memento


def test_a_taken_direct_port_ends_the_proxy_with_one_clear_line(cluster_factory, tmp_path) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_proxy_to_its_end(
            cluster.config_path, tmp_path / "proxy", "--direct", f"127.0.0.1:{port}"
        )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"python -m proxy: error: the direct front cannot listen on 127.0.0.1:{port}:"
        " Address already in use"
    ]


async def test_the_front_s_cdx_answers_carry_the_harbors_guard_headers(front, sessions) -> None:
    root, proxy = front
    query = f"cdx?url={PAGE}&output=json"
    status, proxied, body = await fetch(sessions(), proxy, f"http://api.dlweb/{query}")
    got, direct, same = await _get(f"{root}/{query}")
    assert (status, got, same) == (200, 200, body)
    assert _fields(direct) == _fields(proxied)
    assert {"X-Content-Type-Options", "X-Frame-Options", "Content-Security-Policy"} <= set(direct)


def _fields(headers: CIMultiDictProxy[str]) -> list[tuple[str, str]]:
    """A harbor's header fields, in order, without those of the connection that sent them."""
    made_here = ("date", "server", "content-length", "connection", "keep-alive")
    return [(k.lower(), v) for k, v in headers.items() if k.lower() not in made_here]
