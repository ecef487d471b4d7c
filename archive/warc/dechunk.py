"""Removing chunked transfer encoding from a payload that arrives in pieces.

A payload whose headers say `chunked` but whose first line is not a chunk size was stored already
decoded by the tool that wrote the WARC (many do); it passes through unchanged, as replay tools
treat it. A payload that stops in the middle of a chunk is kept as far as it goes and reported as
truncated.
"""

MAX_SIZE_LINE = 1024


class Dechunker:
    def __init__(self) -> None:
        self._buffer = b""
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
        self._buffer += data
        out: list[bytes] = []
        while self._buffer and self._step(out):
            pass
        if self.raw:
            out.append(self._buffer)
            self._buffer = b""
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
        buffer = self._buffer
        if self._state == "data":
            piece = buffer[: self._left]
            out.append(piece)
            self._left -= len(piece)
            self._buffer = buffer[len(piece) :]
            if self._left:
                return False
            self._state = "crlf"
            return True
        end = buffer.find(b"\n")
        if end < 0:
            if len(buffer) > MAX_SIZE_LINE:
                self._fail(line=buffer)
            return False
        line, self._buffer = buffer[:end].rstrip(b"\r"), buffer[end + 1 :]
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
                self._fail(line=buffer)
                return False
            self.raw = False
            self._left = size
            self._state = "data" if size else "trailer"
        elif self._state == "trailer" and not line:
            self._state = "done"
            self._buffer = b""
            return False
        return True

    def _fail(self, line: bytes | None = None) -> None:
        """A bad size line first of all means the payload was never chunked."""
        if self.raw is None and line is not None:
            self.raw = True
            self._buffer = line
            return
        self.broken = True
        self._state = "broken"
        self._buffer = b""
