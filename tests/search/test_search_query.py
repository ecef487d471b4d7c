"""The query side of search on a small tantivy index written here: pages of hits, a date range,
facets counted over every match, and a page's text history."""

import argparse
import hashlib
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tantivy

import harbors
from archive.simhash import simhash
from archive.timestamps import parse_time
from search import cli as search_cli
from search.domains import host_of, registered_domain
from search.errors import BadLinkQuery, BadQuery, PageNotIndexed
from search.history import compare, history
from search.index import Page, create, mark_built, new_writer, open_index, search, time_range

MUSEUM = "http://museum.test/"
# The museum's home page: its first text, a sentence changed, the same text again under another
# title, then a sentence added; captured under several spellings of its URL.
MUSEUM_VERSIONS = [
    (MUSEUM, "2018-04-01T09:00:00Z", "Museum", "The lighthouse opens at nine. Tickets cost five."),
    (
        "https://www.museum.test/",
        "2019-06-01T09:00:00Z",
        "Museum",
        "The lighthouse opens at nine. Tickets cost seven euros.",
    ),
    (
        "https://museum.test/",
        "2020-02-01T09:00:00Z",
        "The Museum",
        "The lighthouse opens at nine. Tickets cost seven euros.",
    ),
    (
        MUSEUM,
        "2021-03-01T09:00:00Z",
        "The Museum",
        "The lighthouse opens at nine. Tickets cost seven euros. The cafe serves fish soup.",
    ),
]

# A page whose title and text would be markup if they were not escaped.
EVIL_TITLE = '<script>alert("title")</script>'
EVIL_TEXT = 'zebra <img src=x onerror="alert(1)"> & zebra'


def _page(url: str, when: str, title: str, text: str, content_type: str = "text/html") -> Page:
    host = host_of(url)
    return Page(
        url=url,
        host=host,
        domain=registered_domain(host),
        time=parse_time(when),
        content_type=content_type,
        status=200,
        digest=hashlib.sha256(f"{title}\n{text}".encode()).hexdigest(),
        title=title,
        text=text,
        lang="en",
        outlinks=[],
        simhash=simhash(text),
    )


