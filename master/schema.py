"""The schemas of the master's and the index nodes' metadata on each engine, a version a step:
each script brings the version before it to its own (archive.sql.migrate on SQLite,
archive.pg.migrate on PostgreSQL, which run them at start). Both engines have the same tables;
the master's totals are kept by triggers, which each engine writes in its own way. A new step is
added to both, at the same place."""

from dataclasses import dataclass

from archive.pg import Step as PgStep
from archive.pg import postgresql_schema
from archive.sql import Step as SqliteStep

from .compact_layout import TABLES, postgresql_step, sqlite_step


@dataclass(frozen=True)
class Schema:
    """A component's schema on each engine; `component` is what a PostgreSQL database of it is
    marked as (archive.pg.migrate)."""

    component: str
    sqlite: tuple[SqliteStep, ...]
    postgresql: tuple[PgStep, ...]


SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    address TEXT NOT NULL,
    domain TEXT NOT NULL DEFAULT 'default',
    reliability TEXT NOT NULL DEFAULT 'normal',
    admin_state TEXT NOT NULL DEFAULT 'alive',
    state TEXT NOT NULL DEFAULT 'alive',
    free INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL DEFAULT 0,
    groups TEXT NOT NULL DEFAULT '[]',
    last_seen REAL NOT NULL DEFAULT 0,
    last_scrub REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS files (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    refs INTEGER NOT NULL DEFAULT 0,
    target INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS locations (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    node TEXT NOT NULL,
    PRIMARY KEY (kind, name, node)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS locations_by_node ON locations (node, kind, name);
CREATE TABLE IF NOT EXISTS active (name TEXT PRIMARY KEY, node TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dirty (name TEXT PRIMARY KEY) WITHOUT ROWID;
-- Structure copies that may differ from the active copy (their node was unreachable when the
-- replicas were refreshed, or when another copy was made active): merged when the node is back.
CREATE TABLE IF NOT EXISTS diverged (
    name TEXT NOT NULL,
    node TEXT NOT NULL,
    PRIMARY KEY (name, node)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS moves (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    size INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0
);
-- Files whose locations or target changed since the repair pass last looked at them.
CREATE TABLE IF NOT EXISTS to_check (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
-- Nodes whose every file is to be looked at (their copies started or stopped counting), with
-- the last file looked at so far.
CREATE TABLE IF NOT EXISTS nodes_to_check (
    node TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
-- Files seen with more counting replicas than their target, waiting for the trim step.
CREATE TABLE IF NOT EXISTS over_target (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_refs (name TEXT PRIMARY KEY, refs INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes (name TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS changes_by_seq ON changes (seq);
"""


def _counted(prefix: str, table: str, totals: str, key: str) -> str:
    """SQLite's triggers that keep `totals` (files and bytes by `key`) as rows of `table` are
    inserted and deleted: `<prefix>_added` and `<prefix>_removed`."""
    return f"""CREATE TRIGGER {prefix}_added AFTER INSERT ON {table} BEGIN
    INSERT INTO {totals} ({key}, files, bytes) VALUES (NEW.{key}, 1, NEW.size)
    ON CONFLICT ({key}) DO UPDATE SET files = files + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER {prefix}_removed AFTER DELETE ON {table} BEGIN
    UPDATE {totals} SET files = files - 1, bytes = bytes - OLD.size WHERE {key} = OLD.{key};
END;
"""


# The triggers that keep the files and bytes of each kind as files come and go.
_FILES_COUNTED = _counted("file", "files", "kind_totals", "kind")
# The tables of the totals by kind and by node, and those of the files already there. Their
# columns are written for SQLite: postgresql_schema gives PostgreSQL's.
_TOTALS_TABLES = """
CREATE TABLE kind_totals (
    kind TEXT PRIMARY KEY, files INTEGER NOT NULL, bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE node_totals (
    node TEXT PRIMARY KEY, files INTEGER NOT NULL, bytes INTEGER NOT NULL
) WITHOUT ROWID;
"""
_TOTALS_FILLED = """INSERT INTO kind_totals SELECT kind, COUNT(*), COALESCE(SUM(size), 0) FROM files GROUP BY kind;
INSERT INTO node_totals SELECT l.node, COUNT(*), COALESCE(SUM(f.size), 0) FROM locations l
    LEFT JOIN files f ON f.kind = l.kind AND f.name = l.name GROUP BY l.node
"""
TOTALS = (
    _TOTALS_TABLES
    + _FILES_COUNTED
    + """CREATE TRIGGER file_resized AFTER UPDATE OF size ON files WHEN NEW.size != OLD.size BEGIN
    UPDATE kind_totals SET bytes = bytes + NEW.size - OLD.size WHERE kind = NEW.kind;
    UPDATE node_totals SET bytes = bytes + NEW.size - OLD.size
    WHERE node IN (SELECT node FROM locations WHERE kind = NEW.kind AND name = NEW.name);
END;
CREATE TRIGGER location_added AFTER INSERT ON locations BEGIN
    INSERT INTO node_totals (node, files, bytes) VALUES (NEW.node, 1,
        COALESCE((SELECT size FROM files WHERE kind = NEW.kind AND name = NEW.name), 0))
    ON CONFLICT (node) DO UPDATE SET files = files + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER location_removed AFTER DELETE ON locations BEGIN
    UPDATE node_totals SET files = files - 1,
        bytes = bytes - COALESCE((SELECT size FROM files WHERE kind = OLD.kind AND name = OLD.name), 0)
    WHERE node = OLD.node;
END;
"""
    + _TOTALS_FILLED
)
# Files the repair pass last found below target, with why (one of CAUSES), and how many for
# each cause, kept by triggers: status and the fsck summary read these counts at once.
_SHORT_TABLES = """
CREATE TABLE short (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    have INTEGER NOT NULL,
    want INTEGER NOT NULL,
    size INTEGER NOT NULL,
    cause TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE INDEX short_by_danger ON short (have, kind DESC, size);
CREATE TABLE short_totals (
    cause TEXT PRIMARY KEY, files INTEGER NOT NULL, bytes INTEGER NOT NULL
) WITHOUT ROWID;
"""
SHORT_FILES = (
    _SHORT_TABLES
    + _counted("short", "short", "short_totals", "cause")
    + """CREATE TRIGGER short_changed AFTER UPDATE OF cause, size ON short
WHEN NEW.cause != OLD.cause OR NEW.size != OLD.size BEGIN
    UPDATE short_totals SET files = files - 1, bytes = bytes - OLD.size WHERE cause = OLD.cause;
    INSERT INTO short_totals (cause, files, bytes) VALUES (NEW.cause, 1, NEW.size)
    ON CONFLICT (cause) DO UPDATE SET files = files + 1, bytes = bytes + excluded.bytes;
END
"""
)
# The totals of the files keyed by integers (master/file_ids.py): copies are rows of `held`.
COMPACT_TOTALS = (
    """
"""
    + _FILES_COUNTED
    + """CREATE TRIGGER file_resized AFTER UPDATE OF size ON files WHEN NEW.size != OLD.size BEGIN
    UPDATE kind_totals SET bytes = bytes + NEW.size - OLD.size WHERE kind = NEW.kind;
    UPDATE node_totals SET bytes = bytes + NEW.size - OLD.size
    WHERE EXISTS (SELECT 1 FROM held h WHERE h.node = node_totals.node AND h.id = NEW.id);
END;
CREATE TRIGGER held_added AFTER INSERT ON held BEGIN
    INSERT INTO node_totals (node, files, bytes)
    VALUES (NEW.node, 1, COALESCE((SELECT size FROM files WHERE id = NEW.id), 0))
    ON CONFLICT (node) DO UPDATE SET files = files + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER held_removed AFTER DELETE ON held BEGIN
    UPDATE node_totals SET files = files - 1,
        bytes = bytes - COALESCE((SELECT size FROM files WHERE id = OLD.id), 0)
    WHERE node = OLD.node;
END;
"""
    + SHORT_FILES[SHORT_FILES.index("CREATE TRIGGER short_added") :]
)
STEPS = (SCHEMA, TOTALS, SHORT_FILES, sqlite_step(COMPACT_TOTALS))


def _pg_on_statement(prefix: str, table: str, added: str, removed: str) -> str:
    """PostgreSQL's statement triggers `<prefix>_added` and `<prefix>_removed`, which run the
    statements `added` and `removed` over the rows a statement inserted in `table` (the
    transition table `added`) or deleted from it (`removed`)."""
    return f"""CREATE FUNCTION {prefix}_added() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
{added}
    RETURN NULL;
END $$;
CREATE TRIGGER {prefix}_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION {prefix}_added();
CREATE FUNCTION {prefix}_removed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
{removed}
    RETURN NULL;
END $$;
CREATE TRIGGER {prefix}_removed AFTER DELETE ON {table} REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION {prefix}_removed();
"""


def _pg_counted(prefix: str, table: str, totals: str, key: str) -> str:
    """PostgreSQL's statement triggers that keep `totals` (files and bytes by `key`) as rows of
    `table` are inserted and deleted: `<prefix>_added` and `<prefix>_removed`."""
    added = f"""    INSERT INTO {totals} AS t ({key}, files, bytes)
    SELECT {key}, COUNT(*), SUM(size) FROM added GROUP BY {key}
    ON CONFLICT ({key}) DO UPDATE SET files = t.files + excluded.files,
        bytes = t.bytes + excluded.bytes;"""
    removed = f"""    UPDATE {totals} t SET files = t.files - r.files, bytes = t.bytes - r.bytes
    FROM (SELECT {key}, COUNT(*) AS files, SUM(size) AS bytes FROM removed GROUP BY {key}) r
    WHERE t.{key} = r.{key};"""
    return _pg_on_statement(prefix, table, added, removed)


def _pg_copies_counted(prefix: str, table: str, joined: str) -> str:
    """PostgreSQL's statement triggers that keep node_totals (copies and their files' bytes by
    node) as rows of `table` are inserted and deleted; `joined` matches a file to a copy of
    the transition table it names ({0})."""
    added = f"""    INSERT INTO node_totals AS t (node, files, bytes)
    SELECT a.node, COUNT(*), COALESCE(SUM(f.size), 0) FROM added a
    LEFT JOIN files f ON {joined.format("a")} GROUP BY a.node
    ON CONFLICT (node) DO UPDATE SET files = t.files + excluded.files,
        bytes = t.bytes + excluded.bytes;"""
    removed = f"""    UPDATE node_totals t SET files = t.files - r.files, bytes = t.bytes - r.bytes
    FROM (SELECT o.node, COUNT(*) AS files, COALESCE(SUM(f.size), 0) AS bytes FROM removed o
          LEFT JOIN files f ON {joined.format("o")} GROUP BY o.node) r
    WHERE t.node = r.node;"""
    return _pg_on_statement(prefix, table, added, removed)


# PostgreSQL's triggers run functions; each keeps a totals table as the SQLite trigger of the same
# name does, but once a statement, from the rows it changed (a transition table), where SQLite's
# run once a row: MasterDB inserts and deletes many rows a statement, and a row's trigger would
# cost PostgreSQL as much as its insert.
_PG_TOTALS = (
    postgresql_schema(_TOTALS_TABLES)
    + _pg_counted("file", "files", "kind_totals", "kind")
    + """
CREATE FUNCTION file_resized() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE kind_totals SET bytes = bytes + NEW.size - OLD.size WHERE kind = NEW.kind;
    UPDATE node_totals SET bytes = bytes + NEW.size - OLD.size
    WHERE node IN (SELECT node FROM locations WHERE kind = NEW.kind AND name = NEW.name);
    RETURN NULL;
END $$;
CREATE TRIGGER file_resized AFTER UPDATE OF size ON files FOR EACH ROW
    WHEN (NEW.size <> OLD.size) EXECUTE FUNCTION file_resized();
"""
    + _pg_copies_counted("location", "locations", "f.kind = {0}.kind AND f.name = {0}.name")
    + _TOTALS_FILLED
)
_PG_SHORT_FILES = (
    postgresql_schema(_SHORT_TABLES)
    + _pg_counted("short", "short", "short_totals", "cause")
    + """
CREATE FUNCTION short_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE short_totals SET files = files - 1, bytes = bytes - OLD.size WHERE cause = OLD.cause;
    INSERT INTO short_totals AS t (cause, files, bytes) VALUES (NEW.cause, 1, NEW.size)
    ON CONFLICT (cause) DO UPDATE SET files = t.files + 1, bytes = t.bytes + excluded.bytes;
    RETURN NULL;
END $$;
CREATE TRIGGER short_changed AFTER UPDATE OF cause, size ON short FOR EACH ROW
    WHEN (NEW.cause <> OLD.cause OR NEW.size <> OLD.size) EXECUTE FUNCTION short_changed()
"""
)
_PG_COMPACT_TOTALS = (
    _pg_counted("file", "files", "kind_totals", "kind")
    + """
CREATE FUNCTION file_resized() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE kind_totals SET bytes = bytes + NEW.size - OLD.size WHERE kind = NEW.kind;
    UPDATE node_totals t SET bytes = t.bytes + NEW.size - OLD.size
    WHERE EXISTS (SELECT 1 FROM held h WHERE h.node = t.node AND h.id = NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER file_resized AFTER UPDATE OF size ON files FOR EACH ROW
    WHEN (NEW.size <> OLD.size) EXECUTE FUNCTION file_resized();
"""
    + _pg_copies_counted("held", "held", "f.id = {0}.id")
    + """"""
    + _pg_counted("short", "short", "short_totals", "cause")
    + _PG_SHORT_FILES[_PG_SHORT_FILES.index("CREATE FUNCTION short_changed()") :]
)
PG_STEPS = (
    postgresql_schema(SCHEMA),
    _PG_TOTALS,
    _PG_SHORT_FILES,
    postgresql_step(postgresql_schema(TABLES), _PG_COMPACT_TOTALS),
)
MASTER = Schema("master", STEPS, PG_STEPS)

# The index node's contents: the first 128 bits of each SHA-256 and its reference count.
_INDEX = """
CREATE TABLE IF NOT EXISTS contents (prefix BLOB PRIMARY KEY, refs INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
"""
INDEX = Schema("index", (_INDEX,), (postgresql_schema(_INDEX),))
