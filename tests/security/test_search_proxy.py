"""The search layer's pages behind the real proxy, asked what an archived page (or a hostile
client) can make a browser ask: full-text queries nested thousands deep, and CDX filters whose
regular expression Python's `re` would take hours over. The proxy lives on, refuses what passes
a limit with a 400 naming it, and answers its other clients meanwhile."""

import asyncio
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from deploy.testing.cluster import Cluster, clusters_in
from tests.browser import chromium
from tests.proxy.conftest import Client, Proxy, Version, archive, header_block, start_proxy
from tests.proxy.conftest import sessions as sessions  # noqa: F401  (a fixture used here)
from tests.search.conftest import dlweb

ANSWER_TIMEOUT = 30.0  # seconds: an answer later than this is one the proxy never gives
HTML = ("Content-Type", "text/html; charset=utf-8")
LIGHTHOUSE = "http://lighthouse.test/"
# A URL long enough that `ht(.|.)*Q` takes Python's re some 2**50 steps.
LONG = "http://cdx.test/" + "a" * 40
HOSTILE = "http://hostile.test/"
DEEP = "(" * 9000 + "lighthouse" + ")" * 9000


def _html(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def _search(query: str) -> str:
    return "http://api.dlweb/search?" + urllib.parse.urlencode({"q": query})


# A page that sends the deep query to both search pages as it loads, as any archived page can.
HOSTILE_PAGE = _html(
    "Hostile",
    f'<img src="http://api.dlweb/search?q={DEEP}">'
    f'<iframe src="http://search.dlweb/?q={DEEP}"></iframe>'
    f'<img src="{_search("b (-" * 3000 + "a" + ")" * 3000)}">',
)
VERSIONS = [
    Version(
        LIGHTHOUSE,
        "2019-03-01T10:00:00Z",
        200,
        header_block(200, "OK", HTML),
        _html("The lighthouse", "<p>The keeper lights the lamp at dusk.</p>"),
    ),
    Version(HOSTILE, "2019-03-01T10:00:00Z", 200, header_block(200, "OK", HTML), HOSTILE_PAGE),
    Version(LONG, "2019-03-01T10:00:00Z", 200, header_block(200, "OK", HTML), _html("a", "a")),
]


@dataclass
class Served:
    cluster: Cluster
    proxy: Proxy
    folder: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A one-node cluster with the pages above, their search index, and a proxy that reads it."""
    folder = tmp_path_factory.mktemp("served")
    with clusters_in(folder) as make:
        cluster = make(nodes=1, replicas=1)
        asyncio.run(archive(cluster, VERSIONS))
        config = str(cluster.config_path)
        done = dlweb("search", "rebuild", "-c", config, "--index", str(folder / "search"))
        assert done.returncode == 0, done.stdout + done.stderr
        proxy = start_proxy(cluster, folder / "proxy", folder / "proxy.log")
        try:
            yield Served(cluster, proxy, folder)
        finally:
            proxy.process.kill()  # a proxy stuck in a regular expression heeds no other signal
            proxy.process.wait(timeout=20)


async def _get(session: aiohttp.ClientSession, proxy: Proxy, url: str) -> tuple[int, str]:
    """The status and body of a GET through the proxy; fails when none comes in time."""
    timeout = aiohttp.ClientTimeout(total=ANSWER_TIMEOUT)
    async with session.get(url, proxy=proxy.url, timeout=timeout) as answer:
        return answer.status, await answer.text()


def _alive(proxy: Proxy) -> None:
    assert proxy.process.poll() is None, proxy.log.read_text()[-3000:]


async def test_a_page_sending_queries_nested_thousands_deep_leaves_the_proxy_serving(
    served: Served, sessions: Client
) -> None:
    chromium(served.proxy.url, served.folder / "profile", HOSTILE, "--dump-dom")
    _alive(served.proxy)
    status, body = await _get(sessions(), served.proxy, _search("lighthouse keeper"))
    assert status == 200, body
    assert LIGHTHOUSE in body


@pytest.mark.parametrize(
    "query, said",
    [
        ("(" * 750 + "a" + ")" * 750, "the query is 1,501 characters long; at most 1,000 are read"),
        ("(" * 17 + "a" + ")" * 17, "nests more than 16 levels deep"),
        ("b (-" * 16 + "a" + ")" * 16, "nests more than 16 levels deep"),
        ("b " + "NOT " * 17 + "a", "nests more than 16 levels deep"),
        ("title:(" * 17 + "a" + ")" * 17, "nests more than 16 levels deep"),
        (" ".join(["lamp"] * 65), "has 65 words; at most 64 are read"),
    ],
    ids=["750 groups", "17 groups", "negated terms", "NOTs", "field groups", "65 words"],
)
async def test_a_query_past_a_limit_is_refused_with_400_naming_it_on_both_search_pages(
    query: str, said: str, served: Served, sessions: Client
) -> None:
    client = sessions()
    status, body = await _get(client, served.proxy, _search(query))
    assert status == 400 and said in body, body
    page = "http://search.dlweb/?" + urllib.parse.urlencode({"q": query})
    status, body = await _get(client, served.proxy, page)
    assert status == 400 and said in body and "Traceback" not in body
    _alive(served.proxy)


def _cdx(*filters: str) -> str:
    params: list[tuple[str, Any]] = [("url", LONG), *(("filter", f) for f in filters)]
    return "http://api.dlweb/cdx?" + urllib.parse.urlencode(params)


@pytest.mark.parametrize(
    "pattern",
    ["ht(.|.)*Q", "http://cdx.test/(a+a+)+b", ".*(a|aa)*b", "(.*a){25}Q", "((a*)*)*Q"],
)
async def test_a_catastrophic_cdx_filter_is_answered_and_another_client_served_meanwhile(
    pattern: str, served: Served, sessions: Client
) -> None:
    asked = _get(sessions(), served.proxy, _cdx(f"~url:{pattern}"))
    other = _get(sessions("127.0.0.2"), served.proxy, "http://date.dlweb/")
    (status, lines), (page_status, _) = await asyncio.gather(asked, other)
    assert (status, lines) == (200, "")  # no capture matches, and RE2 says so at once
    assert page_status == 200
    status, lines = await _get(sessions(), served.proxy, _cdx("~url:http://cdx[.]test/a+$"))
    assert status == 200 and LONG in lines


@pytest.mark.parametrize(
    "filters, said",
    [
        (["~url:(h)\\1"], "bad regular expression: invalid escape sequence"),
        (["~url:(?=h)h"], "bad regular expression: invalid perl operator"),
        (["!~url:(?<!a)b"], "no backreference, no lookaround"),
        (["~url:" + "a" * 1000], "at most 1,000 are read"),
        (["url:a"] * 33, "33 filters: give at most 32"),
    ],
    ids=["backreference", "lookahead", "lookbehind", "1,006 characters", "33 filters"],
)
async def test_a_cdx_filter_re2_cannot_read_or_too_long_is_refused_with_400(
    filters: list[str], said: str, served: Served, sessions: Client
) -> None:
    status, body = await _get(sessions(), served.proxy, _cdx(*filters))
    assert status == 400 and said in body, body
    _alive(served.proxy)
