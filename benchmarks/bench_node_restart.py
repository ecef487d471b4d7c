"""A storage node's restart at scale: how long a node holding N files takes to be back in service
after a clean stop, after a kill -9, and after losing its saved state, against the raw cost of
listing its files on disk.

The node is filled in this process through the node's own writing code (`StorageNode.put_contents`
and `create_structures`, in batches of 5,000 as a pack upload or an index node sends them, with
their group commits and inventory entries): N files, a tenth of them structure files of one
capture, the rest contents of about 120 bytes, all kept in volumes. Importing N captures over
HTTP would take hours at 1M. Then a real master and the node run as processes on loopback; the
master first takes in the node's whole inventory (timed, but not a restart).

"Back in service" is timed from the moment the node's process is started until all of: its HTTP
answers a GET of a stored file with that file's bytes, its /status says it has joined its master
(the master answered node.join), and says how the start went. Each restart is done 5 times
(median shown):

- clean: SIGTERM (the node saves its filter and counts and marks the stop clean), then a start;
- kill -9: 100 contents PUT and 10 deleted over HTTP just before a SIGKILL, then a start; those
  files are then checked (the new ones read back, the deleted ones 404) and the node's count;
- rebuild: the saved filter and counts removed after a clean stop, so the start lists the stores;
- and, for the fixed cost of any start, an empty node (another id) timed until it joined.

The peer baseline is the raw disk: `find` over the node's folder (its files are in volumes, so
it lists a few dozen files), and reading the volume index files (`cat *.idx`), the records from
which any listing of a node's files starts. The page cache is warm for all (the files were just
written; nothing is dropped, the machine is shared).

Usage: python benchmarks/bench_node_restart.py [--files N] [--json FILE]
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvloop  # noqa: E402
from bench_tools import BenchError, cpu_seconds, run_benchmark, stop  # noqa: E402

from archive.config import load_config  # noqa: E402
from archive.structure import Capture  # noqa: E402
from archive.urlkey import structure_name  # noqa: E402
from deploy.testing.ports import free_port  # noqa: E402
from storage_node.node import FILTER_FILE, SNAPSHOT_FILE, StorageNode  # noqa: E402

BATCH = 5_000
STRUCTURE_SHARE = 10  # one file in ten is a structure file
RUNS = 5
WRITTEN_BEFORE_KILL = 100
DELETED_BEFORE_KILL = 10
READY_TIMEOUT = 600.0
INGEST_TIMEOUT = 3600.0
HEADER = hashlib.sha256(b"HTTP/1.1 200 OK\r\n\r\n").hexdigest()


def content(number: int) -> bytes:
    return b"restart benchmark content %d\n" % number + b"." * 90


async def _fill(root: Path, files: int) -> None:
    node = StorageNode(root, "bench")
    contents = files - files // STRUCTURE_SHARE
    for start in range(0, contents, BATCH):
        batch = [content(i) for i in range(start, min(contents, start + BATCH))]
        await node.put_contents([(hashlib.sha256(data).hexdigest(), data) for data in batch])
    for start in range(0, files - contents, BATCH):
        urls = [
            f"http://site.example/page/{i}"
            for i in range(start, min(files - contents, start + BATCH))
        ]
        await node.create_structures(
            [
                (structure_name(url), url, [Capture(1_600_000_000_000_000, HEADER, HEADER, 200)])
                for url in urls
            ]
        )
    # Saved as the node saves it every 30 s: the filter sized for what it holds now.
    await node.save_state()
    node.close()


def fill(root: Path, files: int) -> float:
    began = time.perf_counter()
    uvloop.run(_fill(root, files))
    return time.perf_counter() - began


def write_config(path: Path, master_port: int) -> None:
    path.write_text(
        "cluster:\n  name: restart\n"
        f"  secret: {os.urandom(24).hex()}\n"
        "multicast:\n"
        f"  group_base: 230.{random.randint(1, 254)}.{random.randint(0, 255)}.0\n"
        f"  port: {free_port()}\n"
        f"master: http://127.0.0.1:{master_port}\n"
        "replication:\n  default: 1\n"
    )


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=600) as answer:
        return json.load(answer)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise BenchError(f"no VmHWM for process {pid}")


class Bench:
    def __init__(self, folder: Path, files: int) -> None:
        self.folder = folder
        self.root = folder / "node"
        self.files = files
        self.master_port = free_port()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_path = folder / "dlweb.yaml"
        write_config(self.config_path, self.master_port)
        self.token = load_config(self.config_path).write_token
        self.master: subprocess.Popen[bytes] | None = None
        self.node: subprocess.Popen[bytes] | None = None
        # A stored file read back as the proof of service: one from the middle of the fill.
        self.sample = content((files - files // STRUCTURE_SHARE) // 2)
        self.expected = files
        self.written = 0

    def start_master(self) -> None:
        command = [
            sys.executable,
            "-m",
            "master",
            "--data",
            str(self.folder / "master"),
            "--listen",
            f"127.0.0.1:{self.master_port}",
            "-c",
            str(self.config_path),
        ]
        with open(self.folder / "master.log", "ab") as log:
            self.master = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self._wait(lambda: get_json(f"http://127.0.0.1:{self.master_port}/status"), "the master")

    def _wait(self, answered: Any, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                answered()
                return
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise BenchError(f"{what} did not answer in {READY_TIMEOUT:.0f} s") from None
                time.sleep(0.05)

    def start_node(self, how: str, empty: bool = False) -> dict[str, float]:
        """Start the node and time it until it serves a stored file and has joined the master;
        its start must have gone `how`. With `empty`, a node of no files under another id, timed
        until it joined: the fixed cost of a start."""
        command = [
            sys.executable,
            "-m",
            "storage_node",
            "--root",
            str(self.folder / "empty" if empty else self.root),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--id",
            "empty" if empty else "bench",
            "-c",
            str(self.config_path),
        ]
        began = time.perf_counter()
        with open(self.folder / "node.log", "ab") as log:
            self.node = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        sample = f"{self.url}/content/{hashlib.sha256(self.sample).hexdigest()}"
        served = 0.0 if empty else None
        joined = None
        status: dict[str, Any] = {}
        while served is None or joined is None:
            if self.node.poll() is not None:
                raise BenchError(f"the node exited:\n{self.log()[-3000:]}")
            if time.perf_counter() - began > READY_TIMEOUT:
                raise BenchError(f"the node was not back in {READY_TIMEOUT:.0f} s")
            try:
                if served is None:
                    with urllib.request.urlopen(sample, timeout=10) as answer:
                        if answer.read() == self.sample:
                            served = time.perf_counter() - began
                if joined is None:
                    status = get_json(f"{self.url}/status")
                    if status["master"]["joined"]:
                        joined = time.perf_counter() - began
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        if status["start"]["how"] != how:
            raise BenchError(f"the node started {status['start']['how']}, not {how}")
        if not empty and status["files"]["content"] + status["files"]["structure"] != self.expected:
            raise BenchError(f"the node counts {status['files']}, not {self.expected} files")
        return {
            "ready_s": max(served, joined),
            "served_s": served,
            "joined_s": joined,
            "state_s": status["start"]["seconds"],
            "replayed": status["start"]["replayed"],
            "peak_rss_mb": peak_rss_mb(self.node.pid),
        }

    def stop_node(self, sig: int = signal.SIGTERM) -> float:
        assert self.node is not None
        began = time.perf_counter()
        self.node.send_signal(sig)
        self.node.wait(timeout=600)
        self.node = None
        return time.perf_counter() - began

    def log(self) -> str:
        return (self.folder / "node.log").read_text(errors="replace")

    def wait_ingested(self) -> float:
        """Seconds until the master counts every file of the node (its first join sends them)."""
        began = time.perf_counter()
        while True:
            status = get_json(f"http://127.0.0.1:{self.master_port}/status")
            held = [node["files"] for node in status["nodes"] if node["id"] == "bench"]
            if held and held[0] >= self.files:
                return time.perf_counter() - began
            if time.perf_counter() - began > INGEST_TIMEOUT:
                raise BenchError(f"the master took in {held} of {self.files} files")
            time.sleep(2)

    def request(self, method: str, name: str, data: bytes | None = None) -> int:
        request = urllib.request.Request(
            f"{self.url}/content/{name}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                answer.read()
                return int(answer.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    def change_then_kill(self, run: int) -> tuple[list[bytes], list[bytes]]:
        """PUT new contents and DELETE old ones (each acknowledged), then SIGKILL the node."""
        new = [b"written before kill %d/%d\n" % (run, i) for i in range(WRITTEN_BEFORE_KILL)]
        for data in new:
            if self.request("PUT", hashlib.sha256(data).hexdigest(), data) != 201:
                raise BenchError("a PUT before the kill was not acknowledged")
        gone = [content(run * DELETED_BEFORE_KILL + i) for i in range(DELETED_BEFORE_KILL)]
        for data in gone:
            if self.request("DELETE", hashlib.sha256(data).hexdigest()) != 200:
                raise BenchError("a DELETE before the kill was not acknowledged")
        self.expected += len(new) - len(gone)
        self.stop_node(signal.SIGKILL)
        return new, gone

    def check_after_kill(self, new: list[bytes], gone: list[bytes]) -> None:
        for data in new:
            with urllib.request.urlopen(
                f"{self.url}/content/{hashlib.sha256(data).hexdigest()}", timeout=60
            ) as answer:
                if answer.read() != data:
                    raise BenchError("a file written before the kill reads back wrong")
        for data in gone:
            if self.request("GET", hashlib.sha256(data).hexdigest()) != 404:
                raise BenchError("a file deleted before the kill is still served")

    def close(self) -> None:
        for process in (self.node, self.master):
            if process is not None:
                stop(process, 60)


def timed(command: str) -> float:
    began = time.perf_counter()
    subprocess.run(["sh", "-c", command], check=True, capture_output=True)
    return time.perf_counter() - began


def peers(root: Path) -> dict[str, float]:
    """The raw disk: list the node's folder, and read its volume indexes."""
    return {
        "find_s": statistics.median(timed(f"find {root} -type f | wc -l") for _ in range(RUNS)),
        "read_indexes_s": statistics.median(
            timed(f"cat {root}/*/volumes/*.idx > /dev/null") for _ in range(RUNS)
        ),
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"files": args.files, "filled_with": "StorageNode.put_contents"}
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as name:
        bench = Bench(Path(name), args.files)
        try:
            print(f"filling a node with {args.files:,} files ...", flush=True)
            report["fill_s"] = fill(bench.root, args.files)
            bench.start_master()
            report["first_start"] = bench.start_node("clean")
            print("the master takes in the node's inventory ...", flush=True)
            report["master_ingest_s"] = bench.wait_ingested()
            clean, stops = [], []
            assert bench.master is not None
            master_cpu, began = cpu_seconds([bench.master.pid]), time.perf_counter()
            for _ in range(RUNS):
                stops.append(bench.stop_node())
                clean.append(bench.start_node("clean"))
            report["clean"] = {**median_of(clean), "stop_s": statistics.median(stops)}
            report["master_cores"] = (cpu_seconds([bench.master.pid]) - master_cpu) / (
                time.perf_counter() - began
            )
            print("kill -9 restarts ...", flush=True)
            killed = []
            for number in range(RUNS):
                new, gone = bench.change_then_kill(number)
                killed.append(bench.start_node("replayed"))
                bench.check_after_kill(new, gone)
            report["kill"] = median_of(killed)
            print("starts that rebuild ...", flush=True)
            rebuilt = []
            for _ in range(RUNS):
                bench.stop_node()
                for saved in (FILTER_FILE, SNAPSHOT_FILE):
                    (bench.root / saved).unlink()
                rebuilt.append(bench.start_node("rebuilt"))
            report["rebuild"] = median_of(rebuilt)
            bench.stop_node()
            empty = []
            for _ in range(RUNS):
                shutil.rmtree(bench.folder / "empty", ignore_errors=True)
                empty.append(bench.start_node("rebuilt", empty=True))
                bench.stop_node()
            report["empty"] = median_of(empty)
            report["peer"] = peers(bench.root)
        finally:
            bench.close()
    return report


