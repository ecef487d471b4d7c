"""Reading an XML document as it arrives, for the sitemap and feed parsers.

The charset is decided here (a BOM, the one given, the XML declaration, else utf-8) and the text
handed to lxml as utf-8, entity references fixed first (see EntityFixer). lxml's pull parser
recovers from errors and is made safe by pull_parser, which the docx parser uses too.
"""

import re
from collections.abc import Callable
from typing import Any

from lxml import etree

from .common import COMMENT, SNIFF_SIZE, EntityFixer, LinkSink, local_name
from .incoming import Incoming

# Called with "start" or "end" and the element; the element's text is complete at its end.
Handler = Callable[[str, Any], None]

_TAIL_SIZE = 200
_DECLARED_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._:\-]+)")


def pull_parser(*, recover: bool, encoding: str | None = None) -> Any:
    """lxml's pull parser of start and end events, safe with any document: it expands no entity,
    loads no DTD, opens no network connection, refuses huge trees and keeps no comment or
    processing instruction."""
    return etree.XMLPullParser(
        events=("start", "end"),
        encoding=encoding,
        recover=recover,
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


class XmlReader(Incoming):
    def __init__(self, charset: str | None, sink: LinkSink, handler: Handler) -> None:
        self._charset = charset
        self._handler = handler
        self._fixer = EntityFixer()
        super().__init__(sink, "XML", SNIFF_SIZE, pull_parser(recover=True, encoding="utf-8"))
        self._root = ""  # the root element's local name, once seen
        self._tail = ""  # the last characters, to tell a cut document

    def close(self) -> None:
        self._parse(self._fixer.fix(self._rest(), final=True))
        self._close_lxml()
        self._events()
        if not self._root:
            self._sink.problem("no XML element found")
        elif not re.search(
            rf"</(?:[\w.\-]+:)?{re.escape(self._root)}\s*>\s*+(?:{COMMENT}\s*+)*+\Z", self._tail
        ):
            self._sink.problem(f"XML document cut: no end tag for <{self._root}>")

    @staticmethod
    def forget(element: Any) -> None:
        """Drops an element already read, and those before it, to keep memory flat."""
        element.clear(keep_tail=True)
        parent = element.getparent()
        while parent is not None and element.getprevious() is not None:
            del parent[0]

    def _charset_of(self, head: bytes) -> str | None:
        """The charset given, else the XML declaration's."""
        declared = _DECLARED_ENCODING.match(head)
        if self._charset is None and declared is not None:
            return declared.group(1).decode("ascii")
        return self._charset

    def _push(self, text: str) -> None:
        self._tail = (self._tail + text)[-_TAIL_SIZE:]
        for block in self._blocks.add(text.encode("utf-8", "replace")):
            self._parse(self._fixer.fix(block))

    def _parse(self, block: bytes) -> None:
        super()._parse(block)
        self._events()

    def _events(self) -> None:
        for event, element in self._lxml.read_events():
            if not isinstance(element.tag, str):
                continue
            if not self._root:
                self._root = local_name(element.tag)
            self._handler(event, element)
