"""The visible text of a page, one reading for the search index, the API and WACZ page lists."""

import lxml.html
from lxml import etree

from archive.visible_text import title_of, visible_text

PAGE = (
    "<!doctype html><html><head><title> The  museum </title><style>p { color: red }</style>"
    "<script>var inHead = 1;</script></head><body><h1>Wel<b>come</b></h1><!-- a comment -->"
    "<p>First<br>line</p><script>var secret = 2;</script>after the script"
    "<noscript>enable scripts</noscript><template><p>a template</p></template>"
    "<iframe>no frames</iframe><ul><li>one</li><li>two</li></ul><table><tr><td>a</td>"
    "<td>b</td></tr></table>last <i>words</i></body></html>"
)
TEXT = "Welcome First line after the script one two a b last words"


def test_hidden_elements_are_left_out_and_blocks_kept_apart() -> None:
    document = lxml.html.document_fromstring(PAGE)
    before = lxml.html.tostring(document)
    assert visible_text(document) == TEXT
    assert title_of(document) == "The museum"
    assert lxml.html.tostring(document) == before  # the tree is read, not changed


def test_a_tree_of_lxml_etree_reads_alike() -> None:
    root = etree.fromstring(PAGE.encode(), etree.HTMLParser())
    assert (title_of(root), visible_text(root)) == ("The museum", TEXT)


def test_one_element_is_read_without_its_tail() -> None:
    document = lxml.html.document_fromstring(PAGE)
    assert visible_text(document.find(".//ul")) == "one two"
    assert visible_text(lxml.html.fragment_fromstring("<p>no <b>title</b></p>")) == "no title"
    assert title_of(lxml.html.fragment_fromstring("<p>no title</p>")) == ""


def test_a_deep_page_is_read_without_recursion() -> None:
    deep = "<div>" * 2000 + "deep" + "</div>" * 2000  # deeper than Python recursion goes
    root = etree.fromstring(f"<html><body>{deep}</body></html>", etree.HTMLParser(huge_tree=True))
    assert visible_text(root) == "deep"
