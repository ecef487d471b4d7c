"""The master keys a file by the first 8 bytes of its name (master/file_ids.py): names that share
them are kept apart, and a database of the layout before is copied into this one when opened,
on either engine."""

from pathlib import Path

from archive import pg
from archive.sql import migrate, open_database
from master.db import FileRef, MasterDB
from master.file_ids import FIRST_ID, LAST_ID, name_of, natural_id, rest_of
from master.schema import PG_STEPS, STEPS

# Three names with the same first 8 bytes, and one that sorts before them.
SHARED = "ab" * 8
CLASHING = [SHARED + f"{i:048x}" for i in (7, 3, 5)]
BEFORE = "aa" * 32


def target(kind: str, size: int, refs: int) -> int:
    return 2


def adds(names: list[str], size: int = 10) -> list[dict[str, object]]:
    return [{"op": "add", "kind": "content", "name": n, "size": size} for n in names]


def test_keys_sort_as_names_and_give_the_name_back() -> None:
    names = sorted(["00" * 32, "7f" + "ff" * 31, "80" + "00" * 31, "ff" * 32, BEFORE])
    keys = [natural_id(name) for name in names]
    assert keys == sorted(keys) and keys[0] == FIRST_ID and keys[-1] == LAST_ID
    assert [name_of(natural_id(n), rest_of(n)) for n in names] == names


def test_names_sharing_their_first_bytes_are_kept_apart(metadata: Path | str) -> None:
    db = MasterDB(metadata)
    db.apply_inventory("a", adds(CLASHING + [BEFORE]), 4, target)
    db.apply_inventory("b", adds(CLASHING[1:2]), 1, target)
    assert db.holders_of("content", CLASHING) == {
        CLASHING[0]: ["a"],
        CLASHING[1]: ["a", "b"],
        CLASHING[2]: ["a"],
    }
    db.remove_locations("a", [("content", CLASHING[1])])
    assert db.holders("content", CLASHING[1]) == ["b"]
    assert db.holders("content", CLASHING[0]) == ["a"]
    assert {f.name for f in db.files_on("a", 10)} == {BEFORE, CLASHING[0], CLASHING[2]}
    assert db.file_counts()["content"] == 4
    assert db.recount(mend=False) == {}
    db.close()
    reopened = MasterDB(metadata)
    assert reopened.holders_of("content", CLASHING)[CLASHING[2]] == ["a"]
    reopened.add_locations("c", [FileRef("content", CLASHING[2], 10)], target)
    assert reopened.holders("content", CLASHING[2]) == ["a", "c"]
    assert sorted(name for _, name in reopened.iter_files()) == sorted(CLASHING + [BEFORE])
    reopened.close()


def test_a_walk_by_node_resumes_after_its_last_file_among_clashing_names(
    metadata: Path | str,
) -> None:
    db = MasterDB(metadata)
    db.apply_inventory("a", adds(CLASHING + [BEFORE]), 4, target)
    walked: list[str] = []
    after = ("", "")
    while page := db.files_on("a", 1, after):
        walked.append(page[0].name)
        after = (page[0].kind, page[0].name)
    assert sorted(walked) == sorted(CLASHING + [BEFORE]) and len(walked) == 4
    db.close()


OLD_FILES = [("content", CLASHING[0], 10), ("content", CLASHING[1], 7), ("structure", BEFORE, 3)]
OLD_LOCATIONS = [
    ("content", CLASHING[0], "a"),
    ("content", CLASHING[0], "b"),
    ("content", CLASHING[1], "b"),
    ("structure", BEFORE, "a"),
]


def write_old_layout(metadata: Path | str) -> None:
    """A master's database as the release before integer keys left it."""
    insert_files = "INSERT INTO files (kind, name, size, target) VALUES (?, ?, ?, 2)"
    insert_locations = "INSERT INTO locations (kind, name, node) VALUES (?, ?, ?)"
    if isinstance(metadata, Path):
        db = open_database(metadata)
        try:
            migrate(db, STEPS[:3], metadata)
            db.executemany(insert_files, OLD_FILES)
            db.executemany(insert_locations, OLD_LOCATIONS)
        finally:
            db.close()
        return
    with pg.PgDatabase(metadata) as old:
        pg.migrate(old, "master", PG_STEPS[:3], None)
        with old.transaction():
            for file in OLD_FILES:
                old.execute(insert_files, file)
            for location in OLD_LOCATIONS:
                old.execute(insert_locations, location)


def test_a_database_of_the_layout_before_is_copied_whole_when_opened(
    metadata: Path | str,
) -> None:
    write_old_layout(metadata)
    db = MasterDB(metadata)
    assert db.holders_of("content", CLASHING[:2]) == {CLASHING[0]: ["a", "b"], CLASHING[1]: ["b"]}
    assert db.holders("structure", BEFORE) == ["a"]
    assert db.file_counts() == {"content": 2, "structure": 1}
    assert db.node_totals() == {"a": (2, 13), "b": (2, 17)}
    assert db.recount(mend=False) == {}
    assert db.structure_page("", 10) == [BEFORE]
    db.close()
