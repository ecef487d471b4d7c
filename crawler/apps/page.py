"""A page read for its application's rules: parsed by lxml within bounds of size and elements.

The document is cut at MAX_DOCUMENT bytes before it is parsed; lxml keeps its own limits (no
huge trees: the nesting stops at 256 levels, a text node at 10 MB) and a page of more than
MAX_ELEMENTS elements is not read at all, so that every XPath the rules ask runs on a small tree.
"""

from dataclasses import dataclass

import lxml.html
from lxml import etree

MAX_DOCUMENT = 2 * 1024 * 1024
MAX_ELEMENTS = 100_000
MAX_REFERENCES = 5_000  # href/src values looked at to tell the software


@dataclass
class Page:
    """A parsed page, its URL and the names of the cookies that came with it."""

    url: str
    root: etree._Element
    cookies: frozenset[str]

    def generator(self) -> str:
        """The content of the page's generator meta tag, or an empty string."""
        for meta in self.root.iter("meta"):
            if (meta.get("name") or "").strip().lower() == "generator":
                return (meta.get("content") or "").strip()
        return ""

    def references(self) -> list[str]:
        """The first URLs the page links or loads (href, src, action), as written."""
        found: list[str] = []
        for element in self.root.iter(etree.Element):
            for name in ("href", "src", "action"):
                value = element.get(name)
                if value:
                    found.append(value)
            if len(found) >= MAX_REFERENCES:
                break
        return found

    def tags(self) -> set[str]:
        """The names of the elements the page holds."""
        return {e.tag for e in self.root.iter(etree.Element) if isinstance(e.tag, str)}


def read_page(
    url: str, document: bytes, headers: list[tuple[str, str]] | None = None
) -> Page | None:
    """The page, parsed; None when it is no HTML lxml can read or holds too many elements."""
    if not document.strip():
        return None
    parser = lxml.html.HTMLParser(
        recover=True, no_network=True, huge_tree=False, remove_comments=True, remove_pis=True
    )
    try:
        root = lxml.html.fromstring(document[:MAX_DOCUMENT], parser=parser)
    except (etree.ParserError, ValueError):
        return None
    if root is None:
        return None
    for count, _ in enumerate(root.iter(), 1):
        if count > MAX_ELEMENTS:
            return None
    return Page(url, root, cookie_names(headers or []))


def cookie_names(headers: list[tuple[str, str]]) -> frozenset[str]:
    """The names of the cookies a response sets."""
    names = set()
    for name, value in headers:
        if name.lower() == "set-cookie" and "=" in value:
            names.add(value.split("=", 1)[0].strip())
    return frozenset(names)
