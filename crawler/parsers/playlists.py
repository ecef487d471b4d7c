"""Audio and video playlists: M3U and M3U8 (HLS), PLS, RealAudio metafiles and ASX. Their
entries are streams, reported to the crawler and not fetched as pages."""

import re
from abc import ABC, abstractmethod
from html import unescape

from ..links import LinkKind
from .common import MAX_BUFFER, ByteBuffer, Lines, LinkSink, ParseResult, decoder, shorten, xml_root

M3U_CONTENT_TYPES = (
    "audio/x-mpegurl",
    "audio/mpegurl",
    "application/vnd.apple.mpegurl",
    "application/x-mpegurl",
    "audio/x-m3u",
)
M3U_SUFFIXES = (".m3u", ".m3u8")
PLS_CONTENT_TYPES = ("audio/x-scpls", "audio/scpls")
PLS_SUFFIXES = (".pls",)
RAM_CONTENT_TYPES = ("audio/x-pn-realaudio", "audio/vnd.rn-realaudio")
RAM_SUFFIXES = (".ram",)
# video/x-ms-asf names binary ASF files too: those that hold ASX are found by sniffing.
ASX_CONTENT_TYPES = ("video/x-ms-asx", "audio/x-ms-wax", "video/x-ms-wvx")
ASX_SUFFIXES = (".asx", ".wax", ".wvx")

_EXTINF_TITLE = re.compile(r'#EXTINF:[^,"]*(?:"[^"]*"[^,"]*)*,(.*)', re.I)
_URI_ATTRIBUTE = re.compile(r'URI="([^"]*)"', re.I)
_PLS_ENTRY = re.compile(r"\s*(file|title)(\d+)\s*=(.*)", re.I)
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_ASX_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_ASX_TAG = re.compile(r"<(/?)([A-Za-z]++)([^<>]*+)>")
_ASX_ATTRIBUTE = re.compile(
    r"""(?<![A-Za-z\-])([A-Za-z\-]++)\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s>"']++))"""
)


def sniff_m3u(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"#EXTM3U")


def sniff_pls(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith(b"[playlist]")


def sniff_asx(head: bytes) -> bool:
    return xml_root(head) == "asx"


class _LineParser(ABC):
    """A playlist read line by line, up to MAX_BUFFER bytes."""

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._decoder = decoder(charset, self._sink)
        self._lines = Lines()
        self._titles: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        room = MAX_BUFFER - self._size
        self._size += len(chunk)
        for line in self._lines.add(self._decoder.decode(chunk[: max(room, 0)])):
            self._line(line.strip())

    def close(self) -> ParseResult:
        for line in self._lines.add(self._decoder.decode(b"", final=True)):
            self._line(line.strip())
        for line in self._lines.rest():
            self._line(line.strip())
        if self._size > MAX_BUFFER:
            self._sink.problem("document cut at 2 MB")
        return self._sink.result("\n".join(self._titles))

    @abstractmethod
    def _line(self, line: str) -> None: ...

    def _entry(self, ref: str, title: str = "") -> int | None:
        if _CONTROL.search(ref):
            self._sink.problem(f"not a playlist entry: {shorten(ref)}")
            return None
        return self._sink.add(ref, LinkKind.STREAM, False, title)

    def _title(self, title: str) -> None:
        if title:
            self._titles.append(title)


class M3uParser(_LineParser):
    """M3U and M3U8: an entry per line; #EXTINF gives the next entry's title."""

    def __init__(self, url: str, charset: str | None) -> None:
        super().__init__(url, charset)
        self._next_title = ""

    def _line(self, line: str) -> None:
        if not line:
            return
        if not line.startswith("#"):
            self._entry(line, self._next_title)
            self._next_title = ""
            return
        title = _EXTINF_TITLE.match(line)
        if title:
            self._next_title = title.group(1).strip()
            self._title(self._next_title)
        elif line[:7].upper() == "#EXT-X-":  # HLS keys, renditions and frame playlists
            for uri in _URI_ATTRIBUTE.findall(line):
                self._entry(uri)


class RamParser(_LineParser):
    """RealAudio metafiles: a URL per line. Files of this type are often the media itself, so
    only lines holding an absolute URL count."""

    def _line(self, line: str) -> None:
        if _ABSOLUTE.fullmatch(line):
            self._entry(line)


class PlsParser(_LineParser):
    """PLS: FileN= entries, titled by the TitleN= lines before or after them."""

    def __init__(self, url: str, charset: str | None) -> None:
        super().__init__(url, charset)
        self._entries: dict[str, int] = {}
        self._pending_titles: dict[str, str] = {}

    def _line(self, line: str) -> None:
        entry = _PLS_ENTRY.match(line)
        if entry is None:
            return
        field, number, value = entry.group(1).lower(), entry.group(2), entry.group(3).strip()
        if field == "file":
            index = self._entry(value, self._pending_titles.pop(number, ""))
            if index is not None:
                self._entries[number] = index
        else:
            self._title(value)
            if number in self._entries:
                self._sink.retext(self._entries[number], value)
            else:
                self._pending_titles[number] = value


class AsxParser:
    """ASX, read whole (up to 2 MB) with regular expressions since it is rarely valid XML:
    <ref href> and <entryref href> are streams titled by their <entry>'s <title>, <moreinfo
    href> a page, <banner href> an image."""

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._charset = charset
        self._buffer = ByteBuffer()
        self._titles: list[str] = []
        self._entry: list[int] | None = None  # indexes of the open entry's streams
        self._entry_title = ""

    def feed(self, chunk: bytes) -> None:
        self._buffer.add(chunk)

    def close(self) -> ParseResult:
        text = decoder(self._charset, self._sink).decode(self._buffer.data(), final=True)
        text = _ASX_COMMENT.sub("", text)
        for tag in _ASX_TAG.finditer(text):
            if tag.group(2).lower() == "title" and not tag.group(1):
                end = text.find("<", tag.end())  # a title holds no markup
                self._title(unescape(text[tag.end() : end if end >= 0 else len(text)].strip()))
            else:
                self._tag(tag.group(1) == "/", tag.group(2).lower(), tag.group(3))
        self._end_entry()
        if self._buffer.cut:
            self._sink.problem("document cut at 2 MB")
        return self._sink.result("\n".join(self._titles))

    def _tag(self, closing: bool, name: str, attributes: str) -> None:
        href = ""
        for attribute in _ASX_ATTRIBUTE.finditer(attributes):
            if attribute.group(1).lower() == "href":
                href = unescape(
                    next(group for group in attribute.groups()[1:] if group is not None)
                )
        if name == "entry":
            self._end_entry()
            self._entry = None if closing else []
        elif name in ("ref", "entryref"):
            index = self._sink.add(href, LinkKind.STREAM, False)
            if index is not None and self._entry is not None:
                self._entry.append(index)
        elif name == "moreinfo":
            self._sink.add(href, LinkKind.PAGE, False)
        elif name == "banner":
            self._sink.add(href, LinkKind.COMPONENT, True)

    def _title(self, title: str) -> None:
        if title:
            self._titles.append(title)
        if self._entry is not None:
            self._entry_title = title

    def _end_entry(self) -> None:
        for index in self._entry or ():
            self._sink.retext(index, self._entry_title)
        self._entry, self._entry_title = None, ""
