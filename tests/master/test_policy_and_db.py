"""Replica targets, node choice and the master's database queries, on a real SQLite file."""

import hashlib
from pathlib import Path

import pytest

from archive.config import Replication, parse_config
from archive.errors import ConfigError
from master.db import FileRef, MasterDB, NodeRow, TargetFn
from master.file_ids import FIRST_ID
from master.policy import choose_node, target_function


def name(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def db_with_nodes(
    metadata: Path | str, nodes: str, **replication: int
) -> tuple[MasterDB, TargetFn]:
    """A fresh database knowing the nodes named by the letters of `nodes`, and the targets of
    a replication section with these keys."""
    db = MasterDB(metadata)
    for node in nodes:
        db.save_node(NodeRow(node, f"http://{node}"))
    return db, target_function(Replication(**replication))


def test_targets_follow_the_policy() -> None:
    target = target_function(Replication(default=2, small_bytes=1024, popular_refs=10))
    assert target("content", 4096, 0) == 2
    assert target("content", 100, 0) == 3
    assert target("content", 4096, 10) == 3
    assert target("content", 100, 10) == 4
    assert target("structure", 100, 0) == 3


def test_replication_section_is_validated() -> None:
    base = {"cluster": {"secret": "s" * 20}}
    config = parse_config({**base, "replication": {"default": 3}}, "c.yaml")
    assert config.replication.default == 3
    with pytest.raises(ConfigError, match="replication.default: must be at least 1"):
        parse_config({**base, "replication": {"default": 0}}, "c.yaml")
    with pytest.raises(ConfigError, match="replication.copies: unknown key"):
        parse_config({**base, "replication": {"copies": 2}}, "c.yaml")
    with pytest.raises(ConfigError, match="master: must be an http"):
        parse_config({**base, "master": "ftp://x"}, "c.yaml")


def test_choice_prefers_new_domains_then_groups_then_free_space() -> None:
    file = name(1)
    group = int(file[:2], 16)
    a = NodeRow("a", "http://a", domain="rack1", free=900)
    b = NodeRow("b", "http://b", domain="rack2", free=100)
    c = NodeRow("c", "http://c", domain="rack2", free=500, groups=[group])
    assert choose_node([a, b, c], file, (), ()) is c
    assert choose_node([a, b, c], file, (), {"rack2"}) is a
    assert choose_node([a, b], file, (), ()) is a
    assert choose_node([a, b, c], file, {"c"}, {"rack1"}) is b
    assert choose_node([a, b], file, {"a", "b"}, ()) is None
    low = NodeRow("d", "http://d", domain="rack3", reliability="low", free=10_000)
    assert choose_node([low, a], file, (), ()) is a


def test_removes_and_copies_made_change_a_files_holders(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "abc", default=2, small_bytes=0)
    entries = [{"op": "add", "kind": "content", "name": name(i), "size": 10} for i in range(3)]
    db.apply_inventory("a", entries, 3, target)
    db.apply_inventory("b", entries[:1], 1, target)
    db.apply_inventory("a", [{**entries[2], "op": "remove"}], 4, target)
    assert db.holders("content", name(2)) == []
    db.add_locations("c", [FileRef("content", name(1), 10)], target)
    assert sorted(db.holders("content", name(1))) == ["a", "c"]
    db.close()


def test_one_batch_of_adds_and_removes_is_applied_in_its_order(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "a")

    def entry(op: str, kind: str, i: int) -> dict[str, object]:
        return {"op": op, "kind": kind, "name": name(i), "size": 10 + i}

    batch = [
        entry("add", "content", 1),
        entry("add", "structure", 2),
        entry("remove", "content", 1),
        entry("add", "content", 3),
        entry("remove", "structure", 2),
        entry("add", "structure", 2),
        entry("add", "content", 1),
        entry("remove", "content", 3),
    ]
    db.apply_inventory("a", batch, 8, target)
    assert db.holders("content", name(1)) == ["a"]
    assert db.holders("structure", name(2)) == ["a"]
    assert db.holders("content", name(3)) == []
    assert db.active_node(name(2)) == "a"
    assert db.nodes()[0].seq == 8
    db.close()


def test_lookups_of_many_names_agree_with_one_name_lookups(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "ab", default=2, small_bytes=0)
    # More names than one IN (...) query takes, so the lookups go in parts.
    names = [name(i) for i in range(1_200)]
    adds = [{"op": "add", "kind": "structure", "name": n, "size": 10} for n in names[::2]]
    db.apply_inventory("a", adds, 1, target)
    db.apply_inventory("b", adds[::3], 1, target)
    db.set_active([(n, "b") for n in names[::6]])
    holders = db.holders_of("structure", names)
    assert list(holders) == names
    assert all(sorted(holders[n]) == sorted(db.holders("structure", n)) for n in names)
    assert sorted(holders[names[0]]) == ["a", "b"]
    assert holders[names[1]] == []
    actives = db.active_nodes(names)
    assert actives == {n: a for n in names if (a := db.active_node(n)) is not None}
    assert actives[names[0]] == "b" and actives[names[2]] == "a" and names[1] not in actives
    db.close()


def test_positions_survive_reopening(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "a")
    db.apply_inventory(
        "a", [{"op": "add", "kind": "structure", "name": name(0), "size": 1}], 7, target
    )
    db.set_meta("rebalance", {"state": "running"})
    db.close()
    again = MasterDB(metadata)
    assert again.nodes()[0].seq == 7
    assert again.get_meta("rebalance") == {"state": "running"}
    assert again.file_counts() == {"content": 0, "structure": 1}
    again.close()


def test_reference_counts_sent_before_the_content_are_kept(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "a", default=2, small_bytes=0, popular_refs=5)
    db.set_refs({name(1): 7}, target)
    entry = {"op": "add", "kind": "content", "name": name(1), "size": 4096}
    db.apply_inventory("a", [entry], 1, target)
    assert db.targets_of([("content", name(1))]) == {("content", name(1)): 3}
    assert db.db.execute("SELECT COUNT(*) FROM pending_refs").fetchone()[0] == 0
    db.close()


def adds(names: list[str], size: int = 10) -> list[dict[str, object]]:
    return [{"op": "add", "kind": "content", "name": n, "size": size} for n in names]


def taken(db: MasterDB, limit: int = 100) -> set[str]:
    return {f.name for f in db.take_marked(limit)}


def test_changes_mark_their_files_for_the_repair_pass(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "ab", default=2, small_bytes=0, popular_refs=5)
    db.apply_inventory("a", adds([name(i) for i in range(5)]), 5, target)
    files = db.take_marked(100)
    assert {f.name for f in files} == {name(i) for i in range(5)}
    assert {(f.target, f.holders) for f in files} == {(2, ("a",))}
    assert taken(db) == set() and not db.any_marked()

    db.add_locations("b", [FileRef("content", name(0), 10)], target)
    db.remove_locations("a", [("content", name(1))])
    db.set_refs({name(2): 9}, target)
    assert taken(db) == {name(0), name(1), name(2)}
    db.forget_locations("a")
    assert taken(db) == {name(0), name(2), name(3), name(4)}
    db.close()


def test_a_marked_node_is_looked_at_a_page_at_a_time_across_restarts(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "a")
    everything = {name(i) for i in range(25)}
    db.apply_inventory("a", adds(sorted(everything)), 25, target)
    assert taken(db) == everything
    db.mark_node("a")
    first = taken(db, 10)
    assert len(first) == 10 and db.any_marked()
    db.close()
    db = MasterDB(metadata)
    second, third = taken(db, 10), taken(db, 10)
    assert (len(second), len(third)) == (10, 5) and not db.any_marked()
    assert first | second | third == everything
    db.close()


def scanned(db: MasterDB, counting: list[str], usable: int) -> set[str]:
    """The files a whole full scan marks, two files a step, unmarked again."""
    after: int | None = FIRST_ID
    while after is not None:
        found, after = db.scan(counting, usable, 0, after, 2)
        db.mark(found)
    return taken(db)


def test_the_full_scan_marks_files_below_or_above_target(metadata: Path | str) -> None:
    db, target = db_with_nodes(metadata, "abc", default=2, small_bytes=0)
    db.apply_inventory("a", adds([name(0), name(1), name(2)]), 3, target)
    db.apply_inventory("b", adds([name(1), name(2)]), 2, target)
    db.apply_inventory("c", adds([name(2)]), 1, target)
    db.take_marked(100)
    assert scanned(db, ["a", "b", "c"], 3) == {name(0), name(2)}
    # Copies on a node that does not count (down, draining) do not count.
    assert scanned(db, ["b", "c"], 2) == {name(0), name(1)}
    db.record_review([], [], [("content", name(2))], [("content", name(0))])
    assert [f.holders for f in db.take_over_target(10)] == [("a", "b", "c")]
    assert db.take_over_target(10) == []
    db.close()
