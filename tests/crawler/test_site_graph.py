"""The site graph a crawl leaves beside its signature file, how it changed since the previous
crawl's, and the change split into new pages and new text in old pages."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archive.urlkey import canonical_url
from crawler.order import Signature
from crawler.page_changes import PageChanges
from crawler.report import chunk_signatures, words_of
from crawler.site_graph import MAX_PAGES, SiteGraph, graph_change, out_links, read_graph
from deploy.testing.web_server import WebServer, answering
from tests.crawler.conftest import run_crawler

# -- the graph, its file and its change ----------------------------------------------------------


def graph_of(*edges: tuple[str, str]) -> SiteGraph:
    graph = SiteGraph()
    for source, target in edges:
        graph.link(source, target)
    return graph


def test_the_graph_names_each_page_once_and_keeps_each_link_once() -> None:
    graph = graph_of(("/", "/a"), ("/", "/a"), ("/a", "/"), ("/a", "/a"))
    assert graph.to_json() == {"pages": ["/", "/a"], "edges": [[0, 1], [1, 0]], "truncated": False}
    assert out_links(graph) == {"/": ["/a"], "/a": ["/"]}


def test_a_graph_larger_than_its_caps_keeps_what_came_first_and_says_it_is_truncated() -> None:
    graph = SiteGraph()
    for i in range(MAX_PAGES + 5):
        graph.link("/", f"/{i}")
    assert len(graph.pages) == MAX_PAGES and graph.truncated
    assert (0, 1) in graph.edges


def test_the_graph_file_is_read_back_and_a_damaged_one_is_left_aside(tmp_path: Path) -> None:
    graph = graph_of(("/", "/a"), ("/a", "/b"))
    graph.write(tmp_path / "site.graph")
    assert read_graph(tmp_path / "site.graph") == graph
    assert read_graph(tmp_path / "none.graph") is None
    for damaged in ("[1]", '{"pages": ["/"], "edges": [[0, 7]]}', "{not json"):
        (tmp_path / "bad.graph").write_text(damaged)
        assert read_graph(tmp_path / "bad.graph") is None
    with pytest.raises(ValueError, match=r"edge \[0, 7\] is not two page numbers"):
        SiteGraph.from_json({"pages": ["/"], "edges": [[0, 7]]})


def test_the_change_counts_pages_and_links_added_and_removed() -> None:
    before = graph_of(("/", "/a"), ("/", "/b"), ("/a", "/b"))
    after = graph_of(("/", "/a"), ("/", "/c"), ("/a", "/c"))
    assert graph_change(before, after) == {
        "pages_added": 1,
        "pages_removed": 1,
        "edges_added": 2,
        "edges_removed": 2,
        "added": [["/", "/c"], ["/a", "/c"]],
        "removed": [["/", "/b"], ["/a", "/b"]],
    }


def signature(url: str, content: str, page: bool = True) -> Signature:
    return Signature(url, content, "h", 200, 1, 1, page=page)


def test_the_change_tells_new_pages_from_new_text_in_old_pages(tmp_path: Path) -> None:
    old_text, added = words_of("The reef survey counted fish. " * 8), words_of("A new wreck. " * 8)
    (tmp_path / "site.chunks").write_bytes(
        b"".join(s.to_bytes(8, "little") for s in chunk_signatures(old_text))
    )
    previous = {
        "/": signature("/", "home"),
        "/a": signature("/a", "a1"),
        "/gone": signature("/gone", "g"),
        "/img.png": signature("/img.png", "i", page=False),
    }
    changes = PageChanges.since(tmp_path / "site.signatures", previous)
    changes.page("/", "home")
    changes.page("/a", "a2")
    changes.page("/new", "n")
    changes.text("/", chunk_signatures(old_text))
    assert changes.to_json()["new_text_chunks_in_old_pages"] == 0  # the same text as before
    changes.text("/a", chunk_signatures(old_text + added))
    changes.text("/new", chunk_signatures(added))
    report = changes.to_json()
    assert report["new_pages"] == 1 and report["changed_pages"] == 1
    assert report["removed_pages"] == 1  # /gone; an image is not a page
    assert report["new_text_chunks_in_old_pages"] >= 1
    assert report["new_text_chunks_in_new_pages"] == len(chunk_signatures(added))


def test_without_the_previous_chunk_file_new_text_is_not_counted(tmp_path: Path) -> None:
    changes = PageChanges.since(tmp_path / "site.signatures", {"/": signature("/", "x")})
    changes.page("/", "y")
    changes.text("/", [1, 2, 3])
    assert changes.to_json()["changed_pages"] == 1
    assert changes.to_json()["new_text_chunks_in_old_pages"] is None


def test_a_damaged_previous_chunk_file_is_neither_compared_nor_carried(tmp_path: Path) -> None:
    (tmp_path / "site.chunks").write_bytes(b"\x01" * 12)  # not whole 8-byte signatures
    changes = PageChanges.since(tmp_path / "site.signatures", {"/": signature("/", "x")})
    changes.text("/", [1, 2, 3])
    carried: list[bytes] = []
    changes.carry(carried.append)
    assert carried == []
    assert changes.to_json()["new_text_chunks_in_old_pages"] is None


# -- a real crawl, and a re-crawl after one page changed its links -------------------------------


class ReefSite:
    """A small site whose page /a.html, from version 2, links to /c.html instead of /b.html and
    says something new."""

    def __init__(self) -> None:
        self.version = 1

    def pages(self) -> dict[str, str]:
        a_links = ["/b.html", "/"] if self.version == 1 else ["/c.html", "/"]
        a_text = "The coral reef survey maps the lagoon."
        if self.version > 1:
            a_text += " A storm moved the sand bars and a wreck appeared near the pass."
        return {
            "/": page("The coral reef survey counts fish every month.", ["/a.html", "/b.html"]),
            "/a.html": page(a_text, a_links),
            "/b.html": page("Divers of the coral reef survey log each dive.", ["/"]),
            "/c.html": page("The coral reef survey thanks its volunteers.", ["/"]),
        }

    async def handle(self, request: web.Request) -> web.Response:
        body = self.pages().get(request.path)
        if body is None:
            return web.Response(status=404, text="not here")
        return web.Response(text=body, content_type="text/html")


def page(text: str, links: list[str]) -> str:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return f"<!DOCTYPE html><title>Reef</title><p>{text}</p><ul>{anchors}</ul>"


@pytest.fixture
def reef() -> Iterator[tuple[ReefSite, str]]:
    site = ReefSite()
    with WebServer(answering(site.handle)) as server:
        yield site, server.base


def edges_of(report: dict[str, Any]) -> set[tuple[str, str]]:
    graph = json.loads(Path(report["graph"]["file"]).read_text())
    urls = graph["pages"]
    return {(urls[a], urls[b]) for a, b in graph["edges"]}


def test_a_crawl_leaves_its_site_graph_and_a_recrawl_its_change(
    cluster_factory: Any, reef: tuple[ReefSite, str], tmp_path: Path
) -> None:
    site, base = reef
    cluster = cluster_factory(nodes=1, replicas=1)
    home, a, b, c = (
        canonical_url(f"{base}{path}") for path in ("/", "/a.html", "/b.html", "/c.html")
    )
    work = tmp_path / "work"
    options = ("--delay", "0", "--timeout", "2")
    first = run_crawler(cluster, tmp_path / "first.json", work, *options, f"{base}/").report
    assert edges_of(first) == {(home, a), (home, b), (a, b), (a, home), (b, home)}
    assert first["graph"]["pages"] == 3 and first["graph"]["change"] is None
    assert first["change"] is None
    assert Path(first["graph"]["file"]).parent == Path(first["signature_file"]).parent
    assert first["text"]["phrases"][0] == {"phrase": "coral reef survey", "count": 3}

    site.version = 2
    second = run_crawler(
        cluster,
        tmp_path / "second.json",
        work,
        *options,
        "--previous",
        first["signature_file"],
        f"{base}/",
    ).report
    assert edges_of(second) == {(home, a), (home, b), (a, c), (a, home), (b, home), (c, home)}
    assert second["graph"]["change"] == {
        "pages_added": 1,
        "pages_removed": 0,
        "edges_added": 2,
        "edges_removed": 1,
        "added": [[a, c], [c, home]],
        "removed": [[a, b]],
    }
    change = second["change"]
    assert (change["new_pages"], change["changed_pages"], change["removed_pages"]) == (1, 1, 0)
    assert change["new_text_chunks_in_old_pages"] >= 1
    assert change["new_text_chunks_in_new_pages"] >= 1
