"""Removing chunked transfer encoding from a payload that arrives in pieces.

A payload whose headers say `chunked` but whose first line is not a chunk size was stored already
decoded by the tool that wrote the WARC (many do); it passes through unchanged, as replay tools
treat it. A payload that stops in the middle of a chunk is kept as far as it goes and reported as
truncated.
"""

MAX_SIZE_LINE = 1024


class Dechunker:
    """Decodes in one pass: the bytes of each piece are looked at once, whatever the sizes of its
    chunks (a payload of one-byte chunks costs no more than one of large ones)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._at = 0  # where the bytes of `_buffer` not decoded yet start
        self._state = "size"
        self._left = 0
        self.raw: bool | None = None  # None until the first size line is read
        self.broken = False

    def feed(self, data: bytes) -> bytes:
        """The decoded bytes that `data` completes."""
        if self.raw:
            return data
        if self._state in ("done", "broken"):
            return b""
        self._buffer = self._buffer + data if self._buffer else data
        self._at = 0
        out: list[bytes] = []
        while self._at < len(self._buffer) and self._step(out):
            pass
        if self.raw:
            out.append(self._buffer[self._at :])
            self._buffer = b""
        self._buffer = self._buffer[self._at :]
        self._at = 0
        return b"".join(out)

    def finish(self) -> bytes:
        """What is left at the end; sets `broken` when the last chunk never came."""
        if self.raw is None:
            self.raw = True
            rest, self._buffer = self._buffer, b""
            return rest
        if not self.raw and self._state not in ("done", "trailer"):
            self.broken = True
        return b""

    def _step(self, out: list[bytes]) -> bool:
        """Decode one piece of the buffer; False when more input is needed."""
        buffer, at = self._buffer, self._at
        if self._state == "data":
            piece = buffer[at : at + self._left]
            out.append(piece)
            self._left -= len(piece)
            self._at = at + len(piece)
            if self._left:
                return False
            self._state = "crlf"
            return True
        end = buffer.find(b"\n", at)
        if end < 0:
            if len(buffer) - at > MAX_SIZE_LINE:
                self._fail(line=True)
            return False
        line, self._at = buffer[at:end].rstrip(b"\r"), end + 1
        if self._state == "crlf":
            if line:
                self._fail()
                return False
            self._state = "size"
        elif self._state == "size":
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16) if size_text.isalnum() else -1
            except ValueError:
                size = -1
            if size < 0:
                self._at = at
                self._fail(line=True)
                return False
            self.raw = False
            self._left = size
            self._state = "data" if size else "trailer"
        elif self._state == "trailer" and not line:
            self._state = "done"
            self._buffer, self._at = b"", 0
            return False
        return True

    def _fail(self, line: bool = False) -> None:
        """A bad size line first of all means the payload was never chunked: it is then passed
        on from the start of the line."""
        if self.raw is None and line:
            self.raw = True
            return
        self.broken = True
        self._state = "broken"
        self._buffer, self._at = b"", 0
