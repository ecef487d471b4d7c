"""The master's metadata as files grow: what `status`, the fsck summary, an import and a file
added cost, and how many bytes each file takes, at sizes from 100,000 files up.

For each engine (SQLite, and PostgreSQL on a server this script starts as the tests do:
deploy/testing/postgres.py, fsync off as SQLite's synchronous=NORMAL does not sync each commit
either, shared_buffers at PostgreSQL's default of 128MB) and each size N, two local clusters of 3 storage nodes at replica 2 are made (`dlweb up`,
their masters on that engine). Into the master's metadata of one, stopped, N records are written
straight, one process an engine side by side (MasterDB, the same calls a node's inventory
makes; an import of N files would take hours): N contents of random sizes, each on 2 of its 3 nodes (none small enough for the policy
to want a third copy: made-up contents cannot be copied), in inventory batches of 5,000 as
nodes send them. The other stays empty. Then, the clusters of every engine running at once:

- the seconds each full cluster's master takes to settle (nothing left for the repair pass to
  look at), after which the rest is measured: its full scans go on meanwhile, as they do in
  service;
- `GET /status` (median of 5) and `GET /admin/fsck` (median of 3), in ms;
- a WARC of 5,000 responses a round, 5 rounds, imported into every cluster in turns (who goes
  first moving on a place each round), each import once every master is settled: the full
  cluster's records/s over the empty one's, the median of the rounds (goal: at least 0.9), and
  the full PostgreSQL cluster's records/s over the full SQLite one's, the median of the rounds
  (goal: at least 0.7);
- the bytes of the master's database per file once the repair pass took the marks the writing
  left (SQLite: `bytes/file` counts its folder, database and WAL after a checkpoint, less the
  pages free for reuse that the marks leave, which `file bytes` includes; PostgreSQL:
  pg_database_size);
- the master's own writing as files grow: the files per second of the last 50,000 written over
  those of the first 50,000 (`add late/early`);
- the repair pass's cost per change, in microseconds: 20,000 files marked as changed, 1% of
  them below target, taken and recorded as the pass does (`take_marked`, `record_review`);
- a below-target lookup: the 100 most endangered files (`most_endangered`), in ms.

Goals, judged at the largest size (10M files in the full run): `status` and the fsck summary
under 50 ms on both engines; at most 100 bytes per file on SQLite. At 1M files (or the largest
size below): an import at least 0.9x as fast as into the empty cluster, and PostgreSQL's at
least 0.7x SQLite's.

Usage: python benchmarks/bench_scale.py [--sizes 100000,1000000] [--engines sqlite,postgresql]
       [--quick] [--json FILE]
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import import make_warc  # noqa: E402
from bench_tools import (  # noqa: E402
    BenchError,
    checked,
    cluster_down,
    cluster_up,
    dlweb,
    run_benchmark,
    settle_disk,
)

from archive.config import Replication, load_config  # noqa: E402
from deploy.launcher import CONFIG_FILE  # noqa: E402
from master.db import REPAIRING, MasterDB, NodeRow, Problem  # noqa: E402
from master.file_ids import name_of  # noqa: E402
from master.policy import target_function  # noqa: E402
from master.repair import EXAMINE  # noqa: E402

BATCH = 5_000
# Responses in each WARC imported into the cluster (while empty, and once it holds N files):
# enough for the import to take seconds, not the command's start-up.
IMPORT_RESPONSES = 5_000
IMPORT_ROUNDS = 5
IMPORT_GOAL_AT = 1_000_000  # the size the import goals are judged at
SETTLE_TIMEOUT = 1800.0
EDGE = 50_000  # files timed at the start and at the end of the writing (half, when fewer)
NODES = ("node1", "node2", "node3")
READY_TIMEOUT = 120.0


# PostgreSQL's own default: the tests' server takes 32MB, too little for a master of 10M files.
PG_SHARED_BUFFERS = "128MB"

POLICY = Replication(default=2)
target = target_function(POLICY)


def fill(where: Path | str, files: int, rng: random.Random) -> dict[str, float]:
    """N contents on 2 of the cluster's 3 nodes (made up when it has none), written as
    inventory batches; files per second at the start, at the end and over all. The nodes'
    inventory positions are kept: a node of a real cluster sends nothing for these."""
    db = MasterDB(where)
    seq = {row.id: row.seq for row in db.nodes()}
    if not seq:
        for number, node in enumerate(NODES):
            db.save_node(NodeRow(id=node, address=f"http://127.0.0.1:{9000 + number}"))
        seq = dict.fromkeys(NODES, 0)
    nodes = sorted(seq)
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
                "size": rng.randrange(POLICY.small_bytes + 1, 1 << 20),
            }
            for _ in range(count)
        ]
        for node in rng.sample(nodes, 2):
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
    """The repair pass's work per changed file, and a lookup of the files below target; the
    marks of the writing are taken first, as a repair pass keeping up would have."""
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


def get(url: str) -> float:
    """Milliseconds to GET `url` and read its answer."""
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return (time.perf_counter() - began) * 1000


def wait_settled(data: Path) -> float:
    """Seconds until the repair pass has nothing left to look at: the cluster as it serves day
    to day, not in its first seconds after a restart or an import. Full scans are not waited
    for: from about a million files on, one takes longer than --full-scan-every (5 minutes), so
    the next starts as one ends; a master of that size is always scanning, a step every 2 s."""
    url = load_config(data / CONFIG_FILE).master
    began = time.monotonic()
    while True:
        with urllib.request.urlopen(f"{url}/status", timeout=600) as answer:
            repairs = json.load(answer).get("repairs") or {}
        if not repairs.get("to_check") and not repairs.get("nodes_to_check"):
            return time.monotonic() - began
        if time.monotonic() - began > SETTLE_TIMEOUT:
            raise BenchError(f"the master still scans after {SETTLE_TIMEOUT:.0f} s: {repairs}")
        time.sleep(0.5)


def ask_master(data: Path) -> dict[str, float]:
    """`status` and the fsck summary, as the cluster's master answers them."""
    url = load_config(data / CONFIG_FILE).master
    return {
        "status_ms": statistics.median(get(f"{url}/status") for _ in range(5)),
        "fsck_ms": statistics.median(get(f"{url}/admin/fsck") for _ in range(3)),
    }


