"""The master's and the index node's SQLite: the WAL is checkpointed by a thread, not by commits."""

import threading

from archive.sql import open_database
from deploy.testing.waits import wait_until

ROWS = 2_000
ROW = b"x" * 1_000


def test_commits_leave_the_wal_to_the_checkpointer(tmp_path):
    path = tmp_path / "t.db"
    db = open_database(path, checkpoint_every=3600)
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    for part in range(4):
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO t (id, data) VALUES (?, ?)",
            [(part * ROWS + i, ROW) for i in range(ROWS)],
        )
        db.execute("COMMIT")
    # 8 MB committed, more than SQLite's default 1,000 pages: still all in the WAL.
    assert path.stat().st_size < 100_000
    other = open_database(path, checkpoint_every=0.05)
    try:
        assert other.checkpointer is not None
        checkpointer = other.checkpointer
        # The file grows while the checkpoint runs; the thread counts it once it has returned.
        wait_until(
            lambda: path.stat().st_size > 4 * ROWS * len(ROW) and checkpointer.checkpoints >= 1,
            "the checkpoint",
        )
        assert db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 4 * ROWS
    finally:
        other.close()
        db.close()
    assert not any(t.name == "checkpoint t.db" for t in threading.enumerate())