def _pages() -> list[Page]:
    pages = [_page(*version) for version in MUSEUM_VERSIONS]
    # Twelve keeper pages of alpha.test over 2019 and 2020, one on each side of New Year.
    for number in range(12):
        year = 2019 + number % 2
        pages.append(
            _page(
                f"http://www.alpha.test/keeper/{number:02d}",
                f"{year}-0{1 + number // 2}-10T12:00:00Z",
                f"Keeper {number}",
                f"The keeper of the lighthouse wrote entry {number} in his logbook.",
            )
        )
    pages.append(
        _page("http://alpha.test/eve", "2019-12-31T23:59:59Z", "Eve", "The keeper lit the lamp.")
    )
    pages.append(
        _page(
            "http://alpha.test/new-year",
            "2020-01-01T00:00:00Z",
            "New Year",
            "The keeper rang the bell.",
            "text/plain",
        )
    )
    # Then one keeper page in each of eleven other domains, two in beta.test.
    for number in range(11):
        pages.append(
            _page(
                f"http://site{number:02d}.test/",
                "2021-05-05T05:05:05Z",
                f"Site {number}",
                "A keeper of bees.",
                "application/xhtml+xml" if number == 0 else "text/html",
            )
        )
    pages.append(
        _page("http://news.bbc.co.uk/keeper", "2022-01-01T00:00:00Z", "BBC", "Keeper found.")
    )
    pages.append(_page("http://site00.test/other", "2022-02-02T00:00:00Z", "Bees", "Keeper."))
    pages.append(_page("http://evil.test/", "2023-01-01T00:00:00Z", EVIL_TITLE, EVIL_TEXT))
    return pages


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The index, written as a rebuild writes it."""
    made = tmp_path_factory.mktemp("index")
    writer = new_writer(create(made))
    for page in _pages():
        writer.add_document(page.document())
    writer.commit()
    writer.wait_merging_threads()
    mark_built(made, {})
    return made


@pytest.fixture(scope="module")
def index(folder: Path) -> tantivy.Index:
    return open_index(folder)


def test_pages_of_hits_follow_each_other(index: tantivy.Index) -> None:
    whole = search(index, "keeper", limit=100)
    assert whole.total == 27 and len(whole.hits) == 27
    seen: list[tuple[str, str]] = []
    for offset in range(0, 27, 10):
        page = search(index, "keeper", limit=10, offset=offset)
        assert (page.total, page.offset) == (27, offset)
        seen += [(hit.url, hit.time) for hit in page.hits]
    # Every hit once, in the order of the whole answer (ties fall alike on every page).
    assert sorted(seen) == sorted((hit.url, hit.time) for hit in whole.hits)
    assert len(set(seen)) == 27
    last = search(index, "keeper", limit=10, offset=20)
    assert len(last.hits) == 7
    beyond = search(index, "keeper", limit=10, offset=40)
    assert (beyond.total, beyond.hits) == (27, [])
    for limit, offset in [(0, 0), (10, -1)]:
        with pytest.raises(BadQuery, match="limit"):
            search(index, "keeper", limit=limit, offset=offset)


def test_facets_count_every_match_not_the_page(index: tantivy.Index) -> None:
    assert search(index, "keeper").facets == {}  # counted only when asked
    answer = search(index, "keeper", limit=1, facets=True)
    assert len(answer.hits) == 1
    facets = answer.facets
    # alpha.test: 12 keeper pages and two more; site00.test two; the others one each, and only
    # the ten most frequent, ties in alphabetical order.
    assert list(facets["domain"].items()) == [
        ("alpha.test", 14),
        ("site00.test", 2),
        ("bbc.co.uk", 1),
        *[(f"site{n:02d}.test", 1) for n in range(1, 8)],
    ]
    assert facets["year"] == {"2019": 7, "2020": 7, "2021": 11, "2022": 2}
    assert list(facets["year"]) == ["2019", "2020", "2021", "2022"]  # in time order
    assert facets["content_type"] == {
        "text/html": 25,
        "application/xhtml+xml": 1,
        "text/plain": 1,
    }
    assert sum(facets["year"].values()) == answer.total
    # A facet narrows the query as a clause of it.
    narrowed = search(index, 'keeper domain:"site00.test"', facets=True)
    assert narrowed.total == 2 and narrowed.facets["domain"] == {"site00.test": 2}
    assert search(index, "keeper year:2022", facets=True).facets["domain"] == {
        "bbc.co.uk": 1,
        "site00.test": 1,
    }
    plain = search(index, 'keeper content_type:"text/plain"')
    assert [hit.url for hit in plain.hits] == ["http://alpha.test/new-year"]
    nothing = search(index, "zeppelin", facets=True)
    assert (nothing.total, nothing.facets) == (0, {"domain": {}, "year": {}, "content_type": {}})


def test_a_date_range_keeps_the_versions_first_captured_in_it(index: tantivy.Index) -> None:
    def urls(start: str | None, end: str | None, query: str = "keeper") -> set[str]:
        first, last = time_range(start, end)
        return {hit.url for hit in search(index, query, 100, 0, first, last).hits}

    # `to=2019` is the whole of 2019, to its last second; `from=2020` starts at its first.
    in_2019 = urls("2019", "2019")
    assert "http://alpha.test/eve" in in_2019 and "http://alpha.test/new-year" not in in_2019
    assert len(in_2019) == 7
    assert "http://alpha.test/new-year" in urls("2020", None)
    assert "http://alpha.test/eve" not in urls("2020", None)
    assert urls("2019-12-31T23:59:59Z", "2020-01-01T00:00:00Z") == {
        "http://alpha.test/eve",
        "http://alpha.test/new-year",
    }
    # Months and days, with or without dashes; the filter adds nothing to the scores.
    assert urls("2019-06", "2019-06", "tickets") == {"https://www.museum.test/"}
    assert urls("201906", "20190601", "tickets") == {"https://www.museum.test/"}
    assert urls(None, "2019-02") == {
        "http://www.alpha.test/keeper/00",
        "http://www.alpha.test/keeper/02",
    }
    filtered = search(index, "keeper", 100, 0, *time_range("2022", None), facets=True)
    unfiltered = {(h.url, h.score) for h in search(index, "keeper", 100).hits}
    assert {(h.url, h.score) for h in filtered.hits} <= unfiltered
    assert filtered.facets["year"] == {"2022": 2} and filtered.total == 2
    assert time_range(None, "") == (None, None)
    assert time_range("2020-02", "2020-02") == (
        parse_time("20200201"),
        parse_time("20200301") - 1,
    )
    for start, end, said in [
        ("soon", None, "from='soon'"),
        (None, "2019-13", "to='2019-13'"),
        ("2021", "2020", "is after"),
        ("2019051", None, "from='2019051'"),
        (None, "201", "to='201'"),
    ]:
        with pytest.raises(BadQuery, match=said):
            time_range(start, end)


def test_a_text_history_lists_the_versions_and_what_changed(index: tantivy.Index) -> None:
    found = history(index, "https://www.museum.test/#top")  # any spelling of the URL
    assert found.complete
    assert [(v.url, v.time, v.title) for v in found.versions] == [
        (url, when, title) for url, when, title, _ in MUSEUM_VERSIONS
    ]
    first, changed, retitled, grown = found.versions
    assert first.change is None
    assert changed.change is not None and not changed.change.same_text
    assert changed.change.removed == ["Tickets cost five."]
    assert changed.change.added == ["Tickets cost seven euros."]
    assert (changed.change.words_added, changed.change.words_removed) == (2, 1)
    assert retitled.change is not None and retitled.change.same_text
    assert grown.change is not None and grown.change.added == ["The cafe serves fish soup."]
    assert (grown.change.words_added, grown.change.words_removed) == (5, 0)
    assert grown.change.summary() == "5 words added, 0 removed"
    assert len({v.digest for v in found.versions}) == 4
    listed = found.as_json()
    assert listed["versions"][1]["change"]["removed"] == ["Tickets cost five."]
    # Only the newest are read of a page with too many versions.
    newest = history(index, MUSEUM, most=2)
    assert not newest.complete and [v.time[:4] for v in newest.versions] == ["2020", "2021"]
    with pytest.raises(PageNotIndexed):
        history(index, "http://nowhere.test/")
    with pytest.raises(BadLinkQuery):
        history(index, "ftp://museum.test/")


def test_changes_between_two_texts() -> None:
    change = compare("One. Two is here. Three.", "One. Two is there! Three. Four?")
    assert (change.added, change.removed) == (["Two is there!", "Four?"], ["Two is here."])
    assert (change.words_added, change.words_removed) == (2, 1)
    long = "word " * 100
    assert compare("Short.", long).added[0].endswith(" …")
    assert compare("Same.", "Same.").same_text


def test_a_page_of_answers_as_json(index: tantivy.Index) -> None:
    answer = search(index, "keeper", limit=2, offset=2, facets=True).as_json("keeper")
    assert (answer["query"], answer["total"], answer["offset"]) == ("keeper", 27, 2)
    assert len(answer["hits"]) == 2 and set(answer["facets"]) == {"domain", "year", "content_type"}


@dataclass
class _Context:
    """What the search and api harbors use of the proxy: the index, and the key of the link
    tokens of the pages' links that set the client's date."""

    search_index: Path
    settings: harbors.ClientSettings = field(
        default_factory=lambda: harbors.ClientSettings(Path("/nonexistent"), b"test secret")
    )


async def harbor(index: Path, host: str, path: str, **query: str) -> tuple[int, str, str]:
    """Status, content type and body of GET http://{host}{path}?{query}, in this process."""
    request = harbors.HarborRequest(
        "127.0.0.1", "GET", host, path, query_pairs=tuple(query.items())
    )
    context: Any = _Context(index)
    answer = await harbors.answer(context, request)
    return answer.status, answer.content_type, answer.body.decode()


