"""The schema step that keys the master's files by integers (master/file_ids.py) on either
engine: the tables of the step before it are renamed, their rows copied into the new ones, and
they are dropped. Files, their sizes, reference counts, targets and holders are copied; what the
repair pass keeps (marked files, files below or above target) is not: the full scan a master
runs at start finds it again."""

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

from archive.cluster import KINDS
from archive.sql import in_chunks, run_script

from .file_ids import KIND_CODES, SPREAD_KEY, candidates, holders_text, key_taken, place

# Files copied a statement.
COPY_BATCH = 2_000

# The tables the step before kept by (kind, name), renamed while their rows are copied.
RENAMED = ("files", "locations", "short", "to_check", "over_target")
# The triggers of the step before (on PostgreSQL, the functions they run).
TRIGGERS = (
    "file_added",
    "file_removed",
    "file_resized",
    "location_added",
    "location_removed",
    "short_added",
    "short_removed",
    "short_changed",
)

TABLES = """
CREATE TABLE files (
    id INTEGER NOT NULL PRIMARY KEY,
    kind INTEGER NOT NULL,
    rest BLOB NOT NULL,
    size INTEGER NOT NULL,
    refs INTEGER NOT NULL DEFAULT 0,
    target INTEGER NOT NULL,
    holders TEXT NOT NULL DEFAULT ''
);
CREATE INDEX files_structures ON files (id) WHERE kind = 1;
CREATE TABLE held (node INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (node, id)) WITHOUT ROWID;
CREATE TABLE node_numbers (id TEXT PRIMARY KEY, num INTEGER NOT NULL UNIQUE);
CREATE TABLE to_check (id INTEGER NOT NULL PRIMARY KEY);
CREATE TABLE over_target (id INTEGER NOT NULL PRIMARY KEY);
CREATE TABLE nodes_to_check (node TEXT PRIMARY KEY, next_id INTEGER NOT NULL);
CREATE TABLE short (
    id INTEGER NOT NULL PRIMARY KEY,
    kind INTEGER NOT NULL,
    have INTEGER NOT NULL,
    want INTEGER NOT NULL,
    size INTEGER NOT NULL,
    cause TEXT NOT NULL
);
CREATE INDEX short_by_danger ON short (have, kind DESC, size);
CREATE TABLE kind_totals (
    kind INTEGER NOT NULL PRIMARY KEY, files INTEGER NOT NULL, bytes INTEGER NOT NULL
);
CREATE TABLE node_totals (
    node INTEGER NOT NULL PRIMARY KEY, files INTEGER NOT NULL, bytes INTEGER NOT NULL
);
DELETE FROM short_totals;
DELETE FROM meta WHERE key = 'full_scan_at'
"""


def copy_files(db: Any) -> None:
    """The files of the renamed tables into the new ones, a kind at a time in name order."""
    numbers: dict[str, int] = {}
    nodes = db.execute("SELECT DISTINCT node FROM locations_v3 ORDER BY node").fetchall()
    for number, (node,) in enumerate(nodes, start=1):
        numbers[str(node)] = number
        db.execute("INSERT INTO node_numbers (id, num) VALUES (?, ?)", (node, number))
    spread = 0
    for kind in KINDS:
        after = ""
        while rows := db.execute(
            "SELECT name, size, refs, target FROM files_v3 WHERE kind = ? AND name > ?"
            " ORDER BY name LIMIT ?",
            (kind, after, COPY_BATCH),
        ).fetchall():
            after = str(rows[-1][0])
            spread = _copy(db, kind, rows, numbers, spread)
    if spread:
        db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (SPREAD_KEY, str(spread)))


def _copy(db: Any, kind: str, rows: list[Any], numbers: dict[str, int], spread: int) -> int:
    names = [str(row[0]) for row in rows]
    holders: defaultdict[str, list[int]] = defaultdict(list)
    for part, marks in in_chunks(names):
        for name, node in db.execute(
            f"SELECT name, node FROM locations_v3 WHERE kind = ? AND name IN ({marks})",
            (kind, *part),
        ):
            holders[str(name)].append(numbers[str(node)])
    occupied: set[int] = set()
    for keys, marks in in_chunks(candidates(names, spread)):
        occupied.update(
            row[0] for row in db.execute(f"SELECT id FROM files WHERE id IN ({marks})", keys)
        )
    placed, spread = place(
        ((kind, name) for name in names), occupied, spread, partial(key_taken, db)
    )
    db.executemany(
        "INSERT INTO files (id, kind, rest, size, refs, target, holders) VALUES (?,?,?,?,?,?,?)",
        [
            (key, KIND_CODES[kind], rest, size, refs, target, holders_text(holders[str(name)]))
            for (name, size, refs, target), (key, rest) in zip(
                rows, (placed[(kind, name)] for name in names), strict=True
            )
        ],
    )
    db.executemany(
        "INSERT INTO held (node, id) VALUES (?, ?)",
        [(number, placed[(kind, name)][0]) for name in names for number in holders[name]],
    )
    return spread


def sqlite_step(triggers: str) -> Callable[[Any], None]:
    """The step on SQLite, whose new tables' totals are kept by `triggers`."""
    return _step("DROP TRIGGER {}", (), run_script, TABLES, triggers)


def postgresql_step(tables: str, triggers: str) -> Callable[[Any], None]:
    """The step on PostgreSQL: `tables` (TABLES in its types), totals kept by `triggers`,
    functions. A renamed table's primary key keeps its index's name there, which the new
    table's would take: it is renamed too."""
    return _step(
        "DROP FUNCTION {}() CASCADE",
        ("ALTER INDEX {0}_pkey RENAME TO {0}_v3_pkey",),
        lambda db, script: db.script(script),
        tables,
        triggers,
    )


def _step(
    drop: str,
    renamed_too: tuple[str, ...],
    run: Callable[[Any, str], None],
    tables: str,
    triggers: str,
) -> Callable[[Any], None]:
    """The step on an engine: how it drops a trigger of the step before, what it renames with a
    table, how it runs a script."""

    def step(db: Any) -> None:
        for name in TRIGGERS:
            db.execute(drop.format(name))
        db.execute("DROP INDEX short_by_danger")
        db.execute("DROP INDEX locations_by_node")
        for table in RENAMED:
            db.execute(f"ALTER TABLE {table} RENAME TO {table}_v3")
            for rename in renamed_too:
                db.execute(rename.format(table))
        for table in ("nodes_to_check", "kind_totals", "node_totals"):
            db.execute(f"DROP TABLE {table}")
        run(db, tables)
        run(db, triggers)
        copy_files(db)
        for table in RENAMED:
            db.execute(f"DROP TABLE {table}_v3")

    return step
