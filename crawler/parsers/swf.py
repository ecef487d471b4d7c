"""Flash movies (SWF): the URLs their ActionScript 1 and 2 code opens (getURL, loadMovie,
loadVariables) and the initial text of their text fields, whose HTML is read for links too.

A movie is read whole: uncompressed (FWS), zlib (CWS) or LZMA (ZWS), decompressed up to
MAX_MOVIE bytes whatever length its header claims. Its tags are walked, those of its sprites
too, and the action records of frames, buttons and clip events are read for the URLs they
open: a getURL to a window or frame is a page; a movie or variables loaded into the player
(loadMovie, loadVariables, a _levelN target) a component. ActionScript 3 (DoABC) is not read.
"""

import lzma
import re
import struct
import zlib
from typing import Protocol

from ..links import LinkKind
from .common import BLOCK, ByteBuffer, LinkSink, ParseResult, TextBuffer, collapse
from .html import read_fragment

CONTENT_TYPES = ("application/x-shockwave-flash", "application/vnd.adobe.flash.movie")
SUFFIXES = (".swf",)
MAX_INPUT = 16 * 1024 * 1024  # bytes of the file kept
MAX_MOVIE = 16 * 1024 * 1024  # bytes of a movie decompressed
MAX_TAGS = 200_000  # tags read, sprites' included
MAX_ACTIONS = 250_000  # action records read
MAX_URLS = 10_000  # distinct URLs opened by actions
MAX_TEXT_FIELDS = 10_000  # text fields read
MAX_HTML_FIELDS = 1_000  # HTML text fields read for links, each by the HTML parser
MAX_HTML_SIZE = 256 * 1024  # characters of HTML text fields read for links
MAX_VERSION = 60

_SIGNATURES = (b"FWS", b"CWS", b"ZWS")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_UINTS = {1: struct.Struct("<B"), 2: _U16, 4: _U32}
_HEADER = 8
_LZMA_PROPERTIES = 5
_LZMA_MIN_DICTIONARY = 4096
_LEVEL = re.compile(r"_level\d+", re.I)

_END = 0
_DEFINE_BUTTON = 7
_DO_ACTION = 12
_PLACE_OBJECT2 = 26
_DEFINE_BUTTON2 = 34
_DEFINE_EDIT_TEXT = 37
_DEFINE_SPRITE = 39
_DO_INIT_ACTION = 59
_PLACE_OBJECT3 = 70
_TAG_NAMES = {
    _DEFINE_BUTTON: "DefineButton",
    _DO_ACTION: "DoAction",
    _PLACE_OBJECT2: "PlaceObject2",
    _DEFINE_BUTTON2: "DefineButton2",
    _DEFINE_EDIT_TEXT: "DefineEditText",
    _DEFINE_SPRITE: "DefineSprite",
    _DO_INIT_ACTION: "DoInitAction",
    _PLACE_OBJECT3: "PlaceObject3",
}

_GET_URL = 0x83
_CONSTANT_POOL = 0x88
_PUSH = 0x96
_GET_URL2 = 0x9A
_LOADS_INTO_PLAYER = 0x03  # GetURL2's LoadTargetFlag and LoadVariablesFlag
_PUSH_STRING = 0
_PUSH_CONSTANT8 = 8
_PUSH_CONSTANT16 = 9
_PUSH_SIZES = {1: 4, 2: 0, 3: 0, 4: 1, 5: 1, 6: 8, 7: 4}  # bytes of the other pushed values
_KEY_PRESS = 0x20000  # the clip event whose actions start with a key code
# Bytes of each surface filter after its type; gradient and convolution filters vary.
_FILTER_SIZES = {0: 23, 1: 9, 2: 15, 3: 27, 6: 80}
_GRADIENT_FILTERS = (4, 7)
_CONVOLUTION_FILTER = 5


def sniff(head: bytes) -> bool:
    """Whether a document starts as a Flash movie does: a signature, a plausible version, and
    the start of its zlib or LZMA stream when compressed."""
    if len(head) < _HEADER or head[:3] not in _SIGNATURES or not 1 <= head[3] <= MAX_VERSION:
        return False
    if head[:1] == b"C":
        return len(head) > _HEADER + 1 and _zlib_header(head[_HEADER], head[_HEADER + 1])
    if head[:1] == b"Z":
        return len(head) > _HEADER + 4 and head[_HEADER + 4] < 9 * 5 * 5
    return True


