"""The master's metadata as files grow: what `status`, the fsck summary and a file added cost,
and how many bytes each file takes, at sizes from 100,000 files up.

For each engine (SQLite, and PostgreSQL on a server this script starts as the tests do:
tests/postgres.py, fsync off as SQLite's synchronous=NORMAL does not sync each commit either) and
each size N, the records are written straight into the master's database (MasterDB, the same
calls a node's inventory makes; a whole import of N files would take hours): N contents of
random sizes, each on 2 of 3 nodes, in inventory batches of 5,000 as nodes send them. Then a
real master process is started on that database and asked, over HTTP:

- `GET /status` (median of 5) and `GET /admin/fsck` (median of 3), in ms;
- the bytes of the master's database per file once the repair pass took the marks the writing
  left (SQLite: `bytes/file` counts its folder, database and WAL after a checkpoint, less the
  pages free for reuse that the marks leave, which `file bytes` includes; PostgreSQL:
  pg_database_size);
- the cost of adding files at N against an empty database: the files per second of the last
  50,000 written over those of the first 50,000 (goal: at least 0.9), and PostgreSQL's files
  per second over SQLite's (goal: at least 0.7);
- the repair pass's cost per change, in microseconds: 20,000 files marked as changed, 1% of
  them below target, taken and recorded as the pass does (`take_marked`, `record_review`);
- a below-target lookup: the 100 most endangered files (`most_endangered`), in ms.

Goals at 10M files: `status` and the fsck summary under 50 ms on both engines; at most 100
bytes per file on SQLite.

Usage: python benchmarks/bench_scale.py [--sizes 100000,1000000] [--engines sqlite,postgresql]
       [--quick] [--json FILE]
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import free_port  # noqa: E402
from bench_tools import BenchError, run_benchmark, stop  # noqa: E402

from master.db import REPAIRING, MasterDB, NodeRow, Problem  # noqa: E402
from master.file_ids import name_of  # noqa: E402
from master.repair import EXAMINE  # noqa: E402

BATCH = 5_000
EDGE = 50_000  # files timed at the start and at the end of the writing (half, when fewer)
NODES = ("node1", "node2", "node3")
READY_TIMEOUT = 120.0


def target(kind: str, size: int, refs: int) -> int:
    return 2


def fill(where: Path | str, files: int, rng: random.Random) -> dict[str, float]:
    """N contents on 2 of 3 nodes, written as inventory batches; files per second at the start,
    at the end and over all."""
    db = MasterDB(where)
    for number, node in enumerate(NODES):
        db.save_node(NodeRow(id=node, address=f"http://127.0.0.1:{9000 + number}"))
    seq = dict.fromkeys(NODES, 0)
    edges: dict[str, float] = {}
    window = min(EDGE, files // 2 // BATCH * BATCH) or files
    began = tail_began = time.perf_counter()
    for start in range(0, files, BATCH):
        count = min(BATCH, files - start)
        entries = [
            {
                "op": "add",
                "kind": "content",
                "name": rng.randbytes(32).hex(),
                "size": rng.randrange(1, 1 << 20),
            }
            for _ in range(count)
        ]
        for node in rng.sample(NODES, 2):
            seq[node] += count
            db.apply_inventory(node, entries, seq[node], target)
        done = start + count
        if done == window:
            edges["first"] = done / (time.perf_counter() - began)
        if done == files - window:
            tail_began = time.perf_counter()
    ended = time.perf_counter()
    edges["last"] = window / (ended - tail_began)
    edges["all"] = files / (ended - began)
    if isinstance(where, Path):
        db.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return edges


def review(where: Path | str, rng: random.Random, changes: int = 20_000) -> dict[str, float]:
    """The repair pass's work per changed file, and a lookup of the files below target."""
    db = MasterDB(where)
    names = [
        name_of(key, bytes(rest))
        for key, rest in db.db.execute(
            "SELECT id, rest FROM files ORDER BY random() LIMIT ?", (changes,)
        )
    ]
    while db.take_marked(EXAMINE):  # the marks of the writing, not timed
        pass
    db.mark(("content", name) for name in names)
    began = time.perf_counter()
    while files := db.take_marked(EXAMINE):
        short = [
            Problem(f.kind, f.name, 1, 2, f.size, REPAIRING) for f in files if rng.random() < 0.01
        ]
        chosen = {p.name for p in short}
        fine = [(f.kind, f.name) for f in files if f.name not in chosen]
        db.record_review(short, fine, [], fine)
    per_change = (time.perf_counter() - began) / max(len(names), 1) * 1e6
    began = time.perf_counter()
    db.most_endangered(100)
    lookup = (time.perf_counter() - began) * 1000
    db.close()
    return {"review_us_per_change": per_change, "lookup_ms": lookup}


def write_config(path: Path) -> None:
    path.write_text(
        "cluster:\n  name: scale\n"
        f"  secret: {os.urandom(24).hex()}\n"
        "multicast:\n"
        f"  group_base: 230.{random.randint(1, 254)}.{random.randint(0, 255)}.0\n"
        f"  port: {free_port()}\n"
    )


