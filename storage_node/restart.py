"""What survives a node's restart: the filter and counts saved with the inventory log's mark and
the mark of a clean stop; and how a start learns from them, or else from the stores, what the
node holds."""

import itertools
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from archive.atomic import atomic_write
from archive.bloom import NameFilter
from archive.errors import CorruptFile, NotFound
from archive.store import fsync_dir

from .counts import CONTENT, STRUCTURE, Counts, sized_filter
from .inventory import Entry, InventoryLog, Mark
from .stores import VolumeStore

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.json"
FILTER_FILE = "names.bloom"
# Written last at a clean stop, taken away first at a start: its presence says the saved filter
# and counts hold the whole inventory log, which ends where it says.
CLEAN_FILE = "clean-stop.json"


@dataclass
class Start:
    """How the node learnt what it holds when it started, for its status and log.

    `how` is "clean" (the filter and counts saved at a clean stop, read), "replayed" (saved
    earlier, then the inventory entries logged after them replayed and checked against the disk,
    as after a crash) or "rebuilt" (listed from the stores, nothing usable being saved)."""

    how: str = "rebuilt"
    seconds: float = 0.0
    replayed: int = 0
    corrected: int = 0
    log_bytes_read: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "how": self.how,
            "seconds": round(self.seconds, 3),
            "replayed": self.replayed,
            "corrected": self.corrected,
            "log_bytes_read": self.log_bytes_read,
        }


@dataclass(frozen=True)
class Saved:
    """The counts saved with the filter, at the inventory entry `seq` (ending at byte `offset` of
    the log; None in a snapshot saved before offsets were)."""

    seq: int
    offset: int | None
    counts: Counts

    @property
    def mark(self) -> Mark | None:
        return None if self.offset is None else Mark(self.seq, self.offset)


def read_saved(root: Path) -> Saved | None:
    """The counts saved with the filter, or None when there are none usable (then the disk is
    scanned)."""
    try:
        snapshot = json.loads((root / SNAPSHOT_FILE).read_text())
        offset = snapshot.get("offset")
        return Saved(
            int(snapshot["seq"]),
            None if offset is None else int(offset),
            Counts.from_json(snapshot["counts"]),
        )
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("%s: saved counts unusable (%s)", root, exc)
        return None


def write_state(root: Path, counts: Counts, names_filter: NameFilter, mark: Mark) -> None:
    """Write the filter and counts as of the log's entry `mark.seq`, which is durable."""
    names_filter.save(root / FILTER_FILE, mark.seq)
    snapshot = {"seq": mark.seq, "offset": mark.offset, "counts": counts.to_json()}
    atomic_write(root / SNAPSHOT_FILE, json.dumps(snapshot).encode())


def take_clean_mark(root: Path) -> Mark | None:
    """Where the inventory log ended at a clean stop, if the last run stopped cleanly; the
    mark is removed (durably) before anything changes, so a crash of this run leaves none."""
    path = root / CLEAN_FILE
    try:
        data = json.loads(path.read_bytes())
        mark: Mark | None = Mark(int(data["seq"]), int(data["offset"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("%s: unreadable (%s); taken as a crash", path, exc)
        mark = None
    os.unlink(path)
    fsync_dir(root)
    return mark


def write_clean_mark(root: Path, mark: Mark) -> None:
    """Say, written last at a clean stop, that the saved state holds the log up to `mark`."""
    atomic_write(
        root / CLEAN_FILE,
        json.dumps({"seq": mark.seq, "offset": mark.offset}).encode(),
    )


@dataclass(eq=False, repr=False)
class StateLoader:
    """Learns at a start what a node holds, from the saved state or else from its stores; `start`
    says how, `saved_mark` where the log was when the filter and counts loaded were saved."""

    root: Path
    inventory: InventoryLog
    contents: VolumeStore
    structures: VolumeStore
    start: Start = field(init=False)
    saved_mark: Mark | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.start = Start(log_bytes_read=self.inventory.mark.offset - self.inventory.began.offset)

    def load(self, saved: Saved | None, clean: Mark | None) -> tuple[Counts, NameFilter]:
        """The filter and counts saved, as they are after a clean stop; after a crash, with the
        inventory entries logged since replayed and checked against the disk; without them (or
        when they do not match the log), rebuilt from the stores."""
        if saved is None:
            log.info("%s: no saved filter; scanning the disk once", self.root)
            return self._rescan()
        try:
            names_filter, seq = NameFilter.load(self.root / FILTER_FILE)
            if seq != saved.seq:
                raise ValueError(f"filter is at entry {seq}, counts at {saved.seq}")
            if self.inventory.seq < seq:
                raise ValueError(f"the inventory log ends at entry {self.inventory.seq}")
        except NotFound:
            log.info("%s: no saved filter; scanning the disk once", self.root)
            return self._rescan()
        except (ValueError, CorruptFile) as exc:
            log.warning("%s: saved state unusable (%s); scanning the disk", self.root, exc)
            return self._rescan()
        counts = saved.counts
        self.saved_mark = saved.mark
        if clean is not None and clean == saved.mark == self.inventory.mark:
            self.start.how = "clean"
            log.info(
                "%s: stopped cleanly at entry %d; saved filter and counts read", self.root, seq
            )
            return counts, names_filter
        self.start.how = "replayed"
        touched: dict[str, Entry] = {}
        for entry in self.inventory.read_since(seq, limit=1 << 62):
            counts.apply(entry.op, entry.kind, entry.name, entry.size)
            if entry.op == "add":
                names_filter.add(entry.name)
            else:
                names_filter.discard(entry.name)
            touched[entry.name] = entry
            self.start.replayed += 1
        log.info(
            "%s: not stopped cleanly; replayed %d inventory entries after the saved filter",
            self.root,
            self.start.replayed,
        )
        if touched:
            self._reconcile(touched, counts, names_filter)
        return counts, names_filter

    def _reconcile(
        self, touched: dict[str, Entry], counts: Counts, names_filter: NameFilter
    ) -> None:
        """Correct entries a crash left untrue: a file logged as added that never got in place,
        or one logged as removed that is still there."""
        corrected = 0
        for name, last in touched.items():
            store = self.contents if last.kind == CONTENT else self.structures
            on_disk = store.exists(name)
            if (last.op == "add") == on_disk:
                continue
            op, size = ("add", store.size(name)) if on_disk else ("remove", last.size)
            counts.apply(op, last.kind, name, size)
            if on_disk:
                names_filter.add(name)
            else:
                names_filter.discard(name)
            self.inventory.append(op, last.kind, name, size)
            corrected += 1
        self.start.corrected = corrected
        if corrected:
            self.inventory.flush_now()
            log.warning("%s: corrected %d inventory entries left by a crash", self.root, corrected)

    def _rescan(self) -> tuple[Counts, NameFilter]:
        """Count and filter every file the stores hold, without a list of them in memory."""
        self.start.how = "rebuilt"
        counts = Counts()

        def counted(kind: str, store: VolumeStore) -> Iterator[str]:
            for name, size in store.sizes():
                counts.apply("add", kind, name, size)
                yield name

        names_filter = sized_filter(
            self.contents.count() + self.structures.count(),
            itertools.chain(counted(CONTENT, self.contents), counted(STRUCTURE, self.structures)),
        )
        self.inventory.flush_now()
        self.saved_mark = mark = self.inventory.mark
        write_state(self.root, counts, names_filter, mark)
        return counts, names_filter
