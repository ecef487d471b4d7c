"""`dlweb search rebuild` and `dlweb search QUERY` on a real cluster with a small WARC imported."""

import json

import pytest

from archive.cluster import ClusterClient
from search.errors import BadQuery, NoIndex
from search.index import open_index, outlinks_of, search
from search.rebuild import rebuild

from . import pages
from .conftest import Archive, dlweb


def test_a_sentence_of_a_page_finds_that_page_first(archive: Archive) -> None:
    hits = archive.query(pages.SENTENCE.replace("'", " "))
    assert hits[0]["url"] == pages.MUSEUM
    assert hits[0]["time"] == "2019-03-01T10:00:00Z"
    assert hits[0]["title"] == "The Lighthouse Museum"
    # Its words are highlighted in the snippet; the blog, which shares some, comes after.
    snippet = hits[0]["snippet"]
    marked = {snippet[start:end].lower() for start, end in hits[0]["highlights"]}
    assert {"logbooks", "1887", "lighthouse"} <= marked
    assert "<b>logbooks</b>" in hits[0]["snippet_html"]


def test_an_unchanged_capture_is_one_version(archive: Archive) -> None:
    hits = archive.query("logbooks AND museum")
    assert [(h["url"], h["time"]) for h in hits] == [(pages.MUSEUM, "2019-03-01T10:00:00Z")]
    # The page as it was changed in 2021 is a version of its own.
    assert {h["time"][:4] for h in archive.query("title:lighthouse AND museum")} == {"2019", "2021"}


def test_a_phrase_matches_its_words_in_order(archive: Archive) -> None:
    hits = archive.query('"restoration of its copper roof"')
    assert [(h["url"], h["time"][:4]) for h in hits] == [(pages.MUSEUM, "2021")]
    assert archive.query('"roof copper"') == []
    # Boolean and field syntax: the 2019 home page and the blog share "lighthouse" and "keeper".
    both = {h["url"] for h in archive.query("lighthouse AND keeper AND year:2019")}
    assert both == {pages.MUSEUM, pages.BLOG}
    assert {h["url"] for h in archive.query("lighthouse keeper -title:museum")} == {pages.BLOG}


def test_what_is_indexed_of_each_capture(archive: Archive) -> None:
    assert archive.query(pages.HIDDEN_WORD) == []  # in a script
    assert archive.query("color") == []  # in a style sheet
    french = archive.query("registres gardien")
    assert [(h["url"], h["lang"]) for h in french] == [(pages.FRENCH, "fr")]
    assert "exposés" in french[0]["snippet"]  # read as Latin-1, as its meta says
    notes = archive.query("maintenance")
    assert [(h["url"], h["content_type"]) for h in notes] == [(pages.NOTES, "text/plain")]
    blog = archive.query("children")  # gzip-encoded
    assert [(h["url"], h["lang"]) for h in blog] == [(pages.BLOG, "en")]
    assert [h["url"] for h in archive.query('domain:"dlweb.test" AND host:"blog.dlweb.test"')] == [
        pages.BLOG
    ]
    index = open_index(archive.index)
    searcher = index.searcher()
    home = searcher.search(index.parse_query("year:2019 AND title:museum", ["title"]), 1).hits
    doc = searcher.doc(home[0][1])
    links = outlinks_of(doc)
    assert (pages.FRENCH, "En français") in links  # resolved, fragment dropped
    assert (pages.BLOG, "a visitor writes") in links
    assert doc.get_first("simhash") > 0


def test_the_command_line_shows_hits_best_first(archive: Archive) -> None:
    done = dlweb("search", "--index", str(archive.index), "copper", "roof", "--limit", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 of 1 matching page versions for 'copper roof'"
    assert lines[1] == "1. The Lighthouse Museum"
    assert lines[2].split() == [pages.MUSEUM, "2021-06-15T10:00:00Z"]
    assert "*copper* *roof*" in lines[3]
    # python -m search runs the same command on its own.
    done = dlweb("--index", str(archive.index), "--json", '"east wing"', module="search")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["total"] == 2
    assert {hit["url"] for hit in answer["hits"]} == {pages.MUSEUM, pages.BLOG}
    scores = [hit["score"] for hit in answer["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_a_broken_query_is_a_one_line_error(archive: Archive) -> None:
    done = dlweb("search", "--index", str(archive.index), '"east wing')
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("dlweb: error: cannot read the query"), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    index = open_index(archive.index)
    for broken in ["title:(lighthouse", "nosuchfield:lighthouse", "year:soon", "AND", "  "]:
        with pytest.raises(BadQuery) as raised:
            search(index, broken)
        assert "\n" not in str(raised.value) and ("query" in str(raised.value)), raised.value
    with pytest.raises(NoIndex, match="no search index in .*dlweb search rebuild"):
        open_index(archive.index.with_name("none"))


async def test_rebuilding_gives_the_same_answers(archive: Archive) -> None:
    queries = [pages.SENTENCE.replace("'", " "), '"east wing"', "lighthouse OR lantern", "phare"]
    before = [archive.query(q) for q in queries]
    async with ClusterClient(archive.cluster.config) as client:
        summary = await rebuild(client, archive.index)
    assert (summary.versions, summary.documents) == (10, 9)
    assert [archive.query(q) for q in queries] == before
    # Only the index is left in its folder's parent: no temporary or old folder.
    assert sorted(p.name for p in archive.index.parent.iterdir()) == ["index", "pages.warc.gz"]
