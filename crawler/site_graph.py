"""The graph of a site's pages: which page links to which inside the site, kept in a file beside
the crawl's signature file (`.graph`), and how it changed since the previous crawl's.

The file is JSON: `{"pages": [URL, ...], "edges": [[FROM, TO], ...], "truncated": BOOL}`, a page
named by its place in `pages`. Both are capped (MAX_PAGES, MAX_EDGES): a larger site's graph is
the part met first, breadth-first, and says it is truncated.
"""

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive.atomic import atomic_write

__all__ = ["GRAPH_SUFFIX", "SiteGraph", "graph_change", "out_links", "read_graph"]

log = logging.getLogger(__name__)

GRAPH_SUFFIX = ".graph"
MAX_PAGES = 20_000
MAX_EDGES = 200_000
MAX_FILE = 64 * 1024 * 1024  # a previous graph file larger than this is not read
MAX_LISTED_CHANGES = 20  # added and removed links named in the report, each


@dataclass
class SiteGraph:
    pages: dict[str, int] = field(default_factory=dict)  # URL -> its id, in the order met
    edges: set[tuple[int, int]] = field(default_factory=set)
    truncated: bool = False

    def page(self, url: str) -> int | None:
        """The id of a page, given one if it is new and the graph has room; None if not."""
        found = self.pages.get(url)
        if found is None:
            if len(self.pages) >= MAX_PAGES:
                self.truncated = True
                return None
            found = self.pages[url] = len(self.pages)
        return found

    def link(self, source: str, target: str) -> None:
        if source == target:
            return
        if len(self.edges) >= MAX_EDGES:
            self.truncated = True
            return
        a, b = self.page(source), self.page(target)
        if a is not None and b is not None:
            self.edges.add((a, b))

    def url_edges(self) -> set[tuple[str, str]]:
        urls = list(self.pages)
        return {(urls[a], urls[b]) for a, b in self.edges}

    def to_json(self) -> dict[str, Any]:
        return {
            "pages": list(self.pages),
            "edges": [list(edge) for edge in sorted(self.edges)],
            "truncated": self.truncated,
        }

    def write(self, path: Path) -> None:
        # The edges as tuples, which JSON writes as arrays: no list made for each.
        data = {"pages": list(self.pages), "edges": sorted(self.edges), "truncated": self.truncated}
        atomic_write(path, json.dumps(data, separators=(",", ":")).encode())

    @classmethod
    def from_json(cls, data: Any) -> "SiteGraph":
        """A graph from its file's JSON; ValueError saying what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        pages, edges = data.get("pages"), data.get("edges")
        if not isinstance(pages, list) or not all(isinstance(url, str) for url in pages):
            raise ValueError("pages must be a list of URLs")
        if not isinstance(edges, list):
            raise ValueError("edges must be a list")
        graph = cls({url: i for i, url in enumerate(pages[:MAX_PAGES])})
        count = len(graph.pages)
        for edge in edges[:MAX_EDGES]:
            if type(edge) is not list or len(edge) != 2:
                raise ValueError(f"edge {str(edge)[:40]} is not two page numbers")
            a, b = edge
            if type(a) is not int or type(b) is not int or not (0 <= a < count and 0 <= b < count):
                raise ValueError(f"edge {str(edge)[:40]} is not two page numbers")
            graph.edges.add((a, b))
        graph.truncated = data.get("truncated") is True
        return graph


def read_graph(path: Path) -> SiteGraph | None:
    """The graph a previous crawl left, None (and a warning) when it is absent or unreadable: the
    change is then not measured, and the crawl goes on."""
    try:
        if path.stat().st_size > MAX_FILE:
            log.warning("%s: larger than %d bytes, not read", path, MAX_FILE)
            return None
        return SiteGraph.from_json(json.loads(path.read_bytes()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: the previous site graph is not read: %s", path, exc)
        return None


def graph_change(previous: SiteGraph, current: SiteGraph) -> dict[str, Any]:
    """Pages and links added and removed since the previous crawl, counted, and the first few
    links of each kind by URL."""
    before, after = previous.url_edges(), current.url_edges()
    added, removed = sorted(after - before), sorted(before - after)
    return {
        "pages_added": len(current.pages.keys() - previous.pages.keys()),
        "pages_removed": len(previous.pages.keys() - current.pages.keys()),
        "edges_added": len(added),
        "edges_removed": len(removed),
        "added": [list(edge) for edge in added[:MAX_LISTED_CHANGES]],
        "removed": [list(edge) for edge in removed[:MAX_LISTED_CHANGES]],
    }


def out_links(graph: SiteGraph) -> dict[str, list[str]]:
    """Each page's links, by URL."""
    urls = list(graph.pages)
    found: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(graph.edges):
        found[urls[a]].append(urls[b])
    return found
