"""What a node holds, counted: files and bytes of each kind and files of each group, and the
filter of the names held, sized for them."""

from collections.abc import Iterable
from dataclasses import dataclass, field

from archive.bloom import NameFilter
from archive.hip import Fields

CONTENT, STRUCTURE = "content", "structure"
# A node's filter is sized for at least a million names (1.8 MB), so a growing node rebuilds rarely.
MIN_FILTER_CAPACITY = 1_000_000
# Names added to a filter being built at a time: numpy sets their bits together.
FILTER_BATCH = 100_000


def sized_filter(count: int, names: Iterable[str]) -> NameFilter:
    """A filter with room for twice `count` names, holding `names` (added a batch at a time)."""
    names_filter = NameFilter(max(2 * count, MIN_FILTER_CAPACITY))
    batch: list[str] = []
    for name in names:
        batch.append(name)
        if len(batch) == FILTER_BATCH:
            names_filter.add_many(batch)
            batch = []
    names_filter.add_many(batch)
    return names_filter


@dataclass
class Counts(Fields):
    """What the node holds, kept current so /status and group subscriptions need no disk scan."""

    files: dict[str, int] = field(default_factory=lambda: {CONTENT: 0, STRUCTURE: 0})
    bytes: dict[str, int] = field(default_factory=lambda: {CONTENT: 0, STRUCTURE: 0})
    groups: list[int] = field(default_factory=lambda: [0] * 256)

    def apply(self, op: str, kind: str, name: str, size: int) -> None:
        sign = 1 if op == "add" else -1
        self.files[kind] += sign
        self.bytes[kind] += sign * size
        self.groups[int(name[:2], 16)] += sign

    def copy(self) -> "Counts":
        return Counts(dict(self.files), dict(self.bytes), list(self.groups))

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "Counts":
        files, sizes, groups = data["files"], data["bytes"], data["groups"]
        if not (isinstance(files, dict) and isinstance(sizes, dict) and isinstance(groups, list)):
            raise ValueError("snapshot counts are not mappings and a list")
        if len(groups) != 256:
            raise ValueError("snapshot group counts do not have 256 entries")
        return cls(
            {k: int(files[k]) for k in (CONTENT, STRUCTURE)},
            {k: int(sizes[k]) for k in (CONTENT, STRUCTURE)},
            [int(g) for g in groups],
        )
