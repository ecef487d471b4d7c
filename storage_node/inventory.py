"""The inventory log: every file a node gained or lost, in order, for the master to read.

One JSON object a line: ``{"seq": 12, "op": "add", "kind": "content", "name": "...", "size": 4096,
"time": 1700000000000000}``. Lines are made durable by a shared flush (group commit): every writer
waits for a flush that covers its line, and concurrent writers share one. Where the system has
syncfs the flush covers the whole filesystem, so it also makes durable the renames that put the
recorded files in place (`syncs_filesystem`); otherwise it is an fdatasync of the log alone.
"""

import asyncio
import itertools
import json
import logging
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from archive.hip import Fields
from archive.store import HAVE_SYNCFS, sync_filesystem

log = logging.getLogger(__name__)

OPS = ("add", "remove")
KINDS = ("content", "structure")
# Entries kept in memory after they are written, so that following the log as it grows costs no
# reading and parsing of it (about 3 MB).
RECENT = 10_000
# A line as `Entry.line` writes it, read without the JSON decoder (6 times faster); any other
# spelling of the same JSON is read by the decoder.
_LINE = re.compile(
    rb'\{"seq":(\d+),"op":"(add|remove)","kind":"(content|structure)","name":"([0-9a-f]{64})",'
    rb'"size":(\d+),"time":(\d+)\}\n?'
)
# Below this many bytes between two bounds, finding an entry's line reads them all instead of
# halving them again.
_SCAN_BELOW = 64 * 1024
# A line is far shorter than this: the longest tail read to find the line before an offset.
_LONGEST_LINE = 4096


@dataclass(frozen=True, slots=True)
class Mark:
    """A place in the log: its first `offset` bytes hold the entries up to `seq`, whole."""

    seq: int
    offset: int


@dataclass(frozen=True, slots=True)
class Entry(Fields):
    seq: int
    op: str
    kind: str
    name: str
    size: int
    time: int

    def line(self) -> bytes:
        """The entry as one line of the log: JSON, written without the encoder since every
        field is a number, a fixed word or a hex name."""
        return (
            f'{{"seq":{self.seq},"op":"{self.op}","kind":"{self.kind}","name":"{self.name}",'
            f'"size":{self.size},"time":{self.time}}}\n'
        ).encode()


