"""XML sitemaps and sitemap indexes, and the Sitemap: lines of robots.txt.

The sitemap is read as it arrives by lxml's pull parser, without entity expansion or network
access, and each <url> is dropped from the tree once read, so that memory stays flat on the
50,000-URL files the protocol allows.
"""

import re
from typing import Any

from ..links import Link, LinkKind
from .common import LinkSink, ParseResult, local_name, xml_root
from .xml_reader import XmlReader

_ROOTS = frozenset({"urlset", "sitemapindex"})
_ENTRIES = frozenset({"url", "sitemap"})
_ROBOTS_SITEMAP = re.compile(r"\s*sitemap\s*:\s*(\S+)", re.I)


def sniff(head: bytes) -> bool:
    return local_name(xml_root(head)) in _ROOTS


def robots_sitemaps(base_url: str, robots_txt: bytes) -> list[Link]:
    """The sitemaps a robots.txt names, resolved against base_url."""
    sink = LinkSink(base_url)
    for line in robots_txt.decode("utf-8", "replace").splitlines():
        found = _ROBOTS_SITEMAP.match(line.partition("#")[0])
        if found:
            sink.add(found.group(1), LinkKind.PAGE, False)
    return sink.links


class SitemapParser:
    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._reader = XmlReader(charset, self._sink, self._element)

    def feed(self, chunk: bytes) -> None:
        self._reader.feed(chunk)

    def close(self) -> ParseResult:
        self._reader.close()
        return self._sink.result()

    def _element(self, event: str, element: Any) -> None:
        if event != "end":
            return
        name = local_name(element.tag)
        parent = element.getparent()
        within = local_name(parent.tag) if parent is not None else ""
        text = (element.text or "").strip()
        if name == "loc" and within in _ENTRIES:
            self._sink.add(text, LinkKind.PAGE, False)
        elif name == "loc" and within == "image":
            self._sink.add(text, LinkKind.COMPONENT, True)
        elif name == "content_loc" and within == "video":
            self._sink.add(text, LinkKind.STREAM, False)
        elif name == "link" and element.get("href"):
            self._sink.add(element.get("href"), LinkKind.PAGE, False)
        elif name in _ENTRIES:
            XmlReader.forget(element)