def import_rate(data: Path, warc_file: Path, records: int) -> float:
    """Records a second `dlweb import` of a WARC into the running cluster stores."""
    command = dlweb("import", "-c", str(data / CONFIG_FILE), str(warc_file))
    settle_disk()
    began = time.perf_counter()
    checked(command, "dlweb import")
    return records / (time.perf_counter() - began)


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


def fill_cluster(folder: Path, db_urls: tuple[str, str] | None, size: int) -> dict[str, Any]:
    """Two stopped clusters of 3 nodes at replica 2 in `folder`, their masters keeping their
    metadata at `db_urls` (SQLite in their folders when None): N files written into the
    metadata of `full`, `empty` left empty. The figures of the writing."""
    full_data = folder / "full"
    full_url, empty_url = db_urls or (None, None)
    cluster_up(full_data, 3, 2, *(["--db", full_url] if full_url else []))
    cluster_down(full_data)
    cluster_up(folder / "empty", 3, 2, *(["--db", empty_url] if empty_url else []))
    cluster_down(folder / "empty")
    where: Path | str = full_url or next(full_data.rglob("master.db"))
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
    }


def import_rounds(
    clusters: dict[tuple[str, str], Path], warcs: list[tuple[Path, int]]
) -> dict[tuple[str, str], list[float]]:
    """Each WARC imported into every cluster (engine, full or empty) in turns, who goes first
    moving on a place each round, each import once every master is settled: the records a
    second of each cluster, round by round."""
    rates: dict[tuple[str, str], list[float]] = {key: [] for key in clusters}
    keys = list(clusters)
    for number, warc in enumerate(warcs):
        for key in keys[number % len(keys) :] + keys[: number % len(keys)]:
            for data in clusters.values():
                wait_settled(data)
            rates[key].append(import_rate(clusters[key], *warc))
        shown = ", ".join(
            f"{engine} {which} {rates[(engine, which)][-1]:,.0f}" for engine, which in keys
        )
        print(f"  round {number + 1}, records/s: {shown}", flush=True)
    return rates