def _parse(line: bytes) -> Entry | None:
    match = _LINE.fullmatch(line)
    if match is not None:
        seq, op, kind, name, size, when = match.groups()
        return Entry(int(seq), op.decode(), kind.decode(), name.decode(), int(size), int(when))
    try:
        data = json.loads(line)
        entry = Entry(
            int(data["seq"]),
            str(data["op"]),
            str(data["kind"]),
            str(data["name"]),
            int(data["size"]),
            int(data["time"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return entry if entry.op in OPS and entry.kind in KINDS else None


class InventoryLog:
    """`start`, when given, is a mark saved earlier (with the node's filter): the log is read from
    there to find its end, instead of from its first line, once the line before it is checked."""

    def __init__(self, path: Path, executor: Executor, start: Mark | None = None) -> None:
        self.path = Path(path)
        self._executor = executor
        # Where the reading began: `start`, or the first line when the log does not hold it.
        self.began = Mark(0, 0)
        self.seq, self._size = self._recover(start)
        # The newest entries, each with the byte offset where its line ends.
        self._recent: deque[tuple[Entry, int]] = deque(maxlen=RECENT)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._written = self.seq
        self._synced = self.seq
        self._sync_task: asyncio.Task[None] | None = None
        self.syncs_filesystem = HAVE_SYNCFS
        self._flush = sync_filesystem if HAVE_SYNCFS else os.fdatasync
        self._later: set[asyncio.Task[None]] = set()
        # Called whenever more entries become durable (the node wakes its master link with it).
        self.on_durable: Callable[[], None] = lambda: None

    @property
    def durable_seq(self) -> int:
        """The last entry known to be on disk; only these may be told to a master."""
        return self._synced

    @property
    def mark(self) -> Mark:
        """Where the log ends now: saved with the filter, it lets the next start skip what is
        before it."""
        return Mark(self.seq, self._size)

    def _recover(self, start: Mark | None) -> tuple[int, int]:
        """Find the last sequence number and the log's size, cutting off a line torn by a crash;
        the lines before `start` are taken as they are once the one that ends there is checked."""
        if not self.path.exists():
            return 0, 0
        begin = start if start is not None and self._starts_at(start) else Mark(0, 0)
        self.began = begin
        if start is not None and begin != start:
            log.warning(
                "%s: entry %d does not end at byte %d as saved; reading the whole log",
                self.path,
                start.seq,
                start.offset,
            )
        good_end, seq = begin.offset, begin.seq
        with open(self.path, "rb") as stream:
            stream.seek(good_end)
            for line in stream:
                entry = _parse(line) if line.endswith(b"\n") else None
                if entry is None:
                    break
                good_end += len(line)
                seq = entry.seq
        size = self.path.stat().st_size
        if good_end != size:
            log.warning("%s: dropping %d bytes of a torn last line", self.path, size - good_end)
            os.truncate(self.path, good_end)
        return seq, good_end

    def _starts_at(self, start: Mark) -> bool:
        """Whether the log holds `start`: the line that ends at its offset is entry `start.seq`."""
        if start.offset == 0:
            return start.seq == 0
        try:
            with open(self.path, "rb") as stream:
                if os.fstat(stream.fileno()).st_size < start.offset:
                    return False
                length = min(start.offset, _LONGEST_LINE)
                tail = os.pread(stream.fileno(), length, start.offset - length)
        except FileNotFoundError:
            return False
        begin = tail.rfind(b"\n", 0, len(tail) - 1) + 1
        if begin == 0 and length < start.offset:
            return False
        entry = _parse(tail[begin:]) if tail.endswith(b"\n") else None
        return entry is not None and entry.seq == start.seq

    def append(self, op: str, kind: str, name: str, size: int) -> Entry:
        """Write an entry without waiting for it to be durable (see `durable`)."""
        return self.append_many(op, kind, [(name, size)])[0]

    def append_many(self, op: str, kind: str, files: list[tuple[str, int]]) -> list[Entry]:
        """Write entries for many files in one write, without waiting for them to be durable."""
        now = time.time_ns() // 1000
        entries = []
        lines = []
        for seq, (name, size) in enumerate(files, self.seq + 1):
            entry = Entry(seq, op, kind, name, size, now)
            line = entry.line()
            entries.append(entry)
            lines.append(line)
        view = memoryview(b"".join(lines))
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            # A torn line would end the log there at the next start, and every entry after it.
            os.ftruncate(self._fd, self._size)
            raise
        self.seq += len(entries)
        for entry, line in zip(entries, lines, strict=True):
            self._size += len(line)
            self._recent.append((entry, self._size))
        self._written = self.seq
        return entries

    async def durable(self, entry: Entry) -> None:
        """Return once `entry` and every change made before it are on disk."""
        await self.durable_upto(entry.seq)

    async def durable_upto(self, seq: int) -> None:
        """Return once the entries up to `seq` and every change made before them are on disk."""
        while self._synced < seq:
            if self._sync_task is None:
                self._sync_task = asyncio.create_task(self._sync())
            await asyncio.shield(self._sync_task)

    def durable_later(self, entry: Entry) -> None:
        """Make `entry` durable in the background (for a change nobody waits on)."""
        task = asyncio.get_running_loop().create_task(self.durable(entry))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def flush_now(self) -> None:
        self._flush(self._fd)
        self._advance(self._written)

    def _advance(self, seq: int) -> None:
        if seq > self._synced:
            self._synced = seq
            self.on_durable()

    async def _sync(self) -> None:
        target = self._written
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._flush, self._fd)
            self._advance(target)
        finally:
            self._sync_task = None

    def read_since(self, seq: int, limit: int) -> Iterator[Entry]:
        """Entries after `seq`, oldest first, at most `limit`."""
        count = 0
        with open(self.path, "rb") as stream:
            stream.seek(self.offset_after(seq))
            for line in stream:
                if count >= limit:
                    return
                entry = _parse(line)
                if entry is not None and entry.seq > seq:
                    count += 1
                    yield entry

    def offset_after(self, seq: int) -> int:
        """The byte offset of the first line holding an entry after `seq`, or the log's end: its
        lines are in order, so the file is halved until what is left is short enough to read."""
        with open(self.path, "rb") as stream:
            low, high = 0, os.fstat(stream.fileno()).st_size
            # Every line before `low` holds an entry up to `seq`; the answer is at most `high`.
            while high - low >= _SCAN_BELOW:
                stream.seek((low + high) // 2)
                stream.readline()
                start = stream.tell()
                line = stream.readline()
                entry = _parse(line) if line.endswith(b"\n") else None
                if entry is None or start >= high:
                    break
                if entry.seq <= seq:
                    low = start + len(line)
                else:
                    high = start
            stream.seek(low)
            for line in stream:
                entry = _parse(line)
                if not line.endswith(b"\n") or (entry is not None and entry.seq > seq):
                    break
                low += len(line)
            return low

    def cursor(self, since: int) -> "Cursor":
        return Cursor(self, since, self._recent)

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)


class Cursor:
    """Reads the log forward from a sequence number, remembering its byte offset between reads,
    so following a growing log costs only the new lines, or nothing when they are still in
    memory; its first read from the file finds where to begin by halving the file."""

    def __init__(self, log: InventoryLog, since: int, recent: deque[tuple[Entry, int]]) -> None:
        self._log = log
        self.seq = since
        self._offset: int | None = None
        self._recent = recent

    def read_recent(self, limit: int, upto: int | None = None) -> list[Entry] | None:
        """`read` from the entries kept in memory; None when the next entry is no longer
        there (then `read` the file). Runs on the thread that appends."""
        recent = self._recent
        if not recent or recent[0][0].seq > self.seq + 1:
            return None
        start = max(0, self.seq + 1 - recent[0][0].seq)
        entries: list[Entry] = []
        for entry, end in itertools.islice(recent, start, start + limit):
            if upto is not None and entry.seq > upto:
                break
            entries.append(entry)
            self.seq = entry.seq
            self._offset = end
        return entries

    def read(self, limit: int, upto: int | None = None) -> list[Entry]:
        """The next entries after the last one read, at most `limit` and none after `upto`;
        only whole lines."""
        if self._offset is None:
            self._offset = self._log.offset_after(self.seq)
        entries: list[Entry] = []
        with open(self._log.path, "rb") as stream:
            stream.seek(self._offset)
            while len(entries) < limit:
                line = stream.readline()
                if not line.endswith(b"\n"):
                    break
                entry = _parse(line)
                if entry is not None and upto is not None and entry.seq > upto:
                    break
                self._offset += len(line)
                if entry is not None and entry.seq > self.seq:
                    entries.append(entry)
                    self.seq = entry.seq
        return entries
