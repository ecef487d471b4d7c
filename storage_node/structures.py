"""Writing structure files: captures appended (to one file, or to a batch of files kept in
volumes), a batch of new files created together, and whole copies sent by the master."""

import enum
import logging
import os
import uuid
from collections.abc import AsyncIterable, Iterable, Sequence
from pathlib import Path

from archive.errors import ClientFault, CorruptFile, DlwebError
from archive.store import fsync_dir
from archive.structure import Capture, StructureFile, encode_file
from archive.urlkey import structure_name

from .counts import STRUCTURE
from .holdings import Holdings
from .space import Space
from .stores import Staged

log = logging.getLogger(__name__)


class Copy(enum.Enum):
    """Which copy of a structure file an append reaches."""

    # The copy inserts append to: an append makes it fresh.
    ACTIVE = "active"
    # Another copy an insert appends to before it is acknowledged: its mark stays as it was.
    OTHER = "other"
    # Another copy, which an append creates when missing without the file's older records: a
    # copy so created is stale until refreshed from the active one.
    PARTIAL = "partial"


class UrlMismatch(ClientFault):
    """A structure write whose URL does not hash to the file name it was sent to."""


class DamagedCopy(ClientFault):
    """A whole structure file sent that does not read as one."""


class StructureWrites:
    """Writes the node's structure files, through `holdings` so they are logged, counted and
    their stale marks kept, within the free space `space` allows."""

    def __init__(self, holdings: Holdings, space: Space) -> None:
        self.holdings = holdings
        self.space = space

    async def append_captures(
        self, name: str, url: str, captures: Sequence[Capture], copy: Copy = Copy.ACTIVE
    ) -> tuple[int, bool]:
        """Add captures to a URL's structure file, creating it if needed; returns how many were
        new and whether the file was created. The caller has checked that the URL belongs to the
        file name (the HTTP handlers do)."""
        with self.space.writing(0, held=self.holdings.holds(STRUCTURE, name)):
            return await self._append_captures(name, url, captures, copy)

    async def _append_captures(
        self, name: str, url: str, captures: Sequence[Capture], copy: Copy
    ) -> tuple[int, bool]:
        """`append_captures` under the file's lock, within the space check."""
        store = self.holdings.structures
        async with self.holdings.names.hold((name,)):
            if not self.holdings.holds(STRUCTURE, name):
                unique = list(dict.fromkeys(captures))
                data = encode_file(url, unique)

                async def create() -> None:
                    await self.holdings.place(
                        await self.holdings.run_io(store.stage_version, name, data)
                    )

                await self.holdings.add_file(STRUCTURE, name, len(data), create)
                self._created([name], copy)
                return len(unique), True
            before = store.size(name)
            in_volume = store.in_volume(name)
            self._appended([name], copy)
            with store.open_structure(name, writable=not in_volume) as sfile:
                fresh, in_order = sfile.plan_append(captures)
                if not fresh:
                    return 0, False
                if in_order and not in_volume and self.holdings.committer is not None:
                    await self.holdings.run_io(sfile.append_in_order, fresh, False)
                    await self.holdings.committer.flush()
                elif in_order and not in_volume:
                    await self.holdings.run_io(sfile.append_in_order, fresh)
                else:
                    version = await self.holdings.run_io(
                        store.stage_version, name, sfile.merged_bytes(fresh)
                    )
                    await self.holdings.place(version)
                    if self.holdings.committer is not None:
                        # The group commit flushed the bytes, then wrote the index record.
                        await self.holdings.committer.flush()
            self.holdings.counts.bytes[STRUCTURE] += store.size(name) - before
            return len(fresh), False

    def _appended(self, names: Iterable[str], copy: Copy) -> None:
        """An append to the active copy of a structure file makes it fresh (the master merges
        into it what a lost active copy had); one to another copy changes nothing."""
        if self.holdings.stale and copy is Copy.ACTIVE:
            for name in names:
                self.holdings.unmark_stale(name)

    def _created(self, names: list[str], copy: Copy) -> None:
        """A partial copy just created lacks the older records: stale until refreshed."""
        if copy is Copy.PARTIAL and names:
            self.holdings.mark_stale(names)

    async def append_in_volumes(
        self, files: Sequence[tuple[str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        """`append_captures` for a batch of files kept in volumes, together: their records are
        read and their new versions staged in one worker call, then placed through one group
        commit. Returns how many records each file got (0 when it had them all); a file left
        out is for `append_captures` (not held meanwhile, or kept as a file of its own, which
        is appended to in place). Of a name given twice, the first is taken. The caller has
        checked each URL against its file name."""
        wanted: dict[str, Sequence[Capture]] = {}
        for name, captures in files:
            wanted.setdefault(name, captures)
        if not wanted:
            return {}
        async with self.holdings.names.hold(wanted):
            with self.space.writing(0, held=True):
                planned = await self.holdings.run_io(self._plan_appends, list(wanted.items()))
                versions = [version for _, _, _, version in planned if version is not None]
                try:
                    if versions:
                        await self.holdings.place_all(versions)
                        if self.holdings.committer is not None:
                            # Replacements have no inventory entry to flush them: flush here.
                            await self.holdings.committer.flush()
                finally:
                    for version in versions:
                        version.abort()
            self.holdings.counts.bytes[STRUCTURE] += sum(grown for _, _, grown, _ in planned)
            self._appended([name for name, _, _, _ in planned], copy)
        return {name: count for name, count, _, _ in planned}

    def _plan_appends(
        self, wanted: list[tuple[str, Sequence[Capture]]]
    ) -> list[tuple[str, int, int, Staged | None]]:
        """For each file kept in a volume: (name, new records, bytes grown, new version staged,
        or None when nothing is new)."""
        store = self.holdings.structures
        unchanged: list[tuple[str, int, int, Staged | None]] = []
        grown: list[tuple[str, int, int]] = []
        files: list[tuple[str, bytes]] = []
        held = self.holdings.holds_many(STRUCTURE, [name for name, _ in wanted])
        # Each volume is opened once for the files it holds.
        volumes: dict[str, int] = {}
        try:
            for (name, captures), is_held in zip(wanted, held, strict=True):
                span = store.volume_span(name) if is_held else None
                if span is None:
                    continue
                try:
                    fd = volumes.get(span.path)
                    if fd is None:
                        fd = volumes[span.path] = os.open(span.path, os.O_RDONLY | os.O_CLOEXEC)
                    with StructureFile(
                        span.path, start=span.offset, length=span.size, fd=fd
                    ) as sfile:
                        fresh, _ = sfile.plan_append(captures)
                        data = sfile.merged_bytes(fresh) if fresh else b""
                except FileNotFoundError:
                    continue  # its volume was compacted meanwhile: left for append_captures
                if not fresh:
                    unchanged.append((name, 0, 0, None))
                    continue
                grown.append((name, len(fresh), len(data) - span.size))
                files.append((name, data))
        finally:
            for fd in volumes.values():
                os.close(fd)
        versions = store.stage_versions(files, absent=True)
        return unchanged + [(*plan, version) for plan, version in zip(grown, versions, strict=True)]

    async def create_structures(
        self, files: Sequence[tuple[str, str, Sequence[Capture]]], copy: Copy = Copy.ACTIVE
    ) -> dict[str, int]:
        """Create the structure files of a batch that do not exist yet, together: one staging
        call, one inventory write, one group commit. Returns how many records each created
        file got; a file that exists is left out, for `append_captures`. The caller has checked
        that each URL belongs to its file name (the HTTP handler does, file by file)."""
        wanted: dict[str, tuple[str, list[Capture]]] = {}
        for name, url, captures in files:
            if name not in wanted:
                wanted[name] = (url, [])
            wanted[name][1].extend(captures)
        async with self.holdings.names.hold(wanted):
            # A batch of files held already writes nothing new: only the floor applies.
            with self.space.writing(
                0, held=all(self.holdings.filter.might_hold_many(list(wanted)))
            ):
                staged = await self.holdings.run_io(self._stage_structures, list(wanted.items()))
                try:
                    if staged:
                        await self.holdings.add_files(
                            STRUCTURE, [(name, size, sfile) for name, _, size, sfile in staged]
                        )
                        self._created([name for name, _, _, _ in staged], copy)
                finally:
                    # What a failure left unplaced is removed; a placed file has nothing left.
                    for _, _, _, sfile in staged:
                        sfile.abort()
            return {name: count for name, count, _, _ in staged}

    def _stage_structures(
        self, wanted: list[tuple[str, tuple[str, list[Capture]]]]
    ) -> list[tuple[str, int, int, Staged]]:
        """Write each absent file aside: (name, records, size, staged file)."""
        held = self.holdings.holds_many(STRUCTURE, [name for name, _ in wanted])
        files: list[tuple[str, bytes]] = []
        records: list[int] = []
        for (name, (url, captures)), is_held in zip(wanted, held, strict=True):
            if not is_held:
                unique = list(dict.fromkeys(captures))
                files.append((name, encode_file(url, unique)))
                records.append(len(unique))
        versions = self.holdings.structures.stage_versions(files, absent=True)
        return [
            (name, count, len(data), version)
            for (name, data), count, version in zip(files, records, versions, strict=True)
        ]

    async def put_structure(
        self, name: str, body: AsyncIterable[bytes], read_after: int | None = None
    ) -> bool:
        """Store a whole structure file (a copy sent by the master), after checking all of it;
        `read_after` is for `unmark_stale`."""
        with self.space.writing(0, held=self.holdings.holds(STRUCTURE, name)):
            return await self._put_structure(name, body, read_after)

    async def _put_structure(
        self, name: str, body: AsyncIterable[bytes], read_after: int | None
    ) -> bool:
        """`put_structure` within the space check: the copy is received aside and checked, then
        added, or merged with the copy held."""
        store = self.holdings.structures
        temp = store.files.tmp_root / f"copy-{uuid.uuid4().hex}.part"
        try:
            with open(temp, "wb") as out:
                async for chunk in body:
                    out.write(chunk)
            try:
                with StructureFile(temp) as sfile:
                    url = sfile.reader.url
                    await self.holdings.run_io(sfile.reader.check_all)
            except CorruptFile as exc:
                raise DamagedCopy(f"the structure file sent is damaged: {exc.reason}") from None
            if name != structure_name(url):
                raise UrlMismatch(f"structure file for {url[:200]!r} sent as {name}")
            size = temp.stat().st_size

            async def put_in_place() -> None:
                await self.holdings.place(
                    await self.holdings.run_io(store.stage_version, name, None, temp)
                )

            async with self.holdings.names.hold((name,)):
                if not self.holdings.holds(STRUCTURE, name):
                    await self.holdings.add_file(STRUCTURE, name, size, put_in_place)
                    self.holdings.unmark_stale(name, read_after)
                    return True
                old_size = store.size(name)
                union = await self.holdings.run_io(self._union_with_held, name, temp)
                if union is None:
                    await put_in_place()
                else:
                    log.info("structure %s: the copy sent lacked records held here; kept", name)
                    size = len(union)
                    await self.holdings.place(
                        await self.holdings.run_io(store.stage_version, name, union)
                    )
                # No inventory entry flushes a replacement: make it durable here.
                if self.holdings.committer is not None:
                    await self.holdings.committer.flush()
                else:
                    await self.holdings.run_io(fsync_dir, store.files.path_for(name).parent)
                self.holdings.counts.bytes[STRUCTURE] += size - old_size
                self.holdings.unmark_stale(name, read_after)
                return False
        finally:
            temp.unlink(missing_ok=True)

    def _union_with_held(self, name: str, copy: Path) -> bytes | None:
        """The bytes of the structure copy at `copy` with the records of the copy held here that
        it lacks, or None when it lacks none. Records only accumulate, so a copy that replaces
        another keeps what that one had: records appended here that the master has not heard of
        yet (a copy the index node just appended to) are not lost to a refresh or a repair copy
        made from an older one. A held copy that does not read whole is replaced, never merged."""
        try:
            with self.holdings.structures.open_structure(name) as held:
                held.reader.check_all()
                records = held.reader.records()
        except (OSError, DlwebError):
            return None
        with StructureFile(copy) as sent:
            fresh, _ = sent.plan_append(records)
            return sent.merged_bytes(fresh) if fresh else None
