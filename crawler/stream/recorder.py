"""Recording one live stream: connect, record, and after a drop reconnect with backoff, the
stretch without data kept as a gap.

What the server answers decides how it is recorded: a playlist is live HLS (`hls.py`); audio or
video with `icy-metaint` is an Icecast or SHOUTcast stream whose metadata blocks are taken out
and logged as titles; other audio or video is progressive. The bytes are cut into chunks at frame
boundaries, with a point every few seconds of collection time that ties the collection clock,
the stream's own clock (from the frames) and the byte offset together (archive/streams).
"""

import asyncio
import contextlib
import hashlib
import logging
import math
import time

from archive.streams import PLAYLIST_TYPES, ChunkLog, Fit, Gap, Point, Title, scanner_for

from ..fetch import FetchError, Resolver
from .hls import record_hls
from .http import LIVE_INTERVAL, StreamResponse, open_stream
from .icy import MAX_METAINT, IcyDemuxer
from .report import Recording, now_micros
from .settings import StreamSettings
from .store import StreamStore

__all__ = ["classify", "record"]

log = logging.getLogger(__name__)

STREAM_TYPE_PREFIXES = ("audio/", "video/")
STREAM_TYPES = frozenset(("application/ogg", "application/octet-stream", "binary/octet-stream"))
# Bytes of a stream of a known codec in which no frame was found: not that codec at all.
NO_FRAME_LIMIT = 64 * 1024


class _Chunker:
    """Cuts one connection's audio into chunks at frame boundaries, with points and titles."""

    def __init__(
        self,
        recording: Recording,
        response: StreamResponse,
        protocol: str,
        settings: StreamSettings,
        store: StreamStore,
        gap: Gap | None,
    ) -> None:
        self.recording, self.response, self.protocol = recording, response, protocol
        self.settings, self.store, self.gap = settings, store, gap
        self.connected = now_micros()
        self.scanner = scanner_for(response.content_type)
        self.buffer = bytearray()
        self.base = 0  # the stream offset of the buffer's first byte
        self.received = 0
        self.points: list[Point] = []
        self.titles: list[Title] = []
        self.next_cut = time.monotonic() + settings.chunk_seconds
        # Read on a grid of times from the first piece, as far apart as can be while the points
        # fall on it: each point or cut falls due on the read nearest its time (not on the one
        # after it), so that points stay evenly spaced.
        self.interval = settings.point_seconds / math.ceil(settings.point_seconds / LIVE_INTERVAL)
        self.next_point = 0.0
        self.sums = [0.0] * 5  # the least-squares sums of the chunk's reads (archive Fit)

    def _stream_at(self) -> tuple[float, int]:
        """The stream clock and the stream offset of the latest frame boundary."""
        if self.scanner is None:
            return 0.0, self.received
        return self.scanner.seconds, self.scanner.boundary

    def add(
        self, audio: bytes, titles: list[tuple[int, str]], arrived: int, last: bool = False
    ) -> None:
        """Take the audio of a read, the titles it brought and when its last bytes arrived;
        `last`: the recording stops, and `finish` ends the chunk."""
        now, clock = arrived, time.monotonic()
        first = not self.received
        slack = 0.0 if last else self.interval / 2  # (the last read is not on the grid)
        if self.scanner is None and not self.received:
            self.scanner = scanner_for(None, audio[:4096])
        if self.scanner is not None:
            self.scanner.feed(audio)
            if self.scanner.boundary == 0 and self.received > NO_FRAME_LIMIT:
                raise FetchError(
                    "not-audio",
                    f"{self.response.url}: no {self.scanner.codec} frame in the first"
                    f" {NO_FRAME_LIMIT} bytes of a {self.response.content_type} stream",
                )
        self.received += len(audio)
        self.buffer += audio
        seconds, boundary = self._stream_at()
        # Not the first read: it may hold part of the burst a server sends a new listener at
        # once, which says nothing of the stream's clock.
        if self.scanner is not None and self.scanner.sample_rate and not first:
            x, sums = (now - self.connected) / 1e6, self.sums
            sums[0] += 1
            sums[1] += x
            sums[2] += seconds
            sums[3] += x * x
            sums[4] += x * seconds
        for at, title in titles:
            if self.recording.titles and self.recording.titles[-1].title == title:
                continue  # a server may send the same title again
            self.titles.append(Title(now, seconds, max(0, at - self.base), title))
            self.recording.titles.append(self.titles[-1])
            log.info("%s: title %r", self.recording.url, title)
        if not self.points:
            self.points.append(Point(now, seconds, boundary - self.base))
            self.next_point = clock + self.settings.point_seconds
        elif clock >= self.next_point - slack and boundary - self.base > self.points[-1].offset:
            self.points.append(Point(now, seconds, boundary - self.base))
            self.next_point += self.settings.point_seconds
        full = len(self.buffer) >= self.settings.chunk_bytes
        if full or (clock >= self.next_cut - slack and not last):
            self.cut(boundary if boundary > self.base else self.base + len(self.buffer), now)
            self.next_cut += self.settings.chunk_seconds
            if full or self.next_cut <= clock:
                self.next_cut = clock + self.settings.chunk_seconds

    def cut(self, at: int, now: int) -> None:
        """Store the buffer up to stream offset `at` as a chunk; the rest starts the next."""
        size = at - self.base
        if size <= 0:
            return
        data = bytes(self.buffer[:size])
        seconds, _ = self._stream_at()
        name = hashlib.sha256(data).hexdigest()
        points = [p for p in self.points if p.offset < size] or [Point(now, seconds, 0)]
        chunk_log = ChunkLog(
            url=self.recording.url,
            recording=self.recording.recording,
            protocol=self.protocol,
            content_type=self.response.content_type,
            connected=self.connected,
            points=tuple(points),
            end=Point(now, seconds, size),
            codec=self.scanner.codec if self.scanner else "",
            sample_rate=self.scanner.sample_rate if self.scanner else 0,
            chunk=name,
            size=size,
            titles=tuple(t for t in self.titles if t.offset < size),
            gap=self.gap,
            fit=Fit(int(self.sums[0]), *self.sums[1:]),
        )
        self.store.chunk(chunk_log, data, self.response.header_block, self.response.status)
        self.recording.logs.append(chunk_log)
        self.recording.chunks += 1
        del self.buffer[:size]
        self.base = at
        self.gap = None
        self.titles = [
            Title(t.time, t.stream, t.offset - size, t.title)
            for t in self.titles
            if t.offset >= size
        ]
        self.points = [Point(now, seconds, 0)]
        self.sums = [0.0] * 5

    def finish(self) -> None:
        if self.buffer:
            self.cut(self.base + len(self.buffer), now_micros())