def show(report: dict[str, Any]) -> None:
    files = report["files"]
    print(f"\nnode of {files:,} files (filled through {report['filled_with']} in")
    print(f"{report['fill_s']:.0f} s; the master took in its inventory in")
    print(f"{report['master_ingest_s']:.0f} s at its first join)\n")
    print(
        f"{'start':>10} {'in service s':>13} {'GET s':>7} {'joined s':>9} {'state s':>8} {'peak RSS MB':>12}"
    )
    for key, label in (("clean", "clean"), ("kill", "kill -9"), ("rebuild", "rebuild")):
        r = report[key]
        print(
            f"{label:>10} {r['ready_s']:>13.2f} {r['served_s']:>7.2f} {r['joined_s']:>9.2f}"
            f" {r['state_s']:>8.2f} {r['peak_rss_mb']:>12.0f}"
        )
    print(
        f"\nan empty node joins its master in {report['empty']['ready_s']:.2f} s (the fixed cost)"
    )
    print(f"clean stop took {report['clean']['stop_s']:.2f} s")
    print(f"the master used {report['master_cores']:.2f} cores during the clean restarts")
    print(
        f"first start, before the master held the node's files: {report['first_start']['ready_s']:.2f} s"
    )
    print(f"entries replayed after a kill -9: {report['kill']['replayed']:.0f}")
    peer = report["peer"]
    print(
        f"peer, raw disk: find {peer['find_s']:.2f} s, reading the volume indexes {peer['read_indexes_s']:.2f} s"
    )
    floor = peer["find_s"] + peer["read_indexes_s"]
    fixed = report["empty"]["ready_s"]
    for key, label in (("clean", "clean"), ("kill", "kill -9"), ("rebuild", "rebuild")):
        ready = report[key]["ready_s"]
        print(
            f"{label}: in service in {ready / floor:.1f}x the raw listing;"
            f" {ready - fixed:.2f} s more than an empty node"
        )
    print(f"rebuild / clean: {report['rebuild']['ready_s'] / report['clean']['ready_s']:.1f}x")
    for goal, held in (
        ("clean restart under 10 s", report["clean"]["ready_s"] < 10),
        ("kill -9 restart under 60 s", report["kill"]["ready_s"] < 60),
    ):
        print(f"goal at {files:,} files: {goal}: {'PASS' if held else 'MISS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", type=int, default=1_000_000, help="files on the node (1,000,000)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.files < 10 * (RUNS + 1) * DELETED_BEFORE_KILL:
        parser.error(f"--files: at least {10 * (RUNS + 1) * DELETED_BEFORE_KILL} files")
    result = run_benchmark(args, run, show, "the temporary folder is removed")
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