def measure(
    folder: Path, engines: list[str], server: Any, size: int, warcs: list[tuple[Path, int]]
) -> dict[str, dict[str, Any]]:
    """The figures of each engine at N files: the writing's, then, every cluster running, the
    full masters' `status` and fsck summary and the imports into every cluster in turns."""
    db_urls = {
        engine: (server.create_database(), server.create_database())
        if engine == "postgresql"
        else None
        for engine in engines
    }
    print(f"{', '.join(engines)}: {size:,} files ...", flush=True)
    with ProcessPoolExecutor(len(engines)) as pool:
        writing = {
            engine: pool.submit(fill_cluster, folder / engine, db_urls[engine], size)
            for engine in engines
        }
        figures = {engine: done.result() for engine, done in writing.items()}
    clusters = {
        (engine, which): folder / engine / which
        for engine in engines
        for which in ("full", "empty")
    }
    try:
        for data in clusters.values():
            cluster_up(data, 3, 2)
        for engine in engines:
            figures[engine]["settle_s"] = wait_settled(folder / engine / "full")
            figures[engine].update(ask_master(folder / engine / "full"))
        rates = import_rounds(clusters, warcs)
    finally:
        for data in clusters.values():
            cluster_down(data)
    for engine in engines:
        full, empty = rates[(engine, "full")], rates[(engine, "empty")]
        rounds = [one / other for one, other in zip(full, empty, strict=True)]
        figures[engine].update(
            import_full_per_s=statistics.median(full),
            import_full_over_empty=statistics.median(rounds),
            import_rounds=rounds,
        )
        if engine != engines[0]:
            first = rates[(engines[0], "full")]
            against = [one / other for one, other in zip(full, first, strict=True)]
            figures[engine][f"import_over_{engines[0]}"] = statistics.median(against)
            figures[engine][f"import_over_{engines[0]}_rounds"] = against
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [100_000] if args.quick else [int(size) for size in args.sizes.split(",")]
    engines = args.engines.split(",")
    report: dict[str, Any] = {engine: {} for engine in engines}
    server = None
    if "postgresql" in engines:
        from deploy.testing.postgres import PostgresServer

        server = PostgresServer(settings=[f"shared_buffers={PG_SHARED_BUFFERS}"]).start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-warcs-") as name:
            warcs = [Path(name) / f"{number}.warc.gz" for number in range(IMPORT_ROUNDS)]
            records = [
                make_warc(warc, IMPORT_RESPONSES, random.Random(number))["records"]
                for number, warc in enumerate(warcs)
            ]
            for size in sizes:
                with tempfile.TemporaryDirectory(prefix="bench-scale-") as folder:
                    figures = measure(
                        Path(folder), engines, server, size, list(zip(warcs, records, strict=True))
                    )
                for engine in engines:
                    report[engine][size] = figures[engine]
    finally:
        if server is not None:
            server.remove()
    return report


def show(report: dict[str, Any]) -> None:
    print(
        f"\n{'engine':>10} {'files':>12} {'status ms':>10} {'fsck ms':>8} {'import/s':>9}"
        f" {'vs empty':>9} {'bytes/file':>11} {'file bytes':>11} {'files/s':>9}"
        f" {'add late/early':>15} {'review us/chg':>14} {'lookup ms':>10} {'settle s':>9}"
    )
    for engine, sizes in report.items():
        for size, figures in sizes.items():
            print(
                f"{engine:>10} {size:>12,} {figures['status_ms']:>10.1f} {figures['fsck_ms']:>8.1f}"
                f" {figures['import_full_per_s']:>9,.0f} {figures['import_full_over_empty']:>9.2f}"
                f" {figures['bytes_per_file']:>11.0f} {figures['file_bytes_per_file']:>11.0f}"
                f" {figures['files_per_s']:>9,.0f} {figures['late_over_early']:>15.2f}"
                f" {figures['review_us_per_change']:>14.1f} {figures['lookup_ms']:>10.2f}"
                f" {figures['settle_s']:>9.1f}"
            )
    for engine, sizes in report.items():
        largest = max(sizes)
        top = sizes[largest]
        goals = [
            (largest, "status under 50 ms", top["status_ms"] < 50),
            (largest, "fsck summary under 50 ms", top["fsck_ms"] < 50),
        ]
        if engine == "sqlite":
            goals.append((largest, "at most 100 bytes a file", top["bytes_per_file"] <= 100))
        at = max((size for size in sizes if size <= IMPORT_GOAL_AT), default=largest)
        ratio = sizes[at]["import_full_over_empty"]
        goals.append(
            (
                at,
                f"an import at least 0.9x as fast as into the empty cluster ({ratio:.2f}x)",
                ratio >= 0.9,
            )
        )
        if "import_over_sqlite" in sizes[at]:
            ratio = sizes[at]["import_over_sqlite"]
            goals.append(
                (at, f"an import at least 0.7x SQLite's rate ({ratio:.2f}x)", ratio >= 0.7)
            )
        for size, goal, held in goals:
            print(f"{engine} at {size:,} files: {goal}: {'PASS' if held else 'MISS'}")


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