def _zlib_header(method: int, flags: int) -> bool:
    return method & 0x0F == 8 and method >> 4 <= 7 and (method << 8 | flags) % 31 == 0


class _Decompressor(Protocol):
    """A zlib or LZMA decompressor."""

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


class _Malformed(Exception):
    """A structure of a tag does not fit in it."""


class _Reader:
    """Little-endian reads of a movie's bytes between a position and an end."""

    def __init__(self, data: bytes, position: int, end: int) -> None:
        if position > end:
            raise _Malformed("truncated")
        self.data = data
        self.position = position
        self.end = end
        self._bit = 0  # bits of the byte before position already read

    def take(self, size: int) -> int:
        """Skips `size` bytes; returns where they start."""
        start = self.position
        if start + size > self.end:
            raise _Malformed("truncated")
        self.position += size
        return start

    def uint(self, size: int) -> int:
        """An unsigned integer of 1, 2 or 4 bytes."""
        value: int = _UINTS[size].unpack_from(self.data, self.take(size))[0]
        return value

    def u8(self) -> int:
        return self.data[self.take(1)]

    def u16(self) -> int:
        return self.uint(2)

    def u32(self) -> int:
        return self.uint(4)

    def string(self) -> bytes:
        end = self.data.find(b"\0", self.position, self.end)
        if end < 0:
            raise _Malformed("string not terminated")
        start, self.position = self.position, end + 1
        return self.data[start:end]

    def sub(self, size: int) -> "_Reader":
        """A reader of the next `size` bytes, skipped by this one."""
        start = self.take(size)
        return _Reader(self.data, start, start + size)

    def bits(self, count: int) -> int:
        """An unsigned bit field, read from the high bit; align() ends a run of them."""
        first = self.position - 1 if self._bit else self.position  # a byte partly read
        total = self._bit + count
        size = (total + 7) // 8
        if first + size > self.end:
            raise _Malformed("truncated")
        chunk = int.from_bytes(self.data[first : first + size], "big")
        self.position, self._bit = first + size, total % 8
        return chunk >> (size * 8 - total) & ((1 << count) - 1)

    def align(self) -> None:
        self._bit = 0

    def skip_rect(self) -> None:
        self.bits(4 * self.bits(5))
        self.align()

    def skip_matrix(self) -> None:
        for _ in range(2):  # scale, then rotation and skew
            if self.bits(1):
                self.bits(2 * self.bits(5))
        self.bits(2 * self.bits(5))
        self.align()

    def skip_color_transform(self) -> None:
        """A CXFORMWITHALPHA."""
        has_add, has_mult, size = self.bits(1), self.bits(1), self.bits(4)
        self.bits(4 * size * (has_add + has_mult))
        self.align()

    def skip_filters(self) -> None:
        for _ in range(self.u8()):
            kind = self.u8()
            if kind in _FILTER_SIZES:
                self.take(_FILTER_SIZES[kind])
            elif kind in _GRADIENT_FILTERS:
                self.take(5 * self.u8() + 19)
            elif kind == _CONVOLUTION_FILTER:
                columns, rows = self.u8(), self.u8()
                self.take(8 + 4 * columns * rows + 5)
            else:
                raise _Malformed(f"unknown filter {kind}")