async def test_the_api_routes(folder: Path, tmp_path: Path) -> None:
    status, kind, body = await harbor(
        folder, "api.dlweb", "/search", q="keeper", offset="10", limit="5", to="2021"
    )
    answer = json.loads(body)
    assert (status, kind) == (200, "application/json")
    assert (answer["query"], answer["total"], answer["offset"]) == ("keeper", 25, 10)
    assert len(answer["hits"]) == 5
    assert answer["facets"]["year"] == {"2019": 7, "2020": 7, "2021": 11}
    assert answer["facets"]["domain"]["alpha.test"] == 14
    status, _, body = await harbor(folder, "api.dlweb", "/history", url=MUSEUM)
    versions = json.loads(body)["versions"]
    assert status == 200 and [v["time"][:4] for v in versions] == ["2018", "2019", "2020", "2021"]
    assert versions[1]["change"]["added"] == ["Tickets cost seven euros."]
    for path, query, expected, said in [
        ("/search", {}, 400, "give a query"),
        ("/search", {"q": '"east wing'}, 400, "cannot read the query"),
        ("/search", {"q": "keeper", "offset": "-1"}, 400, "offset='-1'"),
        ("/search", {"q": "keeper", "offset": "10001"}, 400, "offset='10001'"),
        ("/search", {"q": "keeper", "limit": "0"}, 400, "limit='0'"),
        ("/search", {"q": "keeper", "limit": "many"}, 400, "limit='many'"),
        ("/search", {"q": "keeper", "from": "soon"}, 400, "from='soon'"),
        ("/history", {}, 400, "give the URL"),
        ("/history", {"url": "mailto:keeper@museum.test"}, 400, "not http or https"),
        ("/history", {"url": "http://nowhere.test/"}, 404, "no version in the search index"),
    ]:
        status, _, body = await harbor(folder, "api.dlweb", path, **query)
        assert (status, said in json.loads(body)["error"]) == (expected, True), (path, body)
    for path, query in [("/search", {"q": "keeper"}), ("/history", {"url": MUSEUM})]:
        status, _, body = await harbor(tmp_path, "api.dlweb", path, **query)
        assert status == 503 and "dlweb search rebuild" in json.loads(body)["error"]


