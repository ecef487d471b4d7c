"""The title and the visible text of a parsed HTML page, read one way wherever the archive shows
or indexes a page's words (the search index, the `api.dlweb` text, a WACZ's page list).

The elements left out are those a browser never renders (the HTML standard's hidden elements:
the head, scripts, style sheets, templates, fallbacks for scripting, frames and plug-ins);
comments and processing instructions are left out too. A block element ends a word, as on the
screen, so the text of two paragraphs never runs together. The tree is read, never changed.
"""

from lxml import etree

# Elements whose content a browser does not display (their tail, the text after them, is shown).
HIDDEN = frozenset(
    {
        "head", "title", "script", "style", "template", "noscript", "noembed", "noframes",
        "iframe", "datalist", "rp",
    }
)  # fmt: skip
# Elements that end a word on the screen: their text must not run into the next one's.
BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
        "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "legend", "li", "main", "menu",
        "nav", "ol", "option", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
        "th", "thead", "tr", "ul",
    }
)  # fmt: skip


def title_of(root: etree._Element) -> str:
    """The text of the page's first <title>, blank runs folded; empty without one."""
    found = root.find(".//title")
    return "" if found is None else _fold(" ".join(found.itertext()))


def visible_text(root: etree._Element) -> str:
    """The text a reader sees in `root` (a document or one element): without the elements of
    HIDDEN, blocks kept apart by a space, blank runs folded to one space."""
    pieces: list[str] = []
    # Comments and processing instructions come as events of their own, their text unread.
    walker = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    for event, element in walker:
        if event == "start":
            if element.tag in HIDDEN:
                walker.skip_subtree()  # its "end" still comes, with its tail
                continue
            if element.tag in BLOCKS:
                pieces.append("\n")
            pieces.append(element.text or "")
            continue
        if event == "end" and element.tag in BLOCKS:
            pieces.append("\n")
        if element is not root:
            pieces.append(element.tail or "")
    return _fold("".join(pieces))


def _fold(text: str) -> str:
    """Blank runs folded to one space, none at either end."""
    return " ".join(text.split())
