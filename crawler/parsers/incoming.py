"""What the HTML and XML readers share: a document read as it arrives, its first bytes held until
its charset is decided, then decoded and handed to lxml in blocks of the same size whatever the
chunking (common.Blocks), a parser failure noted once and never raised."""

from abc import ABC, abstractmethod
from typing import Any

from .common import Blocks, Decoder, LinkSink, decoder


class Incoming(ABC):
    """The base of a reader: `_charset_of` decides the charset from the held head, `_push`
    takes the decoded text and passes its blocks to `_parse`."""

    def __init__(self, sink: LinkSink, kind: str, head_size: int, lxml: Any) -> None:
        self._sink = sink
        self._kind = kind  # HTML or XML, as the problems name it
        self._head_size = head_size
        self._lxml = lxml
        self._head = bytearray()  # held until the charset is known
        self._decoder: Decoder | None = None
        self._blocks = Blocks()
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        if self._decoder is None:
            self._head += chunk
            if len(self._head) >= self._head_size:
                self._start()
        else:
            self._push(self._decoder.decode(chunk))

    @abstractmethod
    def _charset_of(self, head: bytes) -> str | None: ...

    @abstractmethod
    def _push(self, text: str) -> None: ...

    def _start(self) -> None:
        head = bytes(self._head)
        self._head.clear()
        self._decoder = decoder(self._charset_of(head), self._sink)
        self._push(self._decoder.decode(head))

    def _rest(self) -> bytes:
        """At the document's end: all of it decoded, the bytes of its last block."""
        if self._decoder is None:
            self._start()
        assert self._decoder is not None
        self._push(self._decoder.decode(b"", final=True))
        return self._blocks.rest()

    def _parse(self, block: bytes) -> None:
        if self._failed or not block:
            return
        try:
            self._lxml.feed(block)
        except Exception as error:  # a parser must never fail: note it and keep what was found
            self._failed = True
            self._sink.problem(f"{self._kind} parsing stopped: {error}")

    def _close_lxml(self) -> bool:
        """End lxml's reading; whether the whole document was read without a failure."""
        if self._failed:
            return False
        try:
            self._lxml.close()
        except Exception as error:  # a parser must never fail: note it and keep what was found
            self._sink.problem(f"{self._kind} parsing stopped: {error}")
            return False
        return True
