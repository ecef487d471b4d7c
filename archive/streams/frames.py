"""Codec framing of recorded audio: where frames begin and how many samples they carry.

A recording is cut into chunks and marked with points only at frame boundaries, so that playback
from any point hands a decoder a whole frame first; and the samples counted give the stream's own
clock, against which the collection clock's drift is measured. Three framings cover the streams
of web radios: MPEG audio (MP3, and layers I and II), AAC in ADTS, and Ogg pages (Vorbis, Opus,
FLAC). A scanner is fed the bytes as they come and keeps only the tail of an unfinished frame.

A candidate MPEG or ADTS header counts as a frame only when the next frame's header follows it
(or the data ends): a sync word inside the audio is then not taken for a frame.
"""

import abc
import struct
from dataclasses import dataclass

__all__ = ["FrameScanner", "scanner_for"]

# MPEG audio bit rates in kbit/s by [MPEG-1?][layer][index]; index 0 (free format) and 15 are
# not playable by a stream reader and count as no frame.
_BITRATES = {
    (True, 1): (0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
# Sample rates by version bits (0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1) and index.
_MPEG_RATES = {0: (11025, 12000, 8000), 2: (22050, 24000, 16000), 3: (44100, 48000, 32000)}
_ADTS_RATES = (
    96000,
    88200,
    64000,
    48000,
    44100,
    32000,
    24000,
    22050,
    16000,
    12000,
    11025,
    8000,
    7350,
)
_OGG_HEADER = struct.Struct("<4sBBqIIIB")  # capture pattern, version, type, granule, serial, ...
_OGG_BOS = 0x02


@dataclass
class FrameScanner(abc.ABC):
    """Fed a stream's bytes in order; `boundary` is the stream offset where the next unfinished
    frame begins, `samples` the samples of the frames before it, `junk` the bytes that were no
    frame (a resynchronisation after damage, an ID3 tag)."""

    codec: str
    sample_rate: int = 0
    boundary: int = 0
    samples: int = 0
    junk: int = 0

    def __post_init__(self) -> None:
        self._tail = b""
        self._tail_at = 0  # the stream offset of the tail's first byte

    @property
    def seconds(self) -> float:
        """The stream's own clock: seconds of audio in the frames so far."""
        return self.samples / self.sample_rate if self.sample_rate else 0.0

    def feed(self, data: bytes) -> None:
        # Bytes, not a bytearray: slices of it are keys of the MPEG headers met.
        buffer = self._tail + data if self._tail else bytes(data)
        used = self._scan(buffer)
        self._tail_at += used
        self._tail = buffer[used:]

    @abc.abstractmethod
    def _scan(self, buffer: bytes) -> int:
        """Consume whole frames (and junk) from the buffer's start; how many bytes were used."""


class _MpegScanner(FrameScanner):
    """MPEG-1/2/2.5 audio, layers I to III, and AAC in ADTS: 12-bit sync words, length in the
    header."""

    @abc.abstractmethod
    def _frame(self, buffer: bytes, at: int) -> tuple[int, int, int] | None:
        """(length, samples, sample rate) of a frame header at `at`, or None."""

    def _scan(self, buffer: bytes) -> int:
        # The header that confirms a frame is the next frame's: each is parsed once.
        frame_at = self._frame
        at, end = 0, len(buffer)
        base = self._tail_at
        samples, rate, junk, boundary = self.samples, self.sample_rate, self.junk, self.boundary
        frame = None  # the frame at `at`, when known
        while end - at >= 8:
            if frame is None:
                if buffer[at] != 0xFF:
                    found = buffer.find(b"\xff", at + 1)
                    skip = (found if found >= 0 else end) - at
                    junk += skip
                    at += skip
                    continue
                frame = frame_at(buffer, at)
                if frame is None:
                    junk += 1
                    at += 1
                    continue
            following = at + frame[0]
            if following + 8 > end:
                break  # confirmed once the next header has come
            after = frame_at(buffer, following)
            if after is None:
                junk += 1
                at += 1
                frame = None
                continue
            samples += frame[1]
            rate = frame[2]
            at = following
            boundary = base + at
            frame = after
        self.samples, self.sample_rate, self.junk, self.boundary = samples, rate, junk, boundary
        return at


class _Mp3Scanner(_MpegScanner):
    def _frame(self, buffer: bytes, at: int) -> tuple[int, int, int] | None:
        header = buffer[at : at + 3]
        frame = _MP3_FRAMES.get(header)
        if frame is None:
            frame = _mp3_frame(header)
            if frame is not None:
                _MP3_FRAMES[header] = frame
        return frame


# The MPEG audio headers met so far (their first three bytes, all a frame's length and samples
# depend on): a few dozen in practice, a few thousand at most, as only valid ones are kept.
_MP3_FRAMES: dict[bytes, tuple[int, int, int]] = {}


def _mp3_frame(header: bytes) -> tuple[int, int, int] | None:
    b0, b1, b2 = header
    if b0 != 0xFF or b1 & 0xE0 != 0xE0:
        return None
    version, layer_bits = (b1 >> 3) & 3, (b1 >> 1) & 3
    if version == 1 or layer_bits == 0:
        return None
    index, rate_index = b2 >> 4, (b2 >> 2) & 3
    if index in (0, 15) or rate_index == 3:
        return None
    layer = 4 - layer_bits
    mpeg1 = version == 3
    bitrate = _BITRATES[(mpeg1, layer)][index] * 1000
    rate = _MPEG_RATES[version][rate_index]
    padding = (b2 >> 1) & 1
    if layer == 1:
        return (12 * bitrate // rate + padding) * 4, 384, rate
    if layer == 3 and not mpeg1:
        return 72 * bitrate // rate + padding, 576, rate
    return 144 * bitrate // rate + padding, 1152, rate


class _AdtsScanner(_MpegScanner):
    def _frame(self, buffer: bytes, at: int) -> tuple[int, int, int] | None:
        b0, b1, b2, b3, b4, b5, b6 = buffer[at : at + 7]
        if b0 != 0xFF or b1 & 0xF6 != 0xF0:
            return None
        rate_index = (b2 >> 2) & 0xF
        if rate_index >= len(_ADTS_RATES):
            return None
        length = ((b3 & 3) << 11) | (b4 << 3) | (b5 >> 5)
        header = 7 if b1 & 1 else 9
        if length <= header:
            return None
        return length, 1024 * ((b6 & 3) + 1), _ADTS_RATES[rate_index]


class _OggScanner(FrameScanner):
    """Ogg pages: the granule position of each logical stream counts its samples (at 48 kHz for
    Opus, at the rate of the identification header for Vorbis and FLAC)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._granules: dict[int, int] = {}  # last granule position by serial number
        self._rates: dict[int, int] = {}
        self.stream_starts: list[int] = []  # stream offsets of beginning-of-stream pages

    def _scan(self, buffer: bytes) -> int:
        at, end = 0, len(buffer)
        while end - at >= _OGG_HEADER.size:
            if buffer[at : at + 4] != b"OggS":
                found = buffer.find(b"OggS", at + 1)
                skip = (found if found >= 0 else max(at + 1, end - 3)) - at
                self.junk += skip
                at += skip
                continue
            _, version, kind, granule, serial, _, _, segments = _OGG_HEADER.unpack_from(buffer, at)
            table_end = at + _OGG_HEADER.size + segments
            if table_end > end:
                break
            length = table_end - at + sum(buffer[at + _OGG_HEADER.size : table_end])
            if version != 0:
                self.junk += 1
                at += 1
                continue
            if at + length > end:
                break
            if kind & _OGG_BOS:
                self.stream_starts.append(self._tail_at + at)
                self._granules.pop(serial, None)
                self._rates[serial] = _ogg_rate(buffer[table_end : at + length])
            if granule >= 0:
                last = self._granules.get(serial)
                if last is not None and granule > last:
                    self._add_samples(serial, granule - last)
                self._granules[serial] = granule
            at += length
            self.boundary = self._tail_at + at
        return at

    def _add_samples(self, serial: int, count: int) -> None:
        rate = self._rates.get(serial, 0)
        if rate:
            self.sample_rate = rate
            self.samples += count


def _ogg_rate(packet: bytes) -> int:
    """The granule rate of a logical stream from its identification packet; 0 when unknown."""
    if packet.startswith(b"\x01vorbis") and len(packet) >= 16:
        return int(struct.unpack_from("<I", packet, 12)[0])
    if packet.startswith(b"OpusHead"):
        return 48_000
    if packet.startswith(b"\x7fFLAC") and len(packet) >= 30:
        # The STREAMINFO block follows the 13-byte mapping header and a 4-byte block header.
        return int.from_bytes(packet[27:30], "big") >> 4
    return 0


_BY_TYPE = {
    "audio/mpeg": _Mp3Scanner,
    "audio/mp3": _Mp3Scanner,
    "audio/mpa": _Mp3Scanner,
    "audio/aac": _AdtsScanner,
    "audio/aacp": _AdtsScanner,
    "audio/x-aac": _AdtsScanner,
    "application/ogg": _OggScanner,
    "audio/ogg": _OggScanner,
    "video/ogg": _OggScanner,
    "audio/opus": _OggScanner,
}


def scanner_for(content_type: str | None, head: bytes = b"") -> FrameScanner | None:
    """A scanner for a stream of this media type, or by its first bytes when the type says
    nothing; None for a framing we cannot follow (the stream is then stored without points
    inside chunks other than their starts)."""
    media = (content_type or "").split(";")[0].strip().lower()
    kind = _BY_TYPE.get(media)
    if kind is None:
        kind = _sniff(head)
    if kind is None:
        return None
    return kind(codec=_CODECS[kind])


def _sniff(head: bytes) -> type[FrameScanner] | None:
    if head.startswith(b"OggS"):
        return _OggScanner
    if head.startswith(b"ID3"):
        return _Mp3Scanner
    at = head.find(b"\xff")
    if at >= 0 and at + 1 < len(head):
        second = head[at + 1]
        if second & 0xF6 == 0xF0:
            return _AdtsScanner
        if second & 0xE0 == 0xE0:
            return _Mp3Scanner
    return None


_CODECS: dict[type[FrameScanner], str] = {
    _Mp3Scanner: "mpeg-audio",
    _AdtsScanner: "aac-adts",
    _OggScanner: "ogg",
}
