"""Paging of the CDX API as pywb's zipnum index pages it (`showNumPages`, `page`, `pageSize`,
`showPagedIndex`), on a real cluster through `harbors.answer`, on the command line, and with
cdx-toolkit, a real client, paging through a real proxy process.

The cases are pywb's (its tests of the zipnum index): the page count's shape and default size,
the parameters it ignores, the error for a page past the last, empty answers, values that are
not whole numbers. The range holds 240 URL keys, so three blocks of BLOCK_KEYS (100, 100 and
40 keys); two keys have a second URL, one the last of a block and the other the first of the
next, so that a block that split a key's URLs would show.
"""

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from warcio.timeutils import timestamp_to_sec

from archive.cluster import ClusterClient, NewCapture
from archive.timestamps import parse_time
from archive.url_index import surt_key
from deploy.testing.cdx_toolkit import iterate
from deploy.testing.cluster import Cluster
from search import cdx
from search.errors import BadCdxQuery
from tests.master.conftest import module_cluster_factory  # noqa: F401  (a fixture)
from tests.proxy.conftest import start_proxy

from .cdx_api import Paged
from .conftest import dlweb

ITEMS = 240
BASE = "http://paging.test/item/"
RANGE = "paging.test/item/*"
FIRST_2019 = "20190101000000"


@dataclass(frozen=True)
class Shot:
    url: str
    timestamp: str
    status: int = 200


def _item_time(item: int) -> str:
    return f"20190101{item // 60:02d}{item % 60:02d}00"


def _shots() -> list[Shot]:
    """Each item once in 2019 (every fourth a 404), every fifth again in 2021; the keys of items
    99 and 100 under a second URL each; a page outside the range."""
    shots = []
    for item in range(ITEMS):
        url = f"{BASE}{item:03d}"
        shots.append(Shot(url, _item_time(item), 404 if item % 4 == 3 else 200))
        if item % 5 == 0:
            shots.append(Shot(url, f"2021060112{item % 60:02d}00"))
    shots.append(Shot("https://paging.test/item/099", "20200101000000"))
    shots.append(Shot("http://www.paging.test/item/100", "20200101000000"))
    shots.append(Shot("http://paging.test/about", FIRST_2019))
    return shots


SHOTS = _shots()
# Every capture of the range as (urlkey, timestamp, url), in pywb's order.
EXPECTED = sorted(
    (surt_key(shot.url), shot.timestamp, shot.url) for shot in SHOTS if "/item/" in shot.url
)


async def _insert(cluster: Cluster) -> None:
    bodies: dict[str, bytes] = {}
    captures = []
    for shot in SHOTS:
        body = f"<p>{shot.url} at {shot.timestamp}</p>".encode()
        kind = "text/html" if shot.status == 200 else "text/plain"
        head = f"HTTP/1.1 {shot.status} X\r\nContent-Type: {kind}\r\n\r\n".encode()
        content, header = hashlib.sha256(body).hexdigest(), hashlib.sha256(head).hexdigest()
        bodies[content], bodies[header] = body, head
        when = parse_time(shot.timestamp)
        captures.append(NewCapture(shot.url, when, content, header, shot.status, len(body)))
    async with ClusterClient(cluster.config) as client:
        await client.insert(captures, bodies.__getitem__)