def _links(page: str, kind: str) -> list[str]:
    """The targets of the page's links of a class, unescaped."""
    return [html.unescape(href) for href in re.findall(f'class="{kind}" href="([^"]*)"', page)]


async def test_the_search_page(folder: Path, tmp_path: Path) -> None:
    status, kind, page = await harbor(folder, "search.dlweb", "/", q="keeper", limit="10")
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert "Hits 1 to 10 of 27 matching page versions" in page
    assert len(_links(page, "open")) == 10
    assert all(link.startswith("http://date.dlweb/set?at=") for link in _links(page, "open"))
    assert 'rel="next" href="/?q=keeper&amp;limit=10&amp;offset=10"' in page
    assert 'rel="prev"' not in page
    # A facet's link narrows the query by a clause.
    assert '<a href="/?q=keeper+domain%3A%22site00.test%22&amp;limit=10">site00.test</a>' in page
    assert '<a href="/?q=keeper+year%3A2022&amp;limit=10">2022</a> <span class="count">2' in page
    status, _, last = await harbor(folder, "search.dlweb", "/", q="keeper", offset="20")
    assert "Hits 21 to 27 of 27" in last and 'rel="prev" href="/?q=keeper&amp;offset=10"' in last
    assert 'rel="next"' not in last
    # Every archived string is escaped.
    status, _, evil = await harbor(folder, "search.dlweb", "/", q="zebra")
    assert status == 200 and "<script>" not in evil and "<img" not in evil
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;" in evil
    assert "<b>zebra</b>" in evil
    # A query or date that cannot be read is told in the page; without an index, what to run.
    status, _, broken = await harbor(folder, "search.dlweb", "/", q='"east wing')
    assert status == 400 and "cannot read the query" in broken and "Traceback" not in broken
    assert 'value="&quot;east wing"' in broken  # the query is kept in the box
    status, _, broken = await harbor(folder, "search.dlweb", "/", q="keeper", to="soon")
    assert status == 400 and "to=&#x27;soon&#x27;" in broken
    status, _, missing = await harbor(tmp_path, "search.dlweb", "/", q="keeper")
    assert status == 503 and "<code>dlweb search rebuild</code>" in missing
    status, _, empty = await harbor(folder, "search.dlweb", "/")
    assert status == 200 and '<input name="q"' in empty
    status, _, _ = await harbor(folder, "search.dlweb", "/nothing")
    assert status == 404


async def test_the_pages_about_a_url(folder: Path) -> None:
    status, _, page = await harbor(folder, "search.dlweb", "/history", url=MUSEUM)
    assert status == 200 and "4 versions in the index" in page
    assert "+ Tickets cost seven euros." in page and "− Tickets cost five." in page
    opened = _links(page, "open")
    assert opened[1].startswith(
        "http://date.dlweb/set?at=20190601090000&back=https%3A%2F%2Fwww.museum.test%2F&token="
    )
    status, _, page = await harbor(folder, "search.dlweb", "/similar", url=MUSEUM)
    assert status == 200 and "Pages similar to http://museum.test/" in page
    status, _, page = await harbor(folder, "search.dlweb", "/backlinks", url=MUSEUM)
    assert status == 200 and "0 archived pages link there" in page
    status, _, page = await harbor(folder, "search.dlweb", "/history", url="ftp://x.test/")
    assert status == 400 and "not http or https" in page


def test_the_command_line(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(*args: str) -> str:
        parser = argparse.ArgumentParser(prog="dlweb search")
        search_cli.add_arguments(parser)
        parsed = parser.parse_args(["--index", str(folder), *args])
        assert parsed.run(parsed) == 0
        return capsys.readouterr().out

    lines = run("keeper", "--offset", "25", "--from", "2019", "--to", "2022-01")
    assert (
        lines.splitlines()[0] == "1 of 26 matching page versions for 'keeper', after the first 25"
    )
    assert lines.splitlines()[1].startswith("26. ")
    answer = json.loads(run("keeper", "--limit", "1", "--json"))
    assert answer["total"] == 27 and answer["facets"]["content_type"]["text/plain"] == 1
    history_lines = run("--history", MUSEUM).splitlines()
    assert history_lines[0] == f"4 versions of {MUSEUM} in the index, oldest first"
    assert "   + Tickets cost seven euros." in history_lines
    assert json.loads(run("--history", MUSEUM, "--json"))["complete"] is True
