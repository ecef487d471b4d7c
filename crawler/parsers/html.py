"""HTML: the links of every element a browser loads or a user follows, and the visible text.

lxml reads the document as it arrives and calls a target for each tag and run of text, so no tree
is kept and memory stays flat. The charset is found before anything is parsed (a BOM, the one
given, a <meta> in the first KiB, else utf-8) and the text is handed to lxml as utf-8, so that a
page in any encoding is read the same way.
"""

import codecs
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from lxml import etree

from ..links import LinkKind
from .common import (
    COMMENT,
    MAX_BUFFER,
    MAX_LINK_TEXT,
    SNIFF_SIZE,
    LinkSink,
    ParseResult,
    TextBuffer,
    codec_name,
    collapse,
    shorten,
)
from .css import css_links
from .incoming import Incoming
from .javascript import script_links

CONTENT_TYPES = ("text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml")
SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".php", ".asp", ".aspx", ".jsp")
PRESCAN_SIZE = 1024

_HTML_START = re.compile(
    rb"\s*+(?:<\?xml[^>]*+>\s*+)?(?:"
    + COMMENT.encode()
    + rb"\s*+)*+<(?:!doctype\s+html|html[\s>])",
    re.I,
)
_META_CHARSET = re.compile(rb"<meta\s[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:\-]+)", re.I)
_REFRESH = re.compile(r"\s*[0-9.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)", re.I | re.S)
_TAIL_SIZE = 200

_HIDDEN = frozenset({"script", "style", "template"})
# Elements around which a browser breaks the text, so that their words do not run together.
_BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "caption",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "option",
        "p",
        "pre",
        "section",
        "select",
        "table",
        "td",
        "textarea",
        "th",
        "title",
        "tr",
        "ul",
    }
)
_SCRIPT_TYPES = frozenset(
    {
        "",
        "module",
        "text/javascript",
        "application/javascript",
        "application/x-javascript",
        "text/ecmascript",
        "application/ecmascript",
        "text/jscript",
        "text/x-javascript",
    }
)
_REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "preload",
        "modulepreload",
    }
)
_FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})
_BACKGROUNDS = frozenset({"body", "table", "td", "th", "tr"})
_PARAM_NAMES = frozenset({"movie", "src", "url", "filename"})
_UNSUBMITTED_INPUTS = frozenset({"submit", "button", "image", "reset", "file"})


def sniff(head: bytes) -> bool:
    """Whether a document starts as HTML does: a doctype or an <html> tag."""
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    return _HTML_START.match(head[:SNIFF_SIZE]) is not None


def refresh_target(content: str) -> str:
    """The URL of a meta refresh's content ("5; url=x", "0;URL='x'"), '' when it has none."""
    target = _REFRESH.match(content)
    value = target.group(1).strip() if target else ""
    if value[:1] in ("'", '"'):
        value = value[1:].partition(value[0])[0]
    return value


def srcset_urls(srcset: str) -> list[str]:
    """The URLs of a srcset's candidates ("a.png 1x, b.png 2x"), descriptors left out."""
    urls = []
    position = 0
    while position < len(srcset):
        while position < len(srcset) and (srcset[position].isspace() or srcset[position] == ","):
            position += 1
        start = position
        while position < len(srcset) and not srcset[position].isspace():
            position += 1
        url = srcset[start:position]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            depth = 0
            while position < len(srcset) and (depth or srcset[position] != ","):
                depth += {"(": 1, ")": -1}.get(srcset[position], 0)
                depth = max(depth, 0)
                position += 1
        if url:
            urls.append(url)
    return urls


def fragment_links(markup: str, sink: LinkSink) -> None:
    """Reports the links of a piece of HTML written by a script, as they would be in the page."""
    read_fragment(markup, sink, None)


def read_fragment(markup: str, sink: LinkSink, text: TextBuffer | None) -> None:
    """Reports the links of a piece of HTML (a feed's description...), and its text when asked."""
    collector = _Collector(sink, text, in_fragment=True)
    parser = _take_parser(collector)
    try:
        parser.feed(markup.encode("utf-8", "replace"))
        parser.close()
    except Exception as error:  # a parser must never fail: note it and keep what was found
        sink.problem(f"HTML fragment not parsed: {error}")
    else:
        _give_back(parser)
    collector.finish()


class _Relay:
    """The target of a pooled lxml parser: passes each event to the collector of the document
    being parsed, which it holds only while that document is read."""

    __slots__ = ("collector",)
    collector: "_Collector"

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.collector.start(tag, attrib)

    def end(self, tag: str) -> None:
        self.collector.end(tag)

    def data(self, text: str) -> None:
        self.collector.data(text)

    def close(self) -> None:
        self.collector.close()


