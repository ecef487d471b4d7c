"""The master's feed of changed structure files, typed once for both of its ends.

The master numbers every report that a structure file changed (an index node appended records
to it, or a node showed it a structure file it did not know): each file keeps the number of its
latest change, so the feed is one row a file, in change order. A follower (the search indexer,
a HIP slave of role `search`) asks `search.changes` with the last number it has applied and gets
the files changed since, then applies them and asks again; the master sends it a note
`structure.changed` whenever there are new ones, so it need not poll. A feed is named by an id
drawn when the master's database is made: a follower that finds another id (a master made
anew) starts again from the beginning.
"""

from dataclasses import dataclass
from typing import Any

from .hashing import is_valid_name
from .hip import Fields
from .insert_calls import BadMessage

__all__ = ["CHANGES_METHOD", "CHANGED_NOTE", "MAX_CHANGES", "Change", "ChangesAsked", "Changes"]

CHANGES_METHOD = "search.changes"
CHANGED_NOTE = "structure.changed"
MAX_CHANGES = 5_000


def _number(data: dict[str, Any], key: str, low: int = 0) -> int:
    value = data.get(key)
    if type(value) is not int or value < low:
        raise BadMessage(f"{CHANGES_METHOD}: {key!r} must be an integer >= {low}")
    return value


@dataclass(frozen=True, slots=True)
class ChangesAsked(Fields):
    """A follower's request: the files changed after number `after`, at most `limit`."""

    after: int
    limit: int = MAX_CHANGES

    @classmethod
    def from_json(cls, data: object) -> "ChangesAsked":
        if not isinstance(data, dict):
            raise BadMessage(f"{CHANGES_METHOD}: params must be {{after: n, limit: n}}")
        limit = _number(data, "limit", 1) if "limit" in data else MAX_CHANGES
        return cls(_number(data, "after"), min(limit, MAX_CHANGES))


@dataclass(frozen=True, slots=True)
class Change:
    """A structure file and the number of its latest change."""

    name: str
    seq: int


@dataclass(frozen=True, slots=True)
class Changes:
    """The master's answer: the changes asked for, in number order; the number of the latest
    change of all; and the feed's id."""

    changes: list[Change]
    last: int
    feed: str

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": [[change.name, change.seq] for change in self.changes],
            "last": self.last,
            "feed": self.feed,
        }

    @classmethod
    def from_json(cls, data: object) -> "Changes":
        if not isinstance(data, dict) or not isinstance(data.get("changes"), list):
            raise BadMessage(f"{CHANGES_METHOD}: the answer has no list of changes")
        feed = data.get("feed")
        if not isinstance(feed, str) or not feed:
            raise BadMessage(f"{CHANGES_METHOD}: the answer has no feed id")
        changes = []
        for index, item in enumerate(data["changes"]):
            if (
                not isinstance(item, list)
                or len(item) != 2
                or not isinstance(item[0], str)
                or not is_valid_name(item[0])
                or type(item[1]) is not int
            ):
                raise BadMessage(f"{CHANGES_METHOD}: changes[{index}] is not [name, number]")
            changes.append(Change(item[0], item[1]))
        return cls(changes, _number(data, "last"), feed)
