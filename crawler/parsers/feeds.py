"""RSS 2.0, RSS 1.0 (RDF) and Atom feeds: the items' links, titled, and their enclosures.

The HTML of descriptions is read for its links and text as a feed reader would show it.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from ..links import LinkKind
from .common import LinkSink, ParseResult, TextBuffer, collapse, local_name, xml_root
from .html import read_fragment
from .xml_reader import XmlReader

CONTENT_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml")
SUFFIXES = (".rss", ".atom")

_ITEMS = frozenset({"item", "entry"})
_DESCRIPTIONS = frozenset({"description", "summary", "content", "encoded"})
_PAGE_RELS = frozenset({"alternate", "related", "via"})
_FEED_RELS = frozenset(
    {"self", "next", "previous", "first", "last", "prev-archive", "next-archive"}
)
_MEDIA_NAMESPACE = "{http://search.yahoo.com/mrss/}"
_RDF_RESOURCE = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}resource"
_MARKUP = re.compile(r"<[A-Za-z!/]")


def sniff(head: bytes) -> bool:
    root = xml_root(head)
    return local_name(root) in ("rss", "feed") or root == "rdf:rdf"


def is_stream_type(media_type: str) -> bool:
    return media_type.strip().lower().startswith(("audio/", "video/"))


def _parent_name(element: Any) -> str:
    parent = element.getparent()
    return "" if parent is None else local_name(parent.tag)


def _is_permalink(guid: Any, text: str) -> bool:
    return guid.get("isPermaLink", "true") != "false" and text.startswith(("http:", "https:"))


def _inner(element: Any) -> str:
    """An element's content, as markup when it has children (Atom's xhtml content)."""
    children = "".join(etree.tostring(child, encoding="unicode") for child in element)
    return (element.text or "") + children


@dataclass
class _Item:
    element: Any
    title: str = ""
    links: list[int] = field(default_factory=list)


class FeedParser:
    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._text = TextBuffer()
        self._item: _Item | None = None
        self._reader = XmlReader(charset, self._sink, self._element)

    def feed(self, chunk: bytes) -> None:
        self._reader.feed(chunk)

    def close(self) -> ParseResult:
        self._reader.close()
        self._end_item()
        if self._text.cut:
            self._sink.problem("text cut at 2 MB")
        return self._sink.result(self._text.text().strip())

    def _element(self, event: str, element: Any) -> None:
        name = local_name(element.tag)
        if event == "start":
            if name in _ITEMS:
                self._end_item()
                self._item = _Item(element)
            return
        text = (element.text or "").strip()
        media = element.tag.startswith(_MEDIA_NAMESPACE)
        if name in _ITEMS:
            self._end_item()
            XmlReader.forget(element)
        elif name == "title" and not media:
            title = collapse(_inner(element))
            self._add_text(title)
            if self._item is not None and element.getparent() is self._item.element:
                self._item.title = title
        elif name in _DESCRIPTIONS and not media:
            self._description(element, _inner(element).strip())
        elif name == "link":
            self._link(element, text)
        elif name == "enclosure" or media and name == "content":
            self._enclosure(element)
        elif media and name == "thumbnail":
            self._sink.add(element.get("url", ""), LinkKind.COMPONENT, True)
        elif name == "url" and _parent_name(element) == "image" or name in ("logo", "icon"):
            self._sink.add(text, LinkKind.COMPONENT, True)
        elif name == "comments" or name == "guid" and _is_permalink(element, text):
            self._item_link(text, LinkKind.PAGE)
        elif name == "commentRss":
            self._item_link(text, LinkKind.FEED)

    def _link(self, element: Any, text: str) -> None:
        href = element.get("href")
        if href is None:  # RSS: the URL is the text
            self._item_link(text, LinkKind.PAGE)
            return
        rel = element.get("rel", "alternate").strip().lower()
        if rel == "enclosure":
            stream = is_stream_type(element.get("type", ""))
            self._item_link(href, LinkKind.STREAM if stream else LinkKind.PAGE)
        elif rel in _PAGE_RELS:
            self._item_link(href, LinkKind.PAGE)
        elif rel in _FEED_RELS:
            self._item_link(href, LinkKind.FEED)

    def _enclosure(self, element: Any) -> None:
        url = element.get("url") or element.get(_RDF_RESOURCE) or ""
        medium = element.get("medium", "").strip().lower()
        stream = is_stream_type(element.get("type", "")) or medium in ("audio", "video")
        self._item_link(url, LinkKind.STREAM if stream else LinkKind.PAGE)

    def _description(self, element: Any, text: str) -> None:
        if element.get("src"):  # Atom content kept elsewhere
            self._item_link(element.get("src"), LinkKind.PAGE)
        if _MARKUP.search(text):
            shown = TextBuffer()
            read_fragment(text, self._sink, shown)
            text = shown.text()
        self._add_text(text)

    def _item_link(self, ref: str, kind: LinkKind) -> None:
        index = self._sink.add(ref, kind, False)
        if index is not None and self._item is not None:
            self._item.links.append(index)

    def _end_item(self) -> None:
        if self._item is not None:
            for index in self._item.links:
                self._sink.retext(index, self._item.title)
            self._item = None

    def _add_text(self, text: str) -> None:
        text = collapse(text)
        if text:
            self._text.add(text + "\n")
