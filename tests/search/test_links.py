"""Backlinks and similar pages (`dlweb search --backlinks/--similar`, `http://api.dlweb/backlinks`
and `/similar`) over the archive the search tests share (conftest.py, pages.py)."""

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import harbors
from search import cli as search_cli
from search.backlinks import backlinks, similar
from search.errors import BadLinkQuery, PageNotIndexed
from search.index import open_index
from search.keys import bands, link_key

from . import pages
from .conftest import Archive, dlweb


@dataclass
class _Context:
    """What the api harbor uses of the proxy for /backlinks and /similar."""

    search_index: Path


async def api(index: Path, path: str, **query: str) -> tuple[int, dict[str, Any]]:
    """Status and JSON body of GET http://api.dlweb{path}?{query}."""
    request = harbors.HarborRequest(
        "127.0.0.1", "GET", "api.dlweb", path, query_pairs=tuple(query.items())
    )
    context: Any = _Context(index)
    answer = await harbors.answer(context, request)
    assert answer.content_type == "application/json"
    return answer.status, json.loads(answer.body)


def test_link_keys() -> None:
    # Both sides are keyed alike: scheme, www., fragment and query order do not count.
    assert link_key("https://www.Blog.dlweb.test/2019/visit#comments") == link_key(pages.BLOG)
    assert link_key("blog.dlweb.test/2019/visit") == "test,dlweb,blog)/2019/visit"
    assert link_key("http://a.test/p?b=2&a=1") == link_key("http://a.test/p?a=1&b=2")
    assert bands(0x0123_4567_89AB_CDEF) == ["0:cdef", "1:89ab", "2:4567", "3:0123"]


def test_backlinks_are_the_pages_that_link_there(archive: Archive) -> None:
    index = open_index(archive.index)
    found = backlinks(index, pages.BLOG)
    # The museum's home page (an absolute link, in both its versions: the latest is listed) and
    # the essay (a scheme-relative link to its www. spelling, with a fragment); not the essay's
    # copy, which links to the essay.
    assert [(b.url, b.time, b.title, b.anchors) for b in found] == [
        (pages.MUSEUM, "2021-06-15T10:00:00Z", "The Lighthouse Museum", ["a visitor writes"]),
        (pages.TIDES, "2019-05-10T09:00:00Z", "Life in the rock pools", ["our day out in March"]),
    ]
    # Another spelling of the URL asks the same.
    assert backlinks(index, "https://www.blog.dlweb.test/2019/visit#top") == found
    assert [b.url for b in backlinks(index, pages.TIDES)] == [pages.MIRROR]
    # A relative link with a fragment (fr/phare.html#top), and a link to a text file.
    french = backlinks(index, pages.FRENCH)
    assert [(b.url, b.anchors) for b in french] == [(pages.MUSEUM, ["En français"])]
    assert [b.url for b in backlinks(index, pages.NOTES)] == [pages.MUSEUM]
    assert backlinks(index, pages.MIRROR) == []  # nothing links to the copy
    assert backlinks(index, "http://nowhere.dlweb.test/") == []


def test_a_near_copy_is_the_most_similar_page(archive: Archive) -> None:
    index = open_index(archive.index)
    near = similar(index, pages.TIDES)
    assert (near.url, near.time) == (pages.TIDES, "2019-05-10T09:00:00Z")
    # The copy with one paragraph of eight rewritten; the other pages are 26 bits or more away.
    assert [(s.url, s.title) for s in near.pages] == [(pages.MIRROR, "Life in the rock pools")]
    assert 0 < near.pages[0].distance <= 12
    assert [s.url for s in similar(index, pages.MIRROR).pages] == [pages.TIDES]
    # The page's own versions are never listed: the museum's 2021 home page is like its 2019 one.
    assert similar(index, pages.MUSEUM).pages == []
    # With no threshold every other page is listed, the copy first, the unrelated far behind.
    everything = similar(index, pages.TIDES, max_distance=64).pages
    assert everything[0].url == pages.MIRROR and len(everything) == 7
    assert min(s.distance for s in everything[1:]) > 20
    # Through the bands only, as a larger index is searched: a copy of the same text (another
    # title) shares all four; the essay's copy, 12 bits apart, happens to share none, and is
    # missed (a page within 3 bits always shares one).
    menu = similar(index, pages.MENU, scan_all=0).pages
    assert [(s.url, s.distance) for s in menu] == [(pages.MENU_COPY, 0)]
    assert similar(index, pages.TIDES, scan_all=0).pages == []
    assert [s.url for s in similar(index, pages.MENU).pages] == [pages.MENU_COPY]
    with pytest.raises(PageNotIndexed, match="no version in the search index"):
        similar(index, pages.LOGO)  # archived, but an image
    with pytest.raises(BadLinkQuery, match="not http or https"):
        similar(index, "ftp://museum.dlweb.test/")