def get(url: str) -> float:
    """Milliseconds to GET `url` and read its answer."""
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return (time.perf_counter() - began) * 1000


def ask_master(folder: Path, where: Path | str) -> dict[str, float]:
    config = folder / "dlweb.yaml"
    write_config(config)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "master",
        "--data",
        str(folder / "master"),
        "--listen",
        f"127.0.0.1:{port}",
        "-c",
        str(config),
        "--db",
        str(where),
    ]
    with open(folder / "master.log", "wb") as log:
        master = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                get(f"{url}/status")
                break
            except OSError:
                if master.poll() is not None or time.monotonic() > deadline:
                    log_text = (folder / "master.log").read_text(errors="replace")[-2000:]
                    raise BenchError(f"the master did not start:\n{log_text}") from None
                time.sleep(0.1)
        return {
            "status_ms": statistics.median(get(f"{url}/status") for _ in range(5)),
            "fsck_ms": statistics.median(get(f"{url}/admin/fsck") for _ in range(3)),
        }
    finally:
        stop(master)


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def stored_bytes(where: Path | str) -> tuple[int, int]:
    """The bytes the metadata takes, and of those the bytes in use (SQLite's pages free for
    reuse left out: those of the repair pass's marks, once taken)."""
    db = MasterDB(where)
    try:
        storage = db.storage()
    finally:
        db.close()
    if isinstance(where, Path):
        stored = folder_bytes(where.parent)
        return stored, stored - storage["free_bytes"]
    return storage["database_bytes"], storage["database_bytes"]


def measure(folder: Path, where: Path | str, size: int) -> dict[str, float]:
    began = time.perf_counter()
    edges = fill(where, size, random.Random(size))
    written = time.perf_counter() - began
    reviewed = review(where, random.Random(size + 1))
    stored, used = stored_bytes(where)
    return {
        "write_s": written,
        "files_per_s": edges["all"],
        "bytes_per_file": used / size,
        "file_bytes_per_file": stored / size,
        "late_over_early": edges["last"] / edges["first"],
        **reviewed,
        **ask_master(folder, where),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [100_000] if args.quick else [int(size) for size in args.sizes.split(",")]
    engines = args.engines.split(",")
    report: dict[str, Any] = {engine: {} for engine in engines}
    server = None
    if "postgresql" in engines:
        from tests.postgres import PostgresServer

        server = PostgresServer().start()
    try:
        for size in sizes:
            for engine in engines:
                with tempfile.TemporaryDirectory(prefix="bench-scale-") as name:
                    folder = Path(name)
                    where: Path | str = folder / "master" / "master.db"
                    if engine == "postgresql":
                        assert server is not None
                        where = server.create_database()
                    print(f"{engine}: writing {size:,} files ...", flush=True)
                    report[engine][size] = measure(folder, where, size)
    finally:
        if server is not None:
            server.remove()
    return report


def show(report: dict[str, Any]) -> None:
    print(
        f"\n{'engine':>10} {'files':>12} {'files/s':>9} {'status ms':>10} {'fsck ms':>8}"
        f" {'bytes/file':>11} {'file bytes':>11} {'add late/early':>15} {'review us/chg':>14} {'lookup ms':>10}"
    )
    for engine, sizes in report.items():
        for size, figures in sizes.items():
            print(
                f"{engine:>10} {size:>12,} {figures['files_per_s']:>9,.0f}"
                f" {figures['status_ms']:>10.1f} {figures['fsck_ms']:>8.1f}"
                f" {figures['bytes_per_file']:>11.0f} {figures['file_bytes_per_file']:>11.0f}"
                f" {figures['late_over_early']:>15.2f}"
                f" {figures['review_us_per_change']:>14.1f} {figures['lookup_ms']:>10.2f}"
            )
    for engine, sizes in report.items():
        largest = max(sizes)
        top = sizes[largest]
        goals = [
            ("status under 50 ms", top["status_ms"] < 50),
            ("fsck summary under 50 ms", top["fsck_ms"] < 50),
            ("adding files at least 0.9x as fast as when empty", top["late_over_early"] >= 0.9),
        ]
        if engine == "sqlite":
            goals.append(("at most 100 bytes a file", top["bytes_per_file"] <= 100))
        elif "sqlite" in report and largest in report["sqlite"]:
            ratio = top["files_per_s"] / report["sqlite"][largest]["files_per_s"]
            goals.append((f"adding files at least 0.7x SQLite's rate ({ratio:.2f}x)", ratio >= 0.7))
        for goal, held in goals:
            print(f"{engine} at {largest:,} files: {goal}: {'PASS' if held else 'MISS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="file counts, comma-separated")
    parser.add_argument(
        "--engines", default="sqlite,postgresql", help="sqlite, postgresql, or both (the default)"
    )
    parser.add_argument("--quick", action="store_true", help="100,000 files only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = run_benchmark(args, run, show, "the temporary folders are removed")
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
