"""Reading an XML document as it arrives, for the sitemap and feed parsers.

The charset is decided here (a BOM, the one given, the XML declaration, else utf-8) and the text
handed to lxml as utf-8, entity references fixed first (see EntityFixer). lxml's pull parser
recovers from errors, expands no entity and opens no network connection.
"""

import re
from collections.abc import Callable
from typing import Any

from lxml import etree

from .common import COMMENT, SNIFF_SIZE, Blocks, Decoder, EntityFixer, LinkSink, decoder, local_name

# Called with "start" or "end" and the element; the element's text is complete at its end.
Handler = Callable[[str, Any], None]

_TAIL_SIZE = 200
_DECLARED_ENCODING = re.compile(rb"\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._:\-]+)")


class XmlReader:
    def __init__(self, charset: str | None, sink: LinkSink, handler: Handler) -> None:
        self._charset = charset
        self._sink = sink
        self._handler = handler
        self._head = bytearray()  # held until the charset is known
        self._decoder: Decoder | None = None
        self._blocks = Blocks()
        self._fixer = EntityFixer()
        self._parser = etree.XMLPullParser(
            events=("start", "end"),
            encoding="utf-8",
            recover=True,
            resolve_entities=False,
            no_network=True,
            remove_comments=True,
            remove_pis=True,
        )
        self._root = ""  # the root element's local name, once seen
        self._tail = ""  # the last characters, to tell a cut document
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        if self._decoder is None:
            self._head += chunk
            if len(self._head) >= SNIFF_SIZE:
                self._start()
        else:
            self._push(self._decoder.decode(chunk))

    def close(self) -> None:
        if self._decoder is None:
            self._start()
        assert self._decoder is not None
        self._push(self._decoder.decode(b"", final=True))
        self._parse(self._fixer.fix(self._blocks.rest(), final=True))
        if not self._failed:
            try:
                self._parser.close()
            except Exception as error:  # a parser must never fail: note it and keep what was found
                self._sink.problem(f"XML parsing stopped: {error}")
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

    def _start(self) -> None:
        head = bytes(self._head)
        self._head.clear()
        charset = self._charset
        declared = _DECLARED_ENCODING.match(head)
        if charset is None and declared is not None:
            charset = declared.group(1).decode("ascii")
        self._decoder = decoder(charset, self._sink)
        self._push(self._decoder.decode(head))

    def _push(self, text: str) -> None:
        self._tail = (self._tail + text)[-_TAIL_SIZE:]
        for block in self._blocks.add(text.encode("utf-8", "replace")):
            self._parse(self._fixer.fix(block))

    def _parse(self, data: bytes) -> None:
        if self._failed or not data:
            return
        try:
            self._parser.feed(data)
        except Exception as error:  # a parser must never fail: note it and keep what was found
            self._failed = True
            self._sink.problem(f"XML parsing stopped: {error}")
        self._events()

    def _events(self) -> None:
        for event, element in self._parser.read_events():
            if not isinstance(element.tag, str):
                continue
            if not self._root:
                self._root = local_name(element.tag)
            self._handler(event, element)