# lxml parsers of this thread whose last document ended well, each with its relay. A parser made
# for each document ties itself and its target in a reference cycle that only the garbage
# collector frees, and with the target all a page's links: 10,000 pages crawled by 8 agents took
# 32-36 s of CPU before the parsers were used again and the collectors lost their own cycle, 26
# after.
_pool = threading.local()
POOLED_PARSERS = 4


def _free() -> list[Any]:
    """This thread's parsers at rest."""
    free: list[Any] = _pool.__dict__.setdefault("free", [])
    return free


def _take_parser(collector: "_Collector") -> Any:
    """An lxml HTML parser (from this thread's pool, else new) whose events go to `collector`."""
    free = _free()
    if free:
        parser = free.pop()
    else:
        parser = etree.HTMLParser(target=_Relay(), encoding="utf-8", no_network=True)
    parser.target.collector = collector
    return parser


def _give_back(parser: Any) -> None:
    """Return a parser whose document was read to its end without a failure to the pool."""
    del parser.target.collector
    if len(free := _free()) < POOLED_PARSERS:
        free.append(parser)


class HtmlParser(Incoming):
    """An HTML document, read as it arrives."""

    def __init__(self, url: str, charset: str | None) -> None:
        sink = LinkSink(url)
        self._charset = charset
        self._text = TextBuffer()
        self._collector = _Collector(sink, self._text, in_fragment=False)
        super().__init__(sink, "HTML", PRESCAN_SIZE, _take_parser(self._collector))
        self._tail = ""  # the last characters, to tell where a cut document ends
        self._nul = False
        self._replaced = 0

    def close(self) -> ParseResult:
        self._parse(self._rest())
        if self._close_lxml():
            _give_back(self._lxml)
        self._collector.finish()
        self._note_problems()
        return self._sink.result(collapse(self._text.text()))

    def _charset_of(self, head: bytes) -> str | None:
        """The charset given, else a <meta> one in the first PRESCAN_SIZE bytes."""
        charset = self._charset if codec_name(self._charset) else None
        if self._charset and charset is None:
            self._sink.problem(
                f"unknown charset {shorten(self._charset)}, looked for a <meta> charset"
            )
        if charset is None:
            found = _META_CHARSET.search(head[:PRESCAN_SIZE])
            charset = found.group(1).decode("ascii") if found else None
            if codec_name(charset) in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
                charset = "utf-8"  # a <meta> that could be read as ASCII is not in UTF-16
        return charset

    def _push(self, text: str) -> None:
        if not text:
            return
        self._tail = (self._tail + text)[-_TAIL_SIZE:]
        self._nul = self._nul or "\x00" in text
        self._replaced += text.count("\ufffd")
        for block in self._blocks.add(text.encode("utf-8", "replace")):
            self._parse(block)

    def _note_problems(self) -> None:
        if self._nul:
            self._sink.problem("binary data (NUL bytes) in the document")
        if self._replaced:
            self._sink.problem(f"{self._replaced} characters could not be decoded")
        tail = self._tail
        if tail.rfind("<!--") > tail.rfind("-->"):
            self._sink.problem(
                f"malformed HTML near {shorten(tail[tail.rfind('<!--') :])}: comment not closed"
            )
        elif tail.rfind("<") > tail.rfind(">"):
            self._sink.problem(
                f"malformed HTML near {shorten(tail[tail.rfind('<') :])}: document cut inside a tag"
            )
        if self._text.cut:
            self._sink.problem("text cut at 2 MB")


@dataclass
class _Anchor:
    index: int
    title: str
    text: TextBuffer = field(default_factory=lambda: TextBuffer(4 * MAX_LINK_TEXT))


@dataclass
class _Form:
    index: int
    action: str
    fields: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Select:
    name: str
    multiple: bool
    chosen: list[str] = field(default_factory=list)
    first: str | None = None


@dataclass
class _Capture:
    """The text of an element being read: an option, a textarea, a script or a style."""

    attributes: dict[str, str]
    pieces: list[str] = field(default_factory=list)
    size: int = 0
    cut: bool = False

    def add(self, text: str) -> None:
        if self.size + len(text) > MAX_BUFFER:
            self.cut = True
            return
        self.pieces.append(text)
        self.size += len(text)

    def text(self) -> str:
        return "".join(self.pieces)


