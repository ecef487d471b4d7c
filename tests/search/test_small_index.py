"""Snippets, backlinks and finding the index, over a small index written directly, page by
page: the cases the shared archive's pages do not hold (text beyond ASCII, a page linking to
itself, a cluster's own folder)."""

import json
from pathlib import Path

import tantivy

from deploy.testing.cluster import write_cluster_config
from search.backlinks import backlinks
from search.index import Page, create, mark_built, new_writer, search

from .conftest import dlweb


def _page(url: str, text: str, outlinks: tuple[tuple[str, str], ...] = ()) -> Page:
    return Page(
        url=url,
        host="a.test",
        domain="a.test",
        time=1_600_000_000_000_000,
        content_type="text/html",
        status=200,
        digest="0" * 64,
        title="",
        text=text,
        lang="en",
        outlinks=outlinks,
        simhash=0,
    )


def _index(folder: Path, *pages: Page) -> tantivy.Index:
    index = create(folder)
    writer = new_writer(index)
    for page in pages:
        writer.add_document(page.document())
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def test_the_highlights_mark_the_words_matched_after_characters_beyond_ascii(
    tmp_path: Path,
) -> None:
    text = "Le phare a été rallumé en 1887 ; a computer’s memory while the keeper’s logbooks stay"
    index = _index(tmp_path / "index", _page("http://a.test/", text))
    hit = search(index, "memory logbooks").hits[0]
    marked = [hit.snippet[start:end] for start, end in hit.highlights]
    assert marked == ["memory", "logbooks"]


def test_a_page_linking_to_itself_is_not_its_own_backlink(tmp_path: Path) -> None:
    home, about = "http://a.test/", "http://a.test/about"
    index = _index(
        tmp_path / "index",
        _page(home, "home", ((f"{home}#top", "top"), (about, "about us"))),
        _page(about, "about", ((f"{about}#team", "the team"), (home, "home"))),
    )
    assert [(b.url, b.anchors) for b in backlinks(index, home)] == [(about, ["home"])]
    assert [(b.url, b.anchors) for b in backlinks(index, about)] == [(home, ["about us"])]


def test_a_command_given_a_configuration_uses_the_index_beside_it(tmp_path: Path) -> None:
    """`dlweb up --data DIR --search` keeps DIR/dlweb.yaml and DIR/search: `dlweb search -c
    DIR/dlweb.yaml` searches there, wherever it runs from, and --index still names another."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    write_cluster_config(cluster / "dlweb.yaml")
    _index(cluster / "search", _page("http://a.test/", "the keeper's logbooks"))
    mark_built(cluster / "search", {})
    found = dlweb("search", "-c", str(cluster / "dlweb.yaml"), "logbooks", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["url"] for hit in json.loads(found.stdout)["hits"]] == ["http://a.test/"]
    elsewhere = tmp_path / "elsewhere"
    named = dlweb("search", "-c", str(cluster / "dlweb.yaml"), "--index", str(elsewhere), "x")
    assert (named.returncode, named.stdout) == (2, "")
    assert str(elsewhere) in named.stderr
