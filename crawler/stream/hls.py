"""Recording live HLS: the media playlist followed as it slides, each new segment fetched once.

A master playlist's rendition is chosen by a rule (`highest`, `lowest`, or the most bits per
second to take). Each segment is archived as a response of its own URL and listed, with its
duration, sequence number, `EXT-X-PROGRAM-DATE-TIME` and discontinuity, in the stream's logs;
every playlist seen that changed is archived too. Segments the playlist slid past before they
were fetched, a segment that cannot be fetched, and a playlist that stops advancing are gaps.
"""

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field

import m3u8

from archive.streams import ChunkLog, Fit, Gap, Point, Segment
from archive.timestamps import to_micros

from ..fetch import FetchError, Resolver
from .http import StreamResponse, open_stream
from .report import Recording, now_micros
from .settings import StreamSettings
from .store import StreamStore

__all__ = ["choose_rendition", "record_hls"]

log = logging.getLogger(__name__)

MAX_PLAYLIST = 1024 * 1024
MAX_SEGMENT = 256 * 1024 * 1024
PLAYLIST_FAILURES = 3  # failed reloads in a row before the stream counts as dropped


async def read_all(response: StreamResponse, limit: int) -> bytes:
    parts, size = [], 0
    while piece := await response.read():
        parts.append(piece)
        size += len(piece)
        if size > limit:
            raise FetchError("too-large", f"{response.url}: over {limit} bytes")
    return b"".join(parts)


def choose_rendition(playlist: "m3u8.M3U8", rule: str) -> str:
    """The URL of the master playlist's variant the rule picks."""
    variants = sorted(playlist.playlists, key=lambda p: p.stream_info.bandwidth or 0)
    if not variants:
        raise FetchError("bad-playlist", "the master playlist lists no variant")
    if rule == "lowest":
        return str(variants[0].absolute_uri)
    if rule == "highest":
        return str(variants[-1].absolute_uri)
    limit = int(rule)
    fitting = [p for p in variants if (p.stream_info.bandwidth or 0) <= limit]
    return str((fitting[-1] if fitting else variants[0]).absolute_uri)


def _parse(body: bytes, url: str) -> "m3u8.M3U8":
    text = body.decode("utf-8", errors="replace")
    if not text.lstrip().startswith("#EXTM3U"):
        raise FetchError("bad-playlist", f"{url}: not an M3U8 playlist")
    try:
        return m3u8.loads(text, uri=url)
    except (ValueError, IndexError, AttributeError) as exc:
        raise FetchError("bad-playlist", f"{url}: unreadable playlist: {exc}") from None


