"""Storing what a stream recorder made: chunks with their points and logs, HLS segments.

A chunk is one content (its bytes), one `stream_segment` record a point in the stream URL's
structure file (the chunk and the offset of the point's frame), and its log (`stream_log`, at the
first point). An HLS segment is a response of its own URL, plus a `stream_segment` record in the
stream URL's file at its program date-time. Each insert is retried until it is stored or the
recording is stopped for good: a cluster that is away for a while loses nothing the agent holds.
Inserts go one batch at a time: what came while one was on its way goes in the next, in one
call (the contents in few uploads, the records in one batch), rather than a round of calls to the
cluster for each chunk of each stream.
"""

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from archive.cluster import ClusterClient, NewCapture
from archive.errors import DlwebError
from archive.header_block import encode_header_block
from archive.streams import LOG_TYPE, REGISTRY_URL, ChunkLog

__all__ = ["StreamStore"]

# Seconds the recorder has, once the duration is over, to store what it holds.
STORE_GRACE = 120.0

log = logging.getLogger(__name__)

RETRIES = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # seconds between attempts; the last repeats
LOG_HEADER = encode_header_block(200, "OK", [("Content-Type", LOG_TYPE)])
LOG_HEADER_NAME = hashlib.sha256(LOG_HEADER).hexdigest()


@dataclass
class StoreStats:
    inserts: int = 0
    failures: int = 0
    bytes: int = 0


@dataclass
class _Insert:
    captures: list[NewCapture]
    files: dict[str, bytes]
    what: str


class StreamStore:
    """Inserts in the background, in batches, each retried; `join` waits until all are
    stored."""

    def __init__(self, client: ClusterClient, attempts: int | None = None) -> None:
        self.client = client
        self.attempts = attempts  # None: until stored or cancelled
        self.stats = StoreStats()
        self._waiting: list[_Insert] = []  # the next batch
        self._sending = False  # a batch is on its first attempt
        self._tasks: dict[asyncio.Task[bool], int] = {}  # batches not stored yet, their sizes
        self._registered: set[str] = set()  # recordings entered in the registry of streams
        self.failed: list[str] = []  # what could not be stored, for the report

    def chunk(self, log: ChunkLog, data: bytes, header_block: bytes, status: int) -> None:
        """Store a chunk of a progressive stream under its points, and its log."""
        assert log.chunk is not None
        header = hashlib.sha256(header_block).hexdigest()
        captures = [
            NewCapture(
                url=log.url,
                time=point.time,
                content=log.chunk,
                header=header,
                status=status,
                size=len(data),
                header_size=len(header_block),
                kind="stream_segment",
                offset=point.offset,
            )
            for point in log.points
        ]
        files = {log.chunk: data, header: header_block}
        self._with_log(log, captures, files)

    def segments(
        self,
        log: ChunkLog,
        responses: Sequence[tuple[str, int, int, bytes, bytes]],
    ) -> None:
        """Store HLS segments (URL, fetch time, status, header block, body) and the log that
        lists them."""
        captures: list[NewCapture] = []
        files: dict[str, bytes] = {}
        for (url, time, status, block, body), segment in zip(responses, log.segments, strict=True):
            header = hashlib.sha256(block).hexdigest()
            files[segment.content], files[header] = body, block
            response = NewCapture(
                url=url,
                time=time,
                content=segment.content,
                header=header,
                status=status,
                size=len(body),
                header_size=len(block),
            )
            at = segment.program_time if segment.program_time is not None else segment.time
            captures.append(response)
            captures.append(replace(response, url=log.url, time=at, kind="stream_segment"))
        self._with_log(log, captures, files)

    def response(self, url: str, time: int, status: int, block: bytes, body: bytes) -> None:
        """Store an ordinary response met on the way (a playlist as it was seen)."""
        content, header = hashlib.sha256(body).hexdigest(), hashlib.sha256(block).hexdigest()
        capture = NewCapture(
            url=url,
            time=time,
            content=content,
            header=header,
            status=status,
            size=len(body),
            header_size=len(block),
        )
        self._start([capture], {content: body, header: block}, url)

    def _with_log(
        self, chunk_log: ChunkLog, captures: list[NewCapture], files: dict[str, bytes]
    ) -> None:
        data = chunk_log.encode()
        name = hashlib.sha256(data).hexdigest()
        files[name], files[LOG_HEADER_NAME] = data, LOG_HEADER
        entry = NewCapture(
            url=chunk_log.url,
            time=chunk_log.start,
            content=name,
            header=LOG_HEADER_NAME,
            status=200,
            size=len(data),
            header_size=len(LOG_HEADER),
            kind="stream_log",
        )
        captures.append(entry)
        if chunk_log.recording not in self._registered:
            self._registered.add(chunk_log.recording)
            captures.append(replace(entry, url=REGISTRY_URL))
        self._start(captures, files, chunk_log.url)

    def _start(self, captures: list[NewCapture], files: dict[str, bytes], what: str) -> None:
        self._waiting.append(_Insert(captures, files, what))
        if not self._sending:
            self._send()

    def _send(self) -> None:
        """Insert what waits, as one batch."""
        batch, self._waiting = self._waiting, []
        self._sending = True
        task = asyncio.create_task(self._insert(batch))
        self._tasks[task] = len(batch)
        task.add_done_callback(self._tasks.pop)

    async def _insert(self, batch: list[_Insert]) -> bool:
        captures = [capture for insert in batch for capture in insert.captures]
        files = {name: body for insert in batch for name, body in insert.files.items()}
        what = batch[0].what if len(batch) == 1 else f"{batch[0].what} and {len(batch) - 1} more"
        attempt = 0
        while True:
            try:
                try:
                    await self.client.insert(captures, files.__getitem__)
                finally:
                    if not attempt:
                        # The next batch goes now; this one's retries do not hold it back.
                        self._sending = False
                        if self._waiting:
                            self._send()
            except DlwebError as exc:
                attempt += 1
                self.stats.failures += 1
                if self.attempts is not None and attempt >= self.attempts:
                    self.failed.extend(f"{insert.what}: {exc}" for insert in batch)
                    log.error("%s: not stored after %d attempts: %s", what, attempt, exc)
                    return False
                delay = RETRIES[min(attempt, len(RETRIES)) - 1]
                log.warning("%s: insert failed (%s), again in %g s", what, exc, delay)
                await asyncio.sleep(delay)
                continue
            self.stats.inserts += len(batch)
            self.stats.bytes += sum(len(body) for body in files.values())
            return True

    @property
    def pending(self) -> int:
        """Inserts not stored yet."""
        return len(self._waiting) + sum(self._tasks.values())

    async def join(self) -> None:
        while self._waiting or self._tasks:
            if self._waiting and not self._sending:
                self._send()
            await asyncio.gather(*self._tasks)