def classify(response: StreamResponse, head: bytes) -> str:
    """hls, icy or progressive; FetchError for what is no stream (an HTML page, say)."""
    media = response.content_type
    if media in PLAYLIST_TYPES or head.lstrip().startswith(b"#EXTM3U"):
        return "hls"
    if response.header("icy-metaint") is not None:
        return "icy"
    if media.startswith(STREAM_TYPE_PREFIXES) or media in STREAM_TYPES:
        return "progressive"
    if not media and scanner_for(None, head) is not None:
        return "progressive"
    raise FetchError(
        "not-a-stream", f"{response.url}: answered {media or 'no media type'}, not audio or video"
    )


async def record(
    recording: Recording,
    store: StreamStore,
    resolver: Resolver,
    settings: StreamSettings,
    resumes: int | None = None,
) -> None:
    """Record until cancelled, reconnecting after every failure; what was received up to the
    cancellation is stored, and a gap still open is closed. `resumes`: when another agent's
    recording of the stream ended, the start of a gap before this one's first chunk."""
    url = recording.url
    failures = 0
    gap_since = resumes
    gap_kind, gap_message = "handover", "the agent recording the stream stopped; another took it"
    try:
        while True:
            chunker: _Chunker | None = None
            try:
                response = await open_stream(url, resolver, settings.timeout)
                recording.connections += 1
                try:
                    if response.status != 200:
                        raise FetchError(
                            "status", f"{url}: answered {response.status} {response.reason}"
                        )
                    first = await response.read()
                    kind = classify(response, first)
                    recording.protocol, recording.content_type = kind, response.content_type
                    gap = _gap(gap_since, gap_kind, gap_message, recording)
                    gap_since, failures = None, 0
                    if kind == "hls":
                        await record_hls(recording, response, first, store, resolver, settings, gap)
                    else:
                        chunker = _Chunker(recording, response, kind, settings, store, gap)
                        await _progressive(recording, response, first, chunker)
                finally:
                    response.close()
                    if chunker is not None:
                        chunker.finish()
                raise FetchError("ended", f"{url}: the server ended the stream")
            except FetchError as exc:
                recording.errors[exc.kind] += 1
                log.warning("%s: %s (%s)", url, exc, exc.kind)
                if gap_since is None:
                    gap_since, gap_kind, gap_message = now_micros(), exc.kind, str(exc)
                failures += 1
            await asyncio.sleep(settings.backoff[min(failures, len(settings.backoff)) - 1])
    finally:
        _gap(gap_since, gap_kind, gap_message, recording)


def _gap(since: int | None, kind: str, message: str, recording: Recording) -> Gap | None:
    if since is None:
        return None
    gap = Gap(since, now_micros(), kind, message)
    recording.gaps.append(gap)
    return gap


async def _progressive(
    recording: Recording,
    response: StreamResponse,
    first: bytes,
    chunker: _Chunker,
) -> None:
    metaint = response.header("icy-metaint")
    demuxer = IcyDemuxer(_metaint(metaint, response.url)) if metaint is not None else None

    def take(piece: bytes, last: bool = False) -> None:
        if demuxer is not None:
            audio, blocks = demuxer.feed(piece)
            titles = [(b.at, t) for b in blocks if (t := b.title) is not None]
        else:
            audio, titles = piece, []
        recording.bytes += len(audio)
        chunker.add(audio, titles, response.arrived, last)
        if demuxer is not None and demuxer.error is not None:
            raise FetchError("bad-metadata", str(demuxer.error))

    piece = first
    try:
        while piece:
            take(piece)
            piece = await response.read_live(chunker.interval)
    except asyncio.CancelledError:
        # Stopped: what came since the last read is kept too.
        rest = response.read_waiting()
        if rest:
            with contextlib.suppress(FetchError):
                take(rest, last=True)
        raise


def _metaint(value: str, url: str) -> int:
    if not value.strip().isdigit() or not 0 < int(value) <= MAX_METAINT:
        raise FetchError(
            "bad-metadata", f"{url}: icy-metaint {value!r} is not a number from 1 to {MAX_METAINT}"
        )
    return int(value)