@dataclass
class _Follower:
    recording: Recording
    store: StreamStore
    resolver: Resolver
    settings: StreamSettings
    gap: Gap | None
    connected: int = field(default_factory=now_micros)
    clock: float = 0.0  # seconds of media since the connection began
    pending: list[tuple[Segment, tuple[str, int, int, bytes, bytes]]] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    last_playlist: bytes = b""
    last_sequence: int | None = None
    last_media_sequence: int | None = None
    advanced: float = field(default_factory=time.monotonic)
    fit: Fit = Fit()

    async def get(self, url: str, limit: int) -> tuple[StreamResponse, bytes, int]:
        response = await open_stream(url, self.resolver, self.settings.timeout)
        try:
            fetched = now_micros()
            if response.status != 200:
                raise FetchError("status", f"{url}: answered {response.status} {response.reason}")
            return response, await read_all(response, limit), fetched
        finally:
            response.close()

    async def take(self, url: str, response: StreamResponse, body: bytes, fetched: int) -> float:
        """Archive a media playlist as seen and fetch its new segments; the seconds to wait
        before the next reload."""
        playlist = _parse(body, url)
        target = float(playlist.target_duration or 2)
        if body != self.last_playlist:
            self.store.response(url, fetched, response.status, response.header_block, body)
            self.last_playlist = body
        sequence = playlist.media_sequence or 0
        if self.last_media_sequence is not None and sequence < self.last_media_sequence:
            self.recording.errors["playlist-loop"] += 1
            log.warning(
                "%s: media sequence went back from %d to %d",
                url,
                self.last_media_sequence,
                sequence,
            )
        self.last_media_sequence = sequence
        new = 0
        for index, segment in enumerate(playlist.segments):
            number = sequence + index
            if self.last_sequence is not None and number <= self.last_sequence:
                continue
            if str(segment.absolute_uri) in self.recording.segment_urls:
                continue  # taken before a reconnection, or listed again by a looping playlist
            if self.last_sequence is not None and number > self.last_sequence + 1:
                self.open_gap(
                    "segments-missed",
                    f"{url}: segments {self.last_sequence + 1} to {number - 1} left the playlist before they were fetched",
                )
            self.last_sequence = number
            new += 1
            await self.segment(segment, number)
        if new:
            self.advanced = time.monotonic()
        elif time.monotonic() - self.advanced > max(3 * target, self.settings.timeout):
            raise FetchError(
                "playlist-stuck",
                f"{url}: no new segment for {time.monotonic() - self.advanced:.0f} s",
            )
        if playlist.is_endlist:
            self.flush()
            raise FetchError("ended", f"{url}: the playlist ended (EXT-X-ENDLIST)")
        return target if new else target / 2

    async def segment(self, segment: "m3u8.Segment", number: int) -> None:
        url = str(segment.absolute_uri)
        seen = now_micros()
        try:
            response, body, fetched = await self.get(url, MAX_SEGMENT)
        except FetchError as exc:
            self.recording.errors[f"segment-{exc.kind}"] += 1
            self.open_gap(f"segment-{exc.kind}", str(exc))
            self.clock += float(segment.duration or 0)
            return
        program = segment.current_program_date_time
        entry = Segment(
            url=url,
            content=hashlib.sha256(body).hexdigest(),
            duration=float(segment.duration or 0),
            sequence=number,
            time=seen,
            program_time=to_micros(program) if program is not None else None,
            discontinuity=bool(segment.discontinuity),
            size=len(body),
        )
        self.recording.segment_urls.append(url)
        self.clock += entry.duration
        self.points.append(Point(seen, self.clock, 0))
        self.fit = self.fit.add((seen - self.connected) / 1e6, self.clock)
        self.pending.append((entry, (url, fetched, response.status, response.header_block, body)))
        self.recording.segments += 1
        self.recording.bytes += len(body)
        if sum(s.duration for s, _ in self.pending) >= self.settings.chunk_seconds:
            self.flush()

    def open_gap(self, kind: str, message: str) -> None:
        """A gap from the last segment recorded to now: what was stored so far is logged first."""
        self.flush()
        log.warning("%s (%s)", message, kind)
        gap = Gap(
            self.points[-1].time if self.points else self.connected, now_micros(), kind, message
        )
        self.recording.gaps.append(gap)
        self.gap = gap

    def flush(self) -> None:
        if not self.pending:
            return
        chunk_log = ChunkLog(
            url=self.recording.url,
            recording=self.recording.recording,
            protocol="hls",
            content_type=self.recording.content_type,
            connected=self.connected,
            points=tuple(self.points[: len(self.pending)]),
            end=self.points[len(self.pending) - 1],
            gap=self.gap,
            segments=tuple(s for s, _ in self.pending),
            fit=self.fit,
        )
        self.store.segments(chunk_log, [r for _, r in self.pending])
        self.recording.logs.append(chunk_log)
        self.recording.chunks += 1
        self.points = self.points[len(self.pending) :]
        self.pending, self.gap, self.fit = [], None, Fit()


async def record_hls(
    recording: Recording,
    response: StreamResponse,
    first: bytes,
    store: StreamStore,
    resolver: Resolver,
    settings: StreamSettings,
    gap: Gap | None,
) -> None:
    """Follow a live playlist until it ends, stops advancing, or cannot be reloaded."""
    fetched = now_micros()
    body = first + await read_all(response, MAX_PLAYLIST)
    follower = _Follower(recording, store, resolver, settings, gap)
    playlist = _parse(body, response.url)
    url = response.url
    if playlist.is_variant:
        store.response(url, fetched, response.status, response.header_block, body)
        url = choose_rendition(playlist, settings.rendition)
        response, body, fetched = await follower.get(url, MAX_PLAYLIST)
    failures = 0
    try:
        while True:
            wait = await follower.take(url, response, body, fetched)
            await asyncio.sleep(wait)
            try:
                response, body, fetched = await follower.get(url, MAX_PLAYLIST)
                failures = 0
            except FetchError as exc:
                failures += 1
                recording.errors[f"playlist-{exc.kind}"] += 1
                if failures >= PLAYLIST_FAILURES:
                    raise
                log.warning("%s: reload failed (%s), trying again", url, exc)
    finally:
        follower.flush()
