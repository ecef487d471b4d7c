"""The search harbor in a real browser: pages captured into a real cluster, their index built by
`dlweb search rebuild`, and headless Chromium searching at `http://search.dlweb/` through the
proxy, narrowing by a facet, opening a hit at its date and reading its text history."""

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode, urljoin

import lxml.html

from deploy.testing.cluster import Cluster
from tests.browser import chromium
from tests.search.conftest import dlweb

from .conftest import Proxy, Version, archive, header_block

NEWS = "http://www.harbor.test/news"
ABOUT = "http://harbor.test/about.txt"
SHOP = "http://lantern.test/"
OLD_NEWS = "The harbour lamp was lit by hand every evening by the keeper."
NEW_NEWS = "The harbour lamp is now lit by a timer, and the keeper has retired."
HTML = ("Content-Type", "text/html; charset=utf-8")


def _html(title: str, text: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body><p>{text}</p></body></html>".encode()


VERSIONS = [
    # The news page, captured twice with a change between: two versions of one URL.
    Version(
        NEWS, "2018-04-01T09:00:00Z", 200, header_block(200, "OK", HTML), _html("News", OLD_NEWS)
    ),
    Version(
        NEWS, "2022-09-01T09:00:00Z", 200, header_block(200, "OK", HTML), _html("News", NEW_NEWS)
    ),
    Version(
        ABOUT,
        "2019-05-01T09:00:00Z",
        200,
        header_block(200, "OK", ("Content-Type", "text/plain")),
        b"About the harbour lamp: it was built in 1890.\n",
    ),
    Version(
        SHOP,
        "2020-02-02T09:00:00Z",
        200,
        header_block(200, "OK", HTML),
        _html("Lantern shop", "Copies of the harbour lamp, in brass."),
    ),
    Version(
        "http://lantern.test/hours",
        "2020-02-02T09:00:05Z",
        200,
        header_block(200, "OK", HTML),
        _html("Hours", "Open on Sundays."),
    ),
]


def _search_page(query: str) -> str:
    return "http://search.dlweb/?" + urlencode({"q": query})


def _hits(dom: lxml.html.HtmlElement) -> list[dict[str, str]]:
    """Each hit's URL, date and the targets of its links, in the page's order."""
    found = []
    for hit in dom.xpath('//li[@class="hit"]'):
        row = {
            "url": hit.xpath('.//span[@class="url"]')[0].text_content(),
            "date": hit.xpath('.//span[@class="date"]')[0].text_content(),
        }
        for link in hit.xpath('.//span[@class="links"]/a'):
            row[link.get("class")] = urljoin("http://search.dlweb/", link.get("href"))
        found.append(row)
    return found


def _facet(dom: lxml.html.HtmlElement, name: str) -> dict[str, int]:
    """A facet's values and counts as the page shows them."""
    counts = {}
    for item in dom.xpath(f'//ul[@id="facet-{name}"]/li'):
        value = item.xpath("./a | ./b")[0].text_content()
        counts[value] = int(item.xpath('./span[@class="count"]')[0].text_content().replace(",", ""))
    return counts


def _status(proxy: Proxy, url: str) -> int:
    """The status the proxy answers a GET of `url` with."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    try:
        with opener.open(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def _date(proxy: Proxy) -> str | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    with opener.open("http://api.dlweb/date", timeout=10) as answer:
        date: str | None = json.load(answer)["date"]
        return date


def test_chromium_searches_and_opens_a_hit_at_its_date(
    cluster_factory: Callable[..., Cluster], proxy_factory: Callable[..., Proxy], tmp_path: Path
) -> None:
    cluster = cluster_factory(nodes=1, replicas=1)
    asyncio.run(archive(cluster, VERSIONS))
    index = tmp_path / "search"  # where the proxy looks, beside its --data folder
    done = dlweb("search", "rebuild", "-c", str(cluster.config_path), "--index", str(index))
    assert done.returncode == 0, done.stdout + done.stderr
    proxy = proxy_factory(cluster)
    profile = tmp_path / "profile"

    def load(url: str) -> lxml.html.HtmlElement:
        return lxml.html.fromstring(chromium(proxy.url, profile, url, "--dump-dom"))

    # The best page first: the old news has all three words, the new one only "keeper".
    ranked = _hits(load(_search_page("keeper OR evening OR hand")))
    assert [(h["url"], h["date"]) for h in ranked] == [
        (NEWS, "2018-04-01T09:00:00Z"),
        (NEWS, "2022-09-01T09:00:00Z"),
    ]

    # The facets count every match, and one of them narrows the query.
    page = load(_search_page('"harbour lamp"'))
    assert "Hits 1 to 4 of 4 matching page versions" in page.text_content()
    assert _facet(page, "domain") == {"harbor.test": 3, "lantern.test": 1}
    assert _facet(page, "year") == {"2018": 1, "2019": 1, "2020": 1, "2022": 1}
    assert _facet(page, "content_type") == {"text/html": 3, "text/plain": 1}
    narrowing = page.xpath('//ul[@id="facet-domain"]/li/a')[1]
    assert narrowing.text_content() == "lantern.test"
    narrowed = load(urljoin("http://search.dlweb/", narrowing.get("href")))
    assert [h["url"] for h in _hits(narrowed)] == [SHOP]
    assert _facet(narrowed, "domain") == {"lantern.test": 1}

    # Without a date the proxy replays the latest capture; the old version's "open at this date"
    # sets the client's date to it, and the proxy replays that capture.
    assert NEW_NEWS in load(NEWS).text_content()
    hits = {(h["url"], h["date"][:4]): h for h in _hits(page)}
    opened = load(hits[(NEWS, "2018")]["open"])
    assert OLD_NEWS in opened.text_content() and NEW_NEWS not in opened.text_content()
    assert _date(proxy) == "2018-04-01T09:00:00Z"
    assert OLD_NEWS in load(NEWS).text_content()  # the date stays for the pages browsed next
    assert NEW_NEWS in load(hits[(NEWS, "2022")]["open"]).text_content()
    assert _date(proxy) == "2022-09-01T09:00:00Z"

    # The text history of the news page: both versions, and the sentence that changed.
    history = load(hits[(NEWS, "2018")]["history"]).text_content()
    assert "2 versions in the index" in history
    assert f"+ {NEW_NEWS}" in history and f"− {OLD_NEWS}" in history

    # A query that does not parse: a message in the page, and 400.
    broken = _search_page('"harbour lamp')
    said = load(broken).text_content()
    assert "cannot read the query" in said and "Traceback" not in said
    assert _status(proxy, broken) == 400
    assert _status(proxy, _search_page('"harbour lamp"')) == 200
