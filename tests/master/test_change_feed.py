"""The master's change feed of structure files (archive/changes.py), without processes: what a
search indexer is told changed, in what order, and who may ask."""

import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from archive.changes import Change, Changes, ChangesAsked
from archive.config import ClusterConfig, Replication
from archive.hip import RemoteError
from archive.insert_calls import BadMessage
from master.db import MasterDB
from master.service import Master, MasterOptions

INDEX: Any = SimpleNamespace(role="index", name="index-1", closed=False)
FOLLOWER: Any = SimpleNamespace(role="search", name="search-1", closed=False)
A, B, C = (hashlib.sha256(url.encode()).hexdigest() for url in ("a", "b", "c"))


def structure(name: str) -> dict[str, Any]:
    return {"op": "add", "kind": "structure", "name": name, "size": 100}


def master_in(folder: Path) -> Master:
    config = ClusterConfig(
        name="t", secret=b"s" * 16, master="http://127.0.0.1:9", replication=Replication(default=1)
    )
    return Master(MasterOptions(folder, "127.0.0.1", 0, config))


def test_a_file_changed_again_moves_to_the_end_of_the_feed(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    db.record_changes([A, B])
    db.record_changes([A])
    assert db.changes_after(0, 10) == [(B, 2), (A, 3)]
    assert db.changes_after(2, 10) == [(A, 3)]
    assert db.changes_after(3, 10) == []
    assert db.changes_after(0, 1) == [(B, 2)]


def test_the_feed_numbers_the_files_known_before_it_and_keeps_its_id(tmp_path: Path) -> None:
    """A master's database of a version without the feed: its structure files are the first
    changes; the feed's id stays the same when the database is opened again."""
    db = MasterDB(tmp_path / "m.db")
    db.apply_inventory("n1", [structure(B), structure(A)], 1, lambda *_: 1)
    db.db.execute("DELETE FROM changes")
    db.db.execute("DELETE FROM meta WHERE key = 'feed'")
    db.close()
    again = MasterDB(tmp_path / "m.db")
    assert [name for name, _ in again.changes_after(0, 10)] == sorted([A, B])
    feed = again.feed
    again.close()
    assert MasterDB(tmp_path / "m.db").feed == feed != MasterDB(tmp_path / "other.db").feed


def test_a_structure_file_a_node_shows_the_master_first_is_a_change(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    db.record_changes([A])
    db.apply_inventory("n1", [structure(A), structure(C)], 1, lambda *_: 1)
    db.apply_inventory("n2", [structure(C)], 1, lambda *_: 1)  # a second copy: no change
    assert db.changes_after(0, 10) == [(A, 1), (C, 2)]


async def test_an_index_nodes_appends_are_changes_a_search_follower_is_given(
    tmp_path: Path,
) -> None:
    master = master_in(tmp_path)
    try:
        await master._structure_changed(INDEX, {"names": [A, B]})
        answer = Changes.from_json(await master._search_changes(FOLLOWER, {"after": 0}))
        assert answer.changes == [Change(A, 1), Change(B, 2)]
        assert answer.last == 2 and answer.feed == master.db.feed
        assert master.structures_changed.is_set()  # the followers are told
    finally:
        master.close()


async def test_only_a_search_follower_may_read_the_feed_and_only_with_a_position(
    tmp_path: Path,
) -> None:
    master = master_in(tmp_path)
    try:
        with pytest.raises(RemoteError, match="role search"):
            await master._search_changes(INDEX, {"after": 0})
        for bad in (None, {"after": -1}, {"after": "0"}, {"after": 0, "limit": 0}):
            with pytest.raises(RemoteError, match="after|limit|params"):
                await master._search_changes(FOLLOWER, bad)
    finally:
        master.close()


def test_a_malformed_answer_is_refused_by_the_follower() -> None:
    assert ChangesAsked.from_json({"after": 3, "limit": 10**9}).limit == 5_000
    good = {"changes": [[A, 1]], "last": 1, "feed": "f"}
    assert Changes.from_json(good).changes == [Change(A, 1)]
    for bad in (
        {**good, "changes": [["../etc", 1]]},
        {**good, "changes": [[A, "1"]]},
        {**good, "feed": ""},
        {**good, "last": -1},
        [],
    ):
        with pytest.raises(BadMessage):
            Changes.from_json(bad)