class _Collector:
    """The lxml target: sees each tag and run of text as it is parsed."""

    def __init__(self, sink: LinkSink, text: TextBuffer | None, in_fragment: bool) -> None:
        self._sink = sink
        self._text = text
        self._base_seen = in_fragment  # a script's markup does not change the page's base
        self._hidden = 0
        self._anchor: _Anchor | None = None
        self._form: _Form | None = None
        self._select: _Select | None = None
        self._captures: dict[str, _Capture] = {}

    # The lxml target interface.

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        attributes = {name.lower(): value for name, value in attrib.items()}
        if tag in _HIDDEN:
            self._hidden += 1
        if tag in _BLOCKS:
            self._add_text(" ")
        if "style" in attributes:
            css_links(attributes["style"], self._sink)
        if tag in _BACKGROUNDS and "background" in attributes:
            self._component(attributes["background"])
        handler = _STARTS.get(tag)
        if handler is not None:
            handler(self, attributes)

    def end(self, tag: str) -> None:
        capture = self._captures.pop(tag, None)
        if tag == "a":
            self._end_a()
        elif tag == "form":
            self._end_form()
        elif tag == "select":
            self._end_select()
        elif capture is not None:
            self._end_capture(tag, capture)
        if tag in _HIDDEN:
            self._hidden = max(self._hidden - 1, 0)
        if tag in _BLOCKS:
            self._add_text(" ")

    def data(self, text: str) -> None:
        for capture in self._captures.values():
            capture.add(text)
        if self._hidden:
            return
        self._add_text(text)
        if self._anchor is not None:
            self._anchor.text.add(text)

    def close(self) -> None:
        self.finish()

    def finish(self) -> None:
        """Completes the links whose element the document never closed (lxml calls close() at the
        end of a document, but not after a failure)."""
        self._end_a()
        self._end_select()
        self._end_form()
        self._captures.clear()

    # Elements.

    def _start_a(self, attributes: dict[str, str]) -> None:
        self._end_a()
        index = self._page(attributes.get("href"))
        if index is not None:
            self._anchor = _Anchor(index, attributes.get("title", ""))

    def _end_a(self) -> None:
        if self._anchor is not None:
            text = collapse(self._anchor.text.text())
            self._sink.retext(self._anchor.index, text or self._anchor.title)
            self._anchor = None

    def _start_area(self, attributes: dict[str, str]) -> None:
        self._page(attributes.get("href"), attributes.get("alt") or attributes.get("title", ""))

    def _start_base(self, attributes: dict[str, str]) -> None:
        href = attributes.get("href")
        if self._base_seen or href is None:
            return
        self._base_seen = True
        base = self._sink.resolve(href, self._sink.url)
        if base is not None:
            self._sink.base = base

    def _start_link(self, attributes: dict[str, str]) -> None:
        rels = set(attributes.get("rel", "").lower().split())
        kind = attributes.get("type", "").lower().partition(";")[0].strip()
        href = attributes.get("href")
        if href is None:
            return
        if "alternate" in rels and kind in _FEED_TYPES:
            self._sink.add(href, LinkKind.FEED, False, attributes.get("title", ""))
        elif rels & _REQUISITE_RELS:
            self._component(href)

    def _start_meta(self, attributes: dict[str, str]) -> None:
        if attributes.get("http-equiv", "").strip().lower() == "refresh":
            target = refresh_target(attributes.get("content", ""))
            if target:
                self._sink.add(target, LinkKind.COMPONENT, False)

    def _start_img(self, attributes: dict[str, str]) -> None:
        alt = attributes.get("alt", "")
        for name in ("src", "data-src", "lowsrc"):
            self._component(attributes.get(name), alt)
        for name in ("srcset", "data-srcset"):
            for url in srcset_urls(attributes.get(name, "")):
                self._component(url, alt)
        if self._anchor is not None and alt:
            self._anchor.text.add(f" {alt} ")

    def _start_svg_image(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("href") or attributes.get("xlink:href"))

    def _start_source(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("src"))
        for url in srcset_urls(attributes.get("srcset", "")):
            self._component(url)

    def _start_script(self, attributes: dict[str, str]) -> None:
        if "src" in attributes:
            self._component(attributes["src"])
        elif attributes.get("type", "").strip().lower() in _SCRIPT_TYPES:
            self._captures["script"] = _Capture(attributes)

    def _start_style(self, attributes: dict[str, str]) -> None:
        self._captures["style"] = _Capture(attributes)

    def _start_frame(self, attributes: dict[str, str]) -> None:
        source = attributes.get("src")
        if source is not None:
            self._sink.add(source, LinkKind.COMPONENT, False, attributes.get("title", ""))

    def _start_embed(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("src"))

    def _start_object(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("data"))

    def _start_param(self, attributes: dict[str, str]) -> None:
        if attributes.get("name", "").strip().lower() in _PARAM_NAMES:
            self._component(attributes.get("value"))

    def _start_media(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("src"))
        self._component(attributes.get("poster"))

    def _start_track(self, attributes: dict[str, str]) -> None:
        self._component(attributes.get("src"))

    def _start_input(self, attributes: dict[str, str]) -> None:
        kind = attributes.get("type", "text").strip().lower()
        if kind == "image":
            self._component(attributes.get("src"), attributes.get("alt", ""))
        name = attributes.get("name")
        if (
            self._form is None
            or not name
            or "disabled" in attributes
            or kind in _UNSUBMITTED_INPUTS
        ):
            return
        if kind in ("checkbox", "radio"):
            if "checked" in attributes:
                self._form.fields.append((name, attributes.get("value", "on")))
        else:
            self._form.fields.append((name, attributes.get("value", "")))

    def _start_form(self, attributes: dict[str, str]) -> None:
        self._end_form()
        if attributes.get("method", "get").strip().lower() != "get":
            return
        # An empty action submits to the document itself, whatever the base.
        index = self._page(attributes.get("action", "").strip() or self._sink.url)
        if index is not None:
            self._form = _Form(index, self._sink.links[index].url)

    def _end_form(self) -> None:
        if self._form is not None:
            form, self._form = self._form, None
            query = urlencode(form.fields)
            if query:
                self._sink.reurl(
                    form.index, urlunsplit(urlsplit(form.action)._replace(query=query))
                )

    def _start_select(self, attributes: dict[str, str]) -> None:
        self._end_select()
        name = attributes.get("name")
        if self._form is not None and name and "disabled" not in attributes:
            self._select = _Select(name, "multiple" in attributes)

    def _end_select(self) -> None:
        if self._select is not None:
            select, self._select = self._select, None
            values = select.chosen or (
                [select.first] if select.first is not None and not select.multiple else []
            )
            if self._form is not None:
                self._form.fields.extend((select.name, value) for value in values)

    def _start_option(self, attributes: dict[str, str]) -> None:
        if self._select is not None:
            self._captures["option"] = _Capture(attributes)

    def _start_textarea(self, attributes: dict[str, str]) -> None:
        if self._form is not None and attributes.get("name") and "disabled" not in attributes:
            self._captures["textarea"] = _Capture(attributes)

    def _end_capture(self, tag: str, capture: _Capture) -> None:
        if capture.cut:
            self._sink.problem(f"<{tag}> cut at 2 MB")
        if tag == "script":
            script_links(capture.text(), self._sink, fragment_links)
        elif tag == "style":
            css_links(capture.text(), self._sink)
        elif tag == "option" and self._select is not None:
            value = capture.attributes.get("value", collapse(capture.text()))
            if self._select.first is None:
                self._select.first = value
            if "selected" in capture.attributes:
                self._select.chosen.append(value)
        elif tag == "textarea" and self._form is not None:
            self._form.fields.append((capture.attributes["name"], capture.text()))

    # Helpers.

    def _page(self, ref: str | None, text: str = "") -> int | None:
        return None if ref is None else self._sink.add(ref, LinkKind.PAGE, False, text)

    def _component(self, ref: str | None, text: str = "") -> None:
        if ref is not None:
            self._sink.add(ref, LinkKind.COMPONENT, True, text)

    def _add_text(self, text: str) -> None:
        if self._text is not None:
            self._text.add(text)


# What each tag's start does: functions of the class, not bound methods kept by each collector,
# which would tie every collector (and all a page's links) in a reference cycle.
_STARTS: dict[str, Callable[[_Collector, dict[str, str]], None]] = {
    "a": _Collector._start_a,
    "area": _Collector._start_area,
    "base": _Collector._start_base,
    "link": _Collector._start_link,
    "meta": _Collector._start_meta,
    "img": _Collector._start_img,
    "image": _Collector._start_svg_image,
    "source": _Collector._start_source,
    "script": _Collector._start_script,
    "style": _Collector._start_style,
    "frame": _Collector._start_frame,
    "iframe": _Collector._start_frame,
    "embed": _Collector._start_embed,
    "object": _Collector._start_object,
    "param": _Collector._start_param,
    "video": _Collector._start_media,
    "audio": _Collector._start_media,
    "track": _Collector._start_track,
    "input": _Collector._start_input,
    "form": _Collector._start_form,
    "select": _Collector._start_select,
    "option": _Collector._start_option,
    "textarea": _Collector._start_textarea,
}
