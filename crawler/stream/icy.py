"""ICY metadata (Icecast, SHOUTcast): titles interleaved with the audio every `icy-metaint` bytes.

After each `metaint` bytes of audio comes one length byte L and 16 L bytes of text such as
`StreamTitle='Artist - Song';StreamUrl='';`, padded with NUL bytes. The demuxer takes the blocks
out, so that what is archived is the audio as an ordinary listener's decoder gets it, and hands
the titles on with the audio offset where they came.
"""

import re
from dataclasses import dataclass

from archive.errors import DlwebError

__all__ = ["BadMetadata", "IcyDemuxer", "MetaBlock"]

MAX_METAINT = 1 << 20
# Text of a metadata block: `Key='value';` pairs (a value may hold quotes and semicolons, so a
# pair ends at the next `';` that a key or the end follows).
_PAIRS = re.compile(r"(?:[A-Za-z][A-Za-z0-9_]*='.*?';)*", re.S)
_TITLE = re.compile(r"StreamTitle='(.*?)';(?=[A-Za-z][A-Za-z0-9_]*='|$)", re.S)


class BadMetadata(DlwebError):
    """A metadata block that is not ICY text: the stream is out of step with its interval."""


@dataclass(frozen=True, slots=True)
class MetaBlock:
    at: int  # the audio offset (bytes of audio before it) where the block came
    text: str

    @property
    def title(self) -> str | None:
        found = _TITLE.search(self.text)
        return found.group(1) if found else None


class IcyDemuxer:
    """Split a response body into audio and metadata blocks as it arrives."""

    def __init__(self, metaint: int) -> None:
        if not 0 < metaint <= MAX_METAINT:
            raise BadMetadata(f"icy-metaint {metaint} is not between 1 and {MAX_METAINT}")
        self.metaint = metaint
        self.audio_bytes = 0
        self._left = metaint  # audio bytes before the next length byte
        self._meta: bytearray | None = None  # a block being read
        self._meta_left = 0
        self.error: BadMetadata | None = None  # set when a block was bad: nothing after it is read

    def feed(self, data: bytes) -> tuple[bytes, list[MetaBlock]]:
        """The audio in `data` and the non-empty metadata blocks it completed, up to a bad block
        (then `error` says what was wrong)."""
        audio: list[bytes] = []
        blocks: list[MetaBlock] = []
        at, end = 0, len(data)
        while at < end and self.error is None:
            if self._meta is not None:
                take = min(self._meta_left, end - at)
                self._meta += data[at : at + take]
                self._meta_left -= take
                at += take
                if not self._meta_left:
                    try:
                        blocks.append(self._finish(bytes(self._meta)))
                    except BadMetadata as exc:
                        self.error = exc
                    self._meta = None
                    self._left = self.metaint
                continue
            if self._left:
                take = min(self._left, end - at)
                audio.append(data[at : at + take])
                self._left -= take
                self.audio_bytes += take
                at += take
                continue
            length = data[at] * 16
            at += 1
            if length:
                self._meta, self._meta_left = bytearray(), length
            else:
                self._left = self.metaint
        return b"".join(audio), [block for block in blocks if block.text]

    def _finish(self, raw: bytes) -> MetaBlock:
        text = raw.rstrip(b"\0").decode("utf-8", errors="replace")
        if b"\0" in raw.rstrip(b"\0") or not _PAIRS.fullmatch(text):
            shown = text[:60].encode("unicode_escape").decode()
            raise BadMetadata(
                f"ICY metadata block at audio byte {self.audio_bytes} is not Key='value'; text"
                f" ({shown!r}): the stream is out of step with its metadata interval"
            )
        return MetaBlock(self.audio_bytes, text)