@pytest.fixture(scope="module")
def paged(
    module_cluster_factory: Callable[..., Cluster],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Paged:
    """A one-node cluster with the shots inserted and the search index rebuilt."""
    cluster = module_cluster_factory(nodes=1, replicas=1)
    asyncio.run(_insert(cluster))
    index = tmp_path_factory.mktemp("paging") / "index"
    done = dlweb("search", "rebuild", "-c", str(cluster.config_path), "--index", str(index))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{ITEMS + 3} URLs in the URL-key index" in done.stdout, done.stdout
    return Paged(cluster, index)


def _triples(rows: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [(row["urlkey"], row["timestamp"], row["url"]) for row in rows]


# -- the arithmetic and the parameters, pure ----------------------------------------------------


def _parse(query: str) -> cdx.CdxQuery:
    return cdx.parse_query(parse_qsl(query, keep_blank_values=True))


def test_page_arithmetic() -> None:
    # pywb's sample index has 38 blocks: 4 pages of 10, 10 of 4.
    assert cdx.page_info(38, 10) == {"blocks": 38, "pages": 4, "pageSize": 10}
    assert cdx.page_info(38, 4) == {"blocks": 38, "pages": 10, "pageSize": 4}
    assert cdx.page_info(1, 10) == {"blocks": 1, "pages": 1, "pageSize": 10}
    assert cdx.page_info(0, 4) == {"blocks": 0, "pages": 0, "pageSize": 4}
    size = cdx.BLOCK_KEYS
    assert [cdx.block_count(keys) for keys in (0, 1, size, size + 1, 3 * size)] == [0, 1, 1, 2, 3]
    groups = [(f"k{n}", [f"u{n}"]) for n in range(size + 3)]
    blocks = cdx.cut_blocks(groups, 2 * size)
    assert [(b.number, b.offset, len(b.keys)) for b in blocks] == [
        (2, 2 * size, size),
        (3, 3 * size, 3),
    ]
    assert blocks[1].keys[0] == (f"k{size}", [f"u{size}"])
    assert str(cdx.invalid_page(10, 10)) == "Page 10 invalid: First Page is 0, Last Page is 9"


def test_paging_parameters() -> None:
    query = _parse("url=example.org/*")
    assert (query.page, query.page_size, query.paged) == (None, cdx.DEFAULT_PAGE_SIZE, False)
    assert cdx.DEFAULT_PAGE_SIZE == 10  # pywb's
    query = _parse("url=example.org/*&page=3&pageSize=4&showNumPages=true&showPagedIndex=1")
    assert (query.page, query.page_size, query.show_num_pages, query.show_paged_index) == (
        3, 4, True, True,
    )  # fmt: skip
    assert query.content_type == "application/json"
    assert _parse("url=x&pageSize=").page_size == 10  # empty: the default, as pywb's
    assert _parse("url=x&showPagedIndex=true").content_type == "text/plain"
    assert _parse("url=x&showPagedIndex=true&output=json").content_type == "text/x-ndjson"
    assert _parse(f"url=x&page={cdx.MAX_PAGE}&pageSize={cdx.MAX_PAGE_SIZE}").paged
    for name, value in [
        ("page", "x"), ("page", "-1"), ("page", ""), ("page", "1.5"), ("page", "²"),
        ("page", "9" * 40), ("page", str(cdx.MAX_PAGE + 1)),
        ("pageSize", "not-an-integer"), ("pageSize", "0"), ("pageSize", "-4"),
        ("pageSize", str(cdx.MAX_PAGE_SIZE + 1)), ("pageSize", "10000000000000000"),
    ]:  # fmt: skip
        with pytest.raises(BadCdxQuery, match=f"^{name}={re.escape(repr(value))}: give a whole"):
            _parse(f"url=example.org/*&{name}={value}")


# -- through the API, on the cluster --------------------------------------------------------------


async def test_the_number_of_pages(paged: Paged) -> None:
    pywb_like = {"blocks": 3, "pages": 2, "pageSize": 2}
    for query, expected in [
        (f"url={RANGE}", {"blocks": 3, "pages": 1, "pageSize": 10}),
        (f"url={RANGE}&pageSize=1", {"blocks": 3, "pages": 3, "pageSize": 1}),
        (f"url={RANGE}&pageSize=2", pywb_like),
        ("url=http://paging.test/item/&matchType=prefix&pageSize=2", pywb_like),
        # Filters, from and to, closest, reverse and limit change nothing.
        (f"url={RANGE}&pageSize=2&filter==status:200&filter=!~url:.*9$", pywb_like),
        (f"url={RANGE}&pageSize=2&from=2021&to=2021", pywb_like),
        (f"url={RANGE}&pageSize=2&closest=20190101000000&sort=reverse&limit=1", pywb_like),
        # The domain has the about page too: 241 keys, still three blocks.
        ("url=*.paging.test&pageSize=2", pywb_like),
        # An exact URL with captures: one block.
        ("url=paging.test/item/007", {"blocks": 1, "pages": 1, "pageSize": 10}),
        ("url=paging.test/item/099&pageSize=3", {"blocks": 1, "pages": 1, "pageSize": 3}),
        # Nothing found: no block, no page.
        ("url=paging.test/item/nothing&pageSize=4", {"blocks": 0, "pages": 0, "pageSize": 4}),
        ("url=*.nothing.test", {"blocks": 0, "pages": 0, "pageSize": 10}),
        ("url=paging.test/items/*", {"blocks": 0, "pages": 0, "pageSize": 10}),
    ]:
        status, kind, body = await paged.ask(query + "&showNumPages=true")
        assert (status, kind) == (200, "application/json"), (query, body)
        assert json.loads(body) == expected, query


async def test_the_pages_list_every_capture_once(paged: Paged) -> None:
    whole = await paged.lines(f"url={RANGE}")
    assert _triples(await paged.rows(f"url={RANGE}")) == EXPECTED
    for size, pages in [(1, 3), (2, 2), (10, 1)]:
        listed = []
        for page in range(pages):
            lines = await paged.lines(f"url={RANGE}&page={page}&pageSize={size}")
            assert lines, (size, page)
            assert await paged.lines(f"url={RANGE}&page={page}&pageSize={size}") == lines
            listed += lines
        assert listed == whole, size
        said = await paged.error(f"url={RANGE}&page={pages}&pageSize={size}")
        assert said == f"Page {pages} invalid: First Page is 0, Last Page is {pages - 1}"
    # A block ends after item 99's both URLs, the next begins with item 100's both.
    first = _triples(await paged.rows(f"url={RANGE}&page=0&pageSize=1"))
    second = _triples(await paged.rows(f"url={RANGE}&page=1&pageSize=1"))
    assert first == [row for row in EXPECTED if row[0] < "test,paging)/item/100"]
    assert {url for _, _, url in first[-2:]} == {BASE + "099", "https://paging.test/item/099"}
    assert {url for _, _, url in second[:3]} == {BASE + "100", "http://www.paging.test/item/100"}
    assert not {row[0] for row in first} & {row[0] for row in second}


async def test_options_apply_within_the_page(paged: Paged) -> None:
    page = f"url={RANGE}&page=1&pageSize=1"
    rows = await paged.rows(page)
    assert {row["urlkey"][-3:] for row in rows} == {f"{item}" for item in range(100, 200)}
    assert await paged.rows(page + "&filter=!status:200") == [
        row for row in rows if row.get("status") == "404"
    ]
    assert await paged.rows(page + "&from=2021&to=2021") == [
        row for row in rows if row["timestamp"].startswith("2021")
    ]
    assert await paged.rows(page + "&limit=5") == rows[:5]
    assert await paged.rows(page + "&sort=reverse&limit=3") == rows[::-1][:3]
    at = timestamp_to_sec("20210601124000")
    nearest = sorted(rows, key=lambda row: abs(at - timestamp_to_sec(row["timestamp"])))
    assert await paged.rows(page + "&closest=20210601124000&limit=4") == nearest[:4]
    text = await paged.lines(page + "&output=text&fields=timestamp,url")
    assert text == [f"{row['timestamp']} {row['url']}" for row in rows]
    links = await paged.lines(page + "&output=link&limit=1")
    assert links == [f'<{BASE}100>; rel="memento"; datetime="Tue, 01 Jan 2019 01:40:00 GMT"']


async def test_the_paged_index(paged: Paged) -> None:
    status, kind, body = await paged.ask(f"url={RANGE}&showPagedIndex=true&pageSize=2")
    assert (status, kind) == (200, "text/plain"), body
    # Item 100's first capture is its http URL's of 2019, before the www URL's of 2020.
    assert body.splitlines() == [
        f"test,paging)/item/000 {FIRST_2019}\turlkeys\t0\t100\t0",
        f"test,paging)/item/100 {_item_time(100)}\turlkeys\t100\t100\t1",
    ]
    status, kind, body = await paged.ask(
        f"url={RANGE}&showPagedIndex=true&pageSize=2&page=1&output=json"
    )
    assert (status, kind) == (200, "text/x-ndjson"), body
    assert [json.loads(line) for line in body.splitlines()] == [
        {
            "urlkey": f"test,paging)/item/200 {_item_time(200)}",
            "part": "urlkeys",
            "offset": 200,
            "length": 40,
            "lineno": 2,
        }
    ]
    said = await paged.error(f"url={RANGE}&showPagedIndex=true&pageSize=2&page=2")
    assert said == "Page 2 invalid: First Page is 0, Last Page is 1"
    exact = await paged.lines("url=paging.test/item/007&showPagedIndex=true")
    assert exact == [f"test,paging)/item/007 {_item_time(7)}\turlkeys\t0\t1\t0"]
    for nothing in ("url=paging.test/items/*", "url=paging.test/item/nothing"):
        assert await paged.lines(nothing + "&showPagedIndex=true") == []


async def test_an_exact_query_is_one_page(paged: Paged) -> None:
    whole = await paged.lines("url=paging.test/item/099")
    assert len(whole) == 2  # its http and https URLs
    assert await paged.lines("url=paging.test/item/099&page=0") == whole
    said = await paged.error("url=paging.test/item/099&page=1")
    assert said == "Page 1 invalid: First Page is 0, Last Page is 0"
    # Nothing found: every page is empty, as pywb answers a range without a block.
    for query in ("url=paging.test/item/nothing", "url=paging.test/items/*"):
        for page in (0, 3):
            assert await paged.lines(f"{query}&page={page}") == [], (query, page)


async def test_a_page_reads_its_blocks_only(paged: Paged) -> None:
    read: list[str] = []
    await paged.ask(f"url={RANGE}&showNumPages=true", read)
    assert read == []  # counted in the URL-key index alone
    await paged.ask(f"url={RANGE}&page=1&pageSize=1", read)
    second = {f"{BASE}{item}" for item in range(100, 200)} | {"http://www.paging.test/item/100"}
    assert sorted(read) == sorted(second)
    read.clear()
    await paged.ask(f"url={RANGE}&page=2&pageSize=1&limit=1", read)
    assert len(read) <= cdx.READS_IN_FLIGHT  # a limit stops the reading within the page too
    read.clear()
    await paged.ask(f"url={RANGE}&showPagedIndex=true&pageSize=2", read)
    assert sorted(read) == [BASE + "000", BASE + "100", "http://www.paging.test/item/100"]


def test_the_command_line(paged: Paged) -> None:
    options = ["--index", str(paged.index), "-c", str(paged.cluster.config_path)]
    done = dlweb("cdx", RANGE, *options, "--page", "2", "--page-size", "1", "--output", "text",
                 "--fields", "url")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        url for key, _, url in EXPECTED if key >= "test,paging)/item/2"
    ]
    done = dlweb("cdx", RANGE, *options, "--show-num-pages", "--page-size", "2")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"blocks": 3, "pages": 2, "pageSize": 2}
    done = dlweb("cdx", RANGE, *options, "--show-paged-index", "--page", "1", "--page-size", "2")
    assert done.stdout == f"test,paging)/item/200 {_item_time(200)}\turlkeys\t200\t40\t2\n"
    done = dlweb("cdx", RANGE, *options, "--page", "3", "--page-size", "1")
    assert done.returncode == 2
    assert done.stderr == "dlweb: error: Page 3 invalid: First Page is 0, Last Page is 2\n"
    done = dlweb("cdx", RANGE, *options, "--page-size", "0")
    assert done.returncode == 2
    assert done.stderr == "dlweb: error: pageSize='0': give a whole number from 1 to 50\n"


# -- a real client, through a real proxy ----------------------------------------------------------


def test_cdx_toolkit_pages_through_the_proxy(paged: Paged, tmp_path: Path) -> None:
    """cdx-toolkit's iterator asks page after page through the proxy until a 400: it ends, and
    lists every capture of the range once, in order."""
    proxy = start_proxy(
        paged.cluster, tmp_path / "proxy", tmp_path / "proxy.log",
        "--search-index", str(paged.index),
    )  # fmt: skip
    try:
        for size, pages in [(1, 3), (10, 1)]:
            done = iterate("http://api.dlweb/cdx", RANGE, size, proxy.url)
            assert done.returncode == 0, done.stderr[-3000:]
            got = [json.loads(line) for line in done.stdout.splitlines()]
            assert _triples(got) == EXPECTED, size
            asked = [int(page) for page in re.findall(r"'page': (\d+)", done.stderr)]
            assert asked == list(range(pages + 1)), done.stderr[-3000:]
            assert "giving up with status 400" in done.stderr
    finally:
        proxy.stop()
