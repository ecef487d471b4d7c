"""A storage node's HTTP JSON answers (storage_node/http.py), typed once for the node that serves
them and the cluster client, the master and the index node that read them.

PUT /content/{name} answers a ContentStored; POST /contents a ContentsStored; POST
/content/{name}/check a ContentChecked; DELETE /content/{name} and /structure/{name} a Deleted;
POST /structure/{name} a StructureAppended; POST /structures a StructuresAppended; PUT
/structure/{name} a StructurePut; GET /structure/{name} with `mode=days` a DayCounts, with
`mode=range` (or a lookup that found nothing, with 404) a RecordRange, with another mode a
Closest; /status a StorageStatus; /inventory an Inventory; POST /scrub a Scrubbed.

Each is an `Answer` (archive/answers.py): its JSON is its fields, `from_json` checks them. The
lists of a structure file's records, a batch's results and inventory entries hold thousands of
items whose JSON is written by hand for speed (Capture.to_json, the inventory's entries): they
are carried as they are, each item read by its own reader. An upload's UploadReceipt and what
the node's server adds to /status stand in the answer's object beside its other fields.
"""

import dataclasses
from dataclasses import KW_ONLY
from typing import Any, Self

from .answers import Answer
from .hip import bad_params
from .insert_calls import BadMessage, UploadReceipt

__all__ = [
    "Closest",
    "ContentChecked",
    "ContentStored",
    "ContentsStored",
    "DayCounts",
    "Deleted",
    "Inventory",
    "NamesFilter",
    "RecordRange",
    "Scrubbed",
    "StorageStatus",
    "StructureAppended",
    "StructurePut",
    "StructuresAppended",
]


class _Spread(Answer):
    """An answer whose last field, an object, is spread in the answer's object after the other
    fields (its keys in place of theirs where they meet) rather than nested under its name."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data.update(data.pop(dataclasses.fields(self)[-1].name))
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        if not isinstance(data, dict):
            raise bad_params(where, "the answer must be an object")
        *own, last = [f.name for f in dataclasses.fields(cls)]
        rest = {key: value for key, value in data.items() if key not in own}
        return super().from_json({**data, last: cls._spread(rest, where)}, where)

    @classmethod
    def _spread(cls, rest: dict[str, Any], where: str) -> Any:
        """The last field's value, from the answer's keys that are not the other fields'."""
        return rest


class _Receipted(_Spread):
    """An upload's answer, its UploadReceipt last: read as the uploader always has."""

    __slots__ = ()

    @classmethod
    def _spread(cls, rest: dict[str, Any], where: str) -> Any:
        try:
            return UploadReceipt.from_json(rest)
        except BadMessage as exc:
            raise bad_params(where, str(exc)) from None


# -- contents ---------------------------------------------------------------------------------


class ContentStored(_Receipted):
    """A content uploaded: its name, and the node's receipt (1 created if it was new there)."""

    name: str
    receipt: UploadReceipt


class ContentsStored(_Receipted):
    """A pack of contents uploaded: how many it held, and the node's receipt for them."""

    received: int
    receipt: UploadReceipt


class ContentChecked(Answer):
    """A content hashed again on a reader's word: whether it was bad (and quarantined), why."""

    name: str
    bad: bool
    reason: str | None


class Deleted(Answer):
    """A file gone from the node (one it did not hold is answered 404)."""

    name: str
    deleted: bool


# -- structure files --------------------------------------------------------------------------


class StructureAppended(Answer):
    """Records appended to a structure file: how many were new, whether the file was."""

    name: str
    added: int
    created: bool


class StructuresAppended(Answer):
    """A batch of appends: each file's result in the batch's order, a StructureAppended's JSON
    or `{"name", "error", "status"}` (the HTTP status its own request would have had)."""

    results: Any


class StructurePut(Answer):
    """A whole structure file stored: whether it was new on the node."""

    name: str
    created: bool


class DayCounts(Answer):
    """A URL's captures counted per UTC day, each day a DayCount's JSON (archive/structure.py)."""

    name: str
    url: str
    days: tuple[Any, ...]


class RecordRange(Answer):
    """A structure file's URL, its count of records (which a node of the version before may not
    say) and those asked for, each a Capture's JSON (archive/structure.py) with its `index` in
    the file."""

    name: str
    url: str
    count: int | None = None
    _: KW_ONLY
    records: Any


class Closest(RecordRange):
    """The record a lookup found (the only one of `records`), and the file's first and last
    records and the found one's neighbours that are replayed (None where there is none)."""

    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    prev: dict[str, Any] | None = None
    next: dict[str, Any] | None = None


# -- the node ---------------------------------------------------------------------------------


class NamesFilter(Answer):
    """The node's filter of the names it holds: names in it, names it was sized for, deletions."""

    names: int
    capacity: int
    deleted: int


class StorageStatus(_Spread):
    """A storage node's /status: what it holds (files and bytes by kind, the multicast groups of
    their names), its disk (its space's JSON, storage_node/space.py), its inventory position and
    filter; then what its server adds (address, domain, master link, multicast lookups, stale
    copies, how it started)."""

    node: str
    uptime: float
    disk: dict[str, Any]
    files: dict[str, int]
    bytes: dict[str, int]
    groups_held: tuple[int, ...]
    inventory_seq: int
    filter: NamesFilter
    extra: dict[str, Any]


class Inventory(Answer):
    """Inventory entries after a position, each an entry's JSON (storage_node/inventory.py),
    and the node's position now."""

    node: str
    seq: int
    entries: Any


class Scrubbed(Answer):
    """A scrub's report: the files it checked, and the bad ones (kind, name and reason)."""

    checked: int
    bad: tuple[dict[str, str], ...]