class SwfParser:
    """A Flash movie, read whole once it has arrived."""

    def __init__(self, url: str, charset: str | None) -> None:
        self._sink = LinkSink(url)
        self._buffer = ByteBuffer(MAX_INPUT)
        self._text = TextBuffer()
        self._encoding = "utf-8"
        self._version = 0
        self._tag_count = 0
        self._action_count = 0
        self._text_fields = 0
        self._html_fields = 0
        self._html_size = 0
        self._opened: set[tuple[str, bool]] = set()  # URLs opened, and whether into the player
        self._over: set[str] = set()

    def feed(self, chunk: bytes) -> None:
        self._buffer.add(chunk)

    def close(self) -> ParseResult:
        if self._buffer.cut:
            self._problem(f"file cut at {MAX_INPUT} bytes")
        movie = self._movie(self._buffer.data())
        if movie is not None:
            self._walk(movie)
        if self._text.cut:
            self._problem("text cut at 2 MB")
        return self._sink.result(self._text.text().strip())

    def _problem(self, text: str) -> None:
        self._sink.problem(f"swf: {text}")

    def _limit(self, what: str, limit: int) -> None:
        """Notes, once, that a bound on the reading was met."""
        if what not in self._over:
            self._over.add(what)
            self._problem(f"more than {limit} {what}: the rest not read")

    # The file.

    def _movie(self, data: bytes) -> bytes | None:
        """The movie after its 8-byte header, decompressed; None when the file is no movie."""
        if len(data) < _HEADER or data[:3] not in _SIGNATURES:
            self._problem("not a Flash movie")
            return None
        self._version = data[3]
        self._encoding = "utf-8" if self._version >= 6 else "cp1252"
        claimed = int.from_bytes(data[4:_HEADER], "little") - _HEADER
        if data[:1] == b"F":
            movie = data[_HEADER:]
        elif data[:1] == b"C":
            movie = self._decompress(zlib.decompressobj(), data[_HEADER:], zlib.error)
        else:
            movie = self._unlzma(data[_HEADER:])
        if claimed > MAX_MOVIE:
            self._problem(f"claims {claimed} bytes, read up to {MAX_MOVIE}")
        elif len(movie) < claimed:
            self._problem(f"truncated: {len(movie)} of the {claimed} bytes it claims")
        return movie

    def _unlzma(self, data: bytes) -> bytes:
        """A ZWS movie: compressed length (ignored), LZMA properties, then raw LZMA data."""
        properties = data[4 : 4 + _LZMA_PROPERTIES]
        if len(properties) < _LZMA_PROPERTIES or properties[0] >= 9 * 5 * 5:
            self._problem("LZMA header missing or invalid")
            return b""
        literal_bits, rest = properties[0] % 9, properties[0] // 9
        # No match reaches further back than the output kept, whatever size the file asks for.
        dictionary = int.from_bytes(properties[1:], "little")
        dictionary = min(max(dictionary, _LZMA_MIN_DICTIONARY), MAX_MOVIE)
        lzma_filter = {
            "id": lzma.FILTER_LZMA1,
            "dict_size": dictionary,
            "lc": literal_bits,
            "lp": rest % 5,
            "pb": rest // 5,
        }
        try:
            decompressor = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma_filter])
        except (lzma.LZMAError, ValueError) as error:
            self._problem(f"LZMA properties refused: {error}")
            return b""
        return self._decompress(decompressor, data[4 + _LZMA_PROPERTIES :], lzma.LZMAError)

    def _decompress(
        self, decompressor: "_Decompressor", data: bytes, errors: type[Exception]
    ) -> bytes:
        """Decompressed data up to MAX_MOVIE bytes, fed by blocks so that what came before an
        error is kept; bytes after the end of the stream are left."""
        out = bytearray()
        for start in range(0, len(data), BLOCK):
            if decompressor.eof:
                break
            try:
                block = data[start : start + BLOCK]
                out += decompressor.decompress(block, MAX_MOVIE + 1 - len(out))
            except errors as error:
                self._problem(f"compressed data damaged after {len(out)} bytes: {error}")
                break
            if len(out) > MAX_MOVIE:
                self._problem(f"decompressed movie cut at {MAX_MOVIE} bytes")
                del out[MAX_MOVIE:]
                break
        return bytes(out)

    # Tags.

    def _walk(self, movie: bytes) -> None:
        reader = _Reader(movie, 0, len(movie))
        try:
            reader.skip_rect()
            reader.take(4)  # frame rate and count
        except _Malformed:
            self._problem("movie header truncated")
            return
        self._tags_in(movie, reader.position, len(movie), in_sprite=False)

    def _tags_in(self, movie: bytes, position: int, end: int, in_sprite: bool) -> None:
        """Reads the tags of the movie or of a sprite, up to their end tag."""
        while position < end:
            if self._tag_count >= MAX_TAGS:
                self._limit("tags", MAX_TAGS)
                return
            self._tag_count += 1
            start = position + 2
            if start > end:
                self._problem(f"tag header at byte {position} truncated")
                return
            (code_and_length,) = _U16.unpack_from(movie, position)
            code, length = code_and_length >> 6, code_and_length & 0x3F
            if length == 0x3F:
                start += 4
                if start > end:
                    self._problem(f"tag header at byte {position} truncated")
                    return
                (length,) = _U32.unpack_from(movie, start - 4)
            if code == _END:
                return
            stop = start + length
            if stop > end:
                self._problem(f"tag {code} at byte {position} runs past the end of the movie")
                stop = end
            if code in _TAG_NAMES:
                self._tag(code, _Reader(movie, start, stop), in_sprite)
            position = stop

    def _tag(self, code: int, reader: _Reader, in_sprite: bool) -> None:
        start = reader.position
        if code not in (_DEFINE_EDIT_TEXT, _DEFINE_SPRITE) and self._action_count >= MAX_ACTIONS:
            self._limit("actions", MAX_ACTIONS)
            return
        try:
            if code in (_DO_ACTION, _DO_INIT_ACTION):
                if code == _DO_INIT_ACTION:
                    reader.take(2)  # the sprite's id
                self._actions(reader)
            elif code == _DEFINE_BUTTON:
                self._define_button(reader)
            elif code == _DEFINE_BUTTON2:
                self._define_button2(reader)
            elif code in (_PLACE_OBJECT2, _PLACE_OBJECT3):
                self._place_object(reader, code == _PLACE_OBJECT3)
            elif code == _DEFINE_EDIT_TEXT:
                self._edit_text(reader)
            elif code == _DEFINE_SPRITE and not in_sprite:  # sprites do not nest
                reader.take(4)  # its id and frame count
                self._tags_in(reader.data, reader.position, reader.end, in_sprite=True)
        except _Malformed as error:
            self._problem(f"{_TAG_NAMES[code]} tag at byte {start}: {error}")

    def _define_button(self, reader: _Reader) -> None:
        reader.take(2)  # its id
        while reader.u8():  # a button record's flags; none end the records
            reader.take(4)  # character id and depth
            reader.skip_matrix()
        self._actions(reader)

    def _define_button2(self, reader: _Reader) -> None:
        """Its conditions' actions, each after the offset to the next."""
        reader.take(3)  # its id and flags
        field = reader.position
        offset = reader.u16()
        if not offset:
            return
        position = field + offset
        while True:
            size = _Reader(reader.data, position, reader.end).u16()
            if 0 < size < 4:
                raise _Malformed(f"button condition of {size} bytes")
            end = position + size if size else reader.end
            if end > reader.end:
                raise _Malformed("truncated")
            self._actions(_Reader(reader.data, position + 4, end))  # after size and conditions
            if not size:
                return
            position = end

    def _place_object(self, reader: _Reader, third: bool) -> None:
        """The clip actions of a placed sprite (AVM1 clip events)."""
        flags = reader.u8()
        more = reader.u8() if third else 0
        if not flags & 0x80:
            return
        reader.take(2)  # depth
        if more & 0x08 or (more & 0x10 and not flags & 0x02):
            reader.string()  # class name
        if flags & 0x02:
            reader.take(2)  # character id
        if flags & 0x04:
            reader.skip_matrix()
        if flags & 0x08:
            reader.skip_color_transform()
        reader.take(2 * bool(flags & 0x10))  # ratio
        if flags & 0x20:
            reader.string()  # instance name
        reader.take(2 * bool(flags & 0x40))  # clip depth
        if more & 0x01:
            reader.skip_filters()
        # Blend mode, bitmap caching, visibility, background colour.
        reader.take(
            bool(more & 0x02) + bool(more & 0x04) + bool(more & 0x20) + 4 * bool(more & 0x40)
        )
        self._clip_actions(reader)

    def _clip_actions(self, reader: _Reader) -> None:
        size = 4 if self._version >= 6 else 2  # bytes of event flags
        reader.take(2 + size)  # reserved, then all the events handled
        while reader.position < reader.end:
            events = reader.uint(size)
            if not events:
                return
            record = reader.sub(reader.u32())
            if size == 4 and events & _KEY_PRESS:
                record.take(1)
            self._actions(record)

    def _edit_text(self, reader: _Reader) -> None:
        """The initial text of a text field; an HTML one is read for its links too."""
        if self._text_fields >= MAX_TEXT_FIELDS:
            self._limit("text fields", MAX_TEXT_FIELDS)
            return
        self._text_fields += 1
        reader.take(2)  # its id
        reader.skip_rect()
        flags, more = reader.u8(), reader.u8()
        if not flags & 0x80:
            return
        if flags & 0x01:
            reader.take(2)  # font id
        if more & 0x80:
            reader.string()  # font class
        if flags & 0x01 or more & 0x80:
            reader.take(2)  # font height
        reader.take(4 * bool(flags & 0x04) + 2 * bool(flags & 0x02) + 9 * bool(more & 0x20))
        reader.string()  # variable name
        text = self._decode(reader.string())
        if more & 0x02:
            self._html_field(text)
        else:
            self._text.add(text + "\n")

    def _html_field(self, text: str) -> None:
        """Reads an HTML text field for its links and the text it shows, within bounds."""
        if self._html_fields >= MAX_HTML_FIELDS:
            self._limit("HTML text fields", MAX_HTML_FIELDS)
        elif self._html_size + len(text) > MAX_HTML_SIZE:
            self._limit("characters of HTML text fields", MAX_HTML_SIZE)
        else:
            self._html_fields += 1
            self._html_size += len(text)
            shown = TextBuffer()
            read_fragment(text, self._sink, shown)
            self._text.add(collapse(shown.text()) + "\n")

    # Actions.

    def _actions(self, reader: _Reader) -> None:
        """Reads action records up to their end, reporting the URLs opened.

        GetURL2 takes its URL and target from the stack: they are known when the pushes
        right before it gave them, as strings or entries of the constant pool.
        """
        pool: list[str | None] = []
        stack: list[str | None] = []  # the last two values pushed, when known
        while reader.position < reader.end:
            if self._action_count >= MAX_ACTIONS:
                self._limit("actions", MAX_ACTIONS)
                return
            self._action_count += 1
            code = reader.u8()
            if code == 0:
                return
            if code < 0x80:  # no data: the values it takes or leaves are unknown
                stack = []
                continue
            record = reader.sub(reader.u16())
            if code == _PUSH:
                stack = (stack + self._pushed(record, pool))[-2:]
                continue
            if code == _GET_URL:
                url, target = record.string(), record.string()
                self._get_url(self._decode(url), self._decode(target), 0)
            elif code == _GET_URL2 and len(stack) == 2:
                self._get_url(stack[0], stack[1], record.u8())
            elif code == _CONSTANT_POOL:
                pool = [self._decode(record.string()) for _ in range(record.u16())]
            stack = []

    def _pushed(self, record: _Reader, pool: list[str | None]) -> list[str | None]:
        """The values of a push: its strings, None for the others."""
        values: list[str | None] = []
        while record.position < record.end:
            kind = record.u8()
            if kind == _PUSH_STRING:
                values.append(self._decode(record.string()))
            elif kind in (_PUSH_CONSTANT8, _PUSH_CONSTANT16):
                index = record.uint(1 if kind == _PUSH_CONSTANT8 else 2)
                values.append(pool[index] if index < len(pool) else None)
            elif kind in _PUSH_SIZES:
                record.take(_PUSH_SIZES[kind])
                values.append(None)
            else:
                raise _Malformed(f"unknown pushed value type {kind}")
        return values

    def _get_url(self, url: str | None, target: str | None, flags: int) -> None:
        """A page opened in a window or frame, or a movie or variables loaded into the player."""
        loaded = bool(flags & _LOADS_INTO_PLAYER or _LEVEL.fullmatch(target or ""))
        if url is None or (url, loaded) in self._opened:
            return
        if len(self._opened) >= MAX_URLS:
            self._limit("URLs", MAX_URLS)
            return
        self._opened.add((url, loaded))
        if loaded:
            self._sink.add(url, LinkKind.COMPONENT, True)
        else:
            self._sink.add(url, LinkKind.PAGE, False)

    def _decode(self, raw: bytes) -> str:
        """A string of the movie: UTF-8 from version 6, the author's ANSI code page before."""
        return raw.decode(self._encoding, "replace")