async def test_the_api_routes(archive: Archive, tmp_path: Path) -> None:
    status, body = await api(archive.index, "/backlinks", url=pages.BLOG)
    assert status == 200 and body["total"] == 2
    assert [b["url"] for b in body["backlinks"]] == [pages.MUSEUM, pages.TIDES]
    assert body["backlinks"][1] == {
        "url": pages.TIDES,
        "time": "2019-05-10T09:00:00Z",
        "title": "Life in the rock pools",
        "anchors": ["our day out in March"],
    }
    status, body = await api(archive.index, "/backlinks", url=pages.BLOG, limit="1")
    assert status == 200 and body["total"] == 2 and len(body["backlinks"]) == 1
    status, body = await api(archive.index, "/similar", url=pages.TIDES)
    assert status == 200 and [s["url"] for s in body["similar"]] == [pages.MIRROR]
    assert body["max_distance"] == 12 and len(body["simhash"]) == 16
    # Bad input.
    for path, query, expected, said in [
        ("/backlinks", {}, 400, "give the URL"),
        ("/similar", {"url": ""}, 400, "give the URL"),
        ("/similar", {"url": "mailto:keeper@dlweb.test"}, 400, "not http or https"),
        ("/backlinks", {"url": pages.BLOG, "limit": "0"}, 400, "limit='0'"),
        ("/similar", {"url": pages.LOGO}, 404, "no version in the search index"),
    ]:
        status, body = await api(archive.index, path, **query)
        assert (status, said in body["error"]) == (expected, True), (path, query, body)
    # No index built: 503, saying what to run.
    for path in ("/backlinks", "/similar"):
        status, body = await api(tmp_path, path, url=pages.BLOG)
        assert status == 503 and "dlweb search rebuild" in body["error"], body


def run_search(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`dlweb search ARGS` in this process (its parser and runner, as `dlweb` calls them)."""
    parser = argparse.ArgumentParser(prog="dlweb search")
    search_cli.add_arguments(parser)
    parsed = parser.parse_args(args)
    assert parsed.run(parsed) == 0
    return capsys.readouterr().out


def test_the_command_line(archive: Archive, capsys: pytest.CaptureFixture[str]) -> None:
    index = str(archive.index)
    # The command itself, once: JSON.
    done = dlweb("search", "--index", index, "--backlinks", pages.BLOG, "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["total"] == 2
    assert [(b["url"], b["anchors"]) for b in answer["backlinks"]] == [
        (pages.MUSEUM, ["a visitor writes"]),
        (pages.TIDES, ["our day out in March"]),
    ]
    answer = json.loads(run_search(capsys, "--index", index, "--similar", pages.MIRROR, "--json"))
    assert answer["url"] == pages.MIRROR
    assert [s["url"] for s in answer["similar"]] == [pages.TIDES]
    assert run_search(capsys, "--index", index, "--backlinks", pages.FRENCH).splitlines() == [
        f"1 of 1 archived pages linking to {pages.FRENCH}",
        "1. The Lighthouse Museum",
        f"   {pages.MUSEUM}  2021-06-15T10:00:00Z",
        '   "En français"',
    ]
    lines = run_search(capsys, "--index", index, "--similar", pages.TIDES).splitlines()
    assert lines[0].startswith(f"1 pages within 12 bits of {pages.TIDES} (its version of 2019-")
    assert lines[1:3] == [
        "1. Life in the rock pools",
        f"   {pages.MIRROR}  2020-01-20T16:45:00Z  12 bits apart",
    ]
    # Bad input: one line and exit status 2.
    done = dlweb("search", "--index", index, "--similar", pages.LOGO)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("dlweb: error: http://museum.dlweb.test/logo.png has no version")
    assert done.stderr.count("\n") == 1, done.stderr
    for args, said in [
        (["--backlinks", "ftp://x.dlweb.test/"], "not http or https"),
        (["--backlinks", pages.BLOG, "lighthouse"], "not both"),
        ([], "give a query"),
    ]:
        with pytest.raises(BadLinkQuery, match=said):
            run_search(capsys, "--index", index, *args)
    with pytest.raises(SystemExit):  # argparse's own message
        run_search(capsys, "--backlinks", pages.BLOG, "--similar", pages.BLOG)
    assert "not allowed with argument --backlinks" in capsys.readouterr().err
