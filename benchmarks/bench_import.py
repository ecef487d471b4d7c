"""WARC import throughput: `dlweb import` into a one-node cluster beside pywb's `wb-manager add`.

Writes one gzipped WARC 1.1 shaped like a crawl (seeded): a warcinfo record, then N responses,
each followed by its request; most payloads are 2-50 KB of HTML-like text, about 10% are
100-300 KB binaries, and about 20% repeat an earlier payload under another URL. Then, in the same
run and on the same file:

1. pywb (in its own virtual environment, see deploy/testing/pywb.py): `wb-manager add`, which copies
   the WARC into a fresh collection and indexes it; then the time a flush of the disk takes
   right after, printed but not counted (pywb exits before its files are durable, dlweb once
   they are);
2. dlweb: `dlweb import` into a local cluster started with `dlweb up` (1 storage node, replica 1),
   then the same import again, which has nothing new to store; with the CPU seconds the command
   and each process of the cluster used, since on a machine of few cores they add up;
3. dlweb again, into a cluster of 3 storage nodes at replica 2, where an import is acknowledged
   only once each new file is on two nodes (the write quorum), and into the same cluster at
   replica 1: the quorum's cost is the first's speed against the second's, on clusters that
   differ in the replica target alone. Its speed against the one-node cluster's is shown too:
   on a machine of few cores, the two more storage nodes' own work shares the cores.

They take turns, rounds of one pywb run (on a fresh collection) then one run of each dlweb
import (each on a fresh cluster; the two of 3 nodes in turns first), and the best of each
counts: on a shared machine whose load drifts, runs that alternate meet the same conditions,
where all of one then all of the other would not. Five rounds by default: the speed of a shared
machine drifts by a third over minutes, and dlweb, which keeps every core busy, feels such drift
more than pywb on one core, so the best of fewer rounds often compares a slow moment of one with
a fast moment of the other.

Usage: python benchmarks/bench_import.py [--quick] [--records N] [--rounds N] [--seed N]
       [--json FILE]
"""

import argparse
import hashlib
import io
import json
import os
import random
import re
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import (  # noqa: E402
    MB,
    WORDS,
    checked,
    children_cpu,
    cluster_down,
    cluster_pids,
    cluster_up,
    cpu_seconds,
    dlweb,
    run_benchmark,
    settle_disk,
    work_directory,
)

from archive.command_line import positive_int  # noqa: E402
from archive.config import load_config  # noqa: E402
from archive.store import sync_filesystem  # noqa: E402
from deploy.launcher import CONFIG_FILE  # noqa: E402
from deploy.processes import RUN_DIR  # noqa: E402
from deploy.testing.pywb import PYWB_VERSION, pywb_bin  # noqa: E402

DUPLICATES = 0.2
BINARIES = 0.1
TEXT_SIZES = (2_000, 50_000)
BINARY_SIZES = (100_000, 300_000)
# Duplicates repeat one of the last distinct payloads, as a crawl meets the same image or page
# under other URLs of a site; keeping a window bounds memory.
RECENT = 500
SITES = 50
STARTED = datetime(2024, 5, 1, tzinfo=UTC)
USER_AGENT = "Mozilla/5.0 (compatible; bench-crawler/1.0)"
INVENTORY_WAIT = 30.0


def last_line(output: str) -> str:
    """The summary a command ends its output with."""
    lines = output.strip().splitlines()
    return lines[-1].strip() if lines else "(no output)"


def text_corpus(rng: random.Random, size: int) -> str:
    """HTML-like text that pages are cut from: paragraphs of words, compressing as pages do."""
    parts = []
    length = 0
    while length < size:
        paragraph = " ".join(rng.choices(WORDS, k=rng.randint(20, 120)))
        href = f'<a href="/{rng.choice(WORDS)}/{rng.randrange(10**6)}">{rng.choice(WORDS)}</a>'
        parts.append(f"<p>{paragraph} {href}</p>\n")
        length += len(parts[-1])
    return "".join(parts)


def new_payload(rng: random.Random, corpus: str, title: str) -> tuple[str, bytes]:
    """A distinct payload and its content type: a page cut from the corpus, or a binary."""
    if rng.random() < BINARIES:
        return "image/jpeg", rng.randbytes(rng.randint(*BINARY_SIZES))
    size = rng.randint(*TEXT_SIZES)
    start = rng.randrange(len(corpus) - size)
    head = f"<!doctype html><html><head><title>{title}</title></head><body>\n"
    html = head + corpus[start : start + size] + "</body></html>\n"
    return "text/html; charset=utf-8", html.encode()


def make_warc(path: Path, responses: int, rng: random.Random) -> dict[str, Any]:
    """Write the crawl-like WARC; return what it holds."""
    corpus = text_corpus(rng, 2 * TEXT_SIZES[1] + 4 * MB)
    recent: list[tuple[str, bytes]] = []
    duplicates = 0
    payload_bytes = 0
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        info = {"software": "dlweb bench_import.py", "format": "WARC File Format 1.1"}
        writer.write_record(writer.create_warcinfo_record(path.name, info))
        for i in range(responses):
            site = f"site{i % SITES}.example"
            if recent and rng.random() < DUPLICATES:
                content_type, body = rng.choice(recent)
                duplicates += 1
            else:
                content_type, body = new_payload(rng, corpus, f"{site} {i}")
                if len(recent) == RECENT:
                    recent[rng.randrange(RECENT)] = (content_type, body)
                else:
                    recent.append((content_type, body))
            payload_bytes += len(body)
            extension = "jpg" if content_type == "image/jpeg" else "html"
            path_part = f"/{rng.choice(WORDS)}/{i}.{extension}"
            url = f"http://{site}{path_part}"
            when = STARTED + timedelta(milliseconds=50 * i + rng.randrange(50))
            warc_date = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            http_date = format_datetime(when, usegmt=True)
            response_headers = StatusAndHeaders(
                "200 OK",
                [
                    ("Date", http_date),
                    ("Server", "nginx"),
                    ("Content-Type", content_type),
                    ("Content-Length", str(len(body))),
                    ("Cache-Control", "max-age=3600"),
                ],
                protocol="HTTP/1.1",
            )
            response = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                http_headers=response_headers,
                warc_headers_dict={"WARC-Date": warc_date},
            )
            writer.write_record(response)
            request_headers = StatusAndHeaders(
                f"GET {path_part} HTTP/1.1",
                [
                    ("Host", site),
                    ("User-Agent", USER_AGENT),
                    ("Accept", "text/html,image/*,*/*;q=0.8"),
                    ("Connection", "keep-alive"),
                ],
                is_http_request=True,
            )
            request = writer.create_warc_record(
                url,
                "request",
                http_headers=request_headers,
                warc_headers_dict={
                    "WARC-Date": warc_date,
                    "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
                },
            )
            writer.write_record(request)
    return {
        "records": 1 + 2 * responses,
        "responses": responses,
        "duplicates": duplicates,
        "payload_bytes": payload_bytes,
        "bytes": path.stat().st_size,
    }


def figures(seconds: float, warc: dict[str, Any]) -> dict[str, float]:
    return {
        "seconds": seconds,
        "records_per_s": warc["records"] / seconds,
        "mb_per_s": warc["bytes"] / MB / seconds,
    }


def timed(command: list[str], what: str, cwd: Path | None = None) -> tuple[float, str]:
    """Seconds `command` took, from a settled disk, and its output."""
    settle_disk()
    started = time.monotonic()
    output = checked(command, what, cwd)
    return time.monotonic() - started, output


def one_pywb(workdir: Path, warc_file: Path) -> tuple[float, float, float]:
    """Seconds and CPU seconds of `wb-manager add` of the WARC into a fresh collection, and the
    seconds a flush of the disk takes right after it: pywb leaves its copy of the WARC and its
    index in the page cache, where dlweb acknowledges a batch only once it is on disk."""
    manager = str(pywb_bin() / "wb-manager")
    workdir.mkdir()
    checked([manager, "init", "coll"], "wb-manager init", workdir)
    command = [manager, "add", "coll", str(warc_file)]
    seconds, _, cpu = timed_with_cpu(command, "wb-manager add", {}, workdir)
    started = time.monotonic()
    settle_disk()
    flushed = time.monotonic() - started
    print(
        f"  wb-manager add: {seconds:.2f} s, {cpu['client']:.2f} CPU s; then sync {flushed:.2f} s"
    )
    return seconds, cpu["client"], flushed


def raw_store(warc_file: Path, root: Path) -> int:
    """The floor of dlweb's storage model on this disk: each distinct payload, header block and
    request, and one small file per URL, as files named by SHA-256 in the nodes' `ab/cd/` layout,
    then one filesystem flush; no cluster, no checks. Returns the files written."""
    written: set[str] = set()

    def store(kind: str, data: bytes) -> None:
        name = hashlib.sha256(data).hexdigest()
        if name in written:
            return
        written.add(name)
        folder = root / kind / name[:2] / name[2:4]
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    with open(warc_file, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type not in ("response", "request"):
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            store("content", record.http_headers.to_bytes())
            store("content", record.content_stream().read())
            store("structure", url.encode())
    fd = os.open(root, os.O_RDONLY)
    try:
        sync_filesystem(fd)
    finally:
        os.close(fd)
    return len(written)


def bench_raw(work: Path, warc_file: Path, warc: dict[str, Any]) -> dict[str, Any]:
    settle_disk()
    started = time.monotonic()
    files = raw_store(warc_file, work / "raw")
    seconds = time.monotonic() - started
    print(f"  raw store: {seconds:.2f} s, {files:,} files")
    return {"files": files, **figures(seconds, warc)}


def content_files(config_path: Path, at_least: int) -> int:
    """The contents the master knows of, once it knows `at_least` (it learns of stored files
    from the nodes' inventories a moment after the import ends), or after INVENTORY_WAIT s."""
    master = load_config(config_path).master
    deadline = time.monotonic() + INVENTORY_WAIT
    while True:
        with urllib.request.urlopen(f"{master}/status", timeout=10) as answer:
            count: int = json.load(answer)["files"]["content"]
        if count >= at_least or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def new_contents(output: str) -> int:
    """The new contents an import's summary reports."""
    match = re.search(r"([\d,]+) new contents", output)
    return int(match[1].replace(",", "")) if match else 0


def timed_with_cpu(
    command: list[str], what: str, cluster: dict[str, int], cwd: Path | None = None
) -> tuple[float, str, dict[str, float]]:
    """`timed`, with the CPU seconds the command ("client") and each cluster process used
    meanwhile."""
    before = {name: cpu_seconds([pid]) for name, pid in cluster.items()}
    children = children_cpu()
    seconds, output = timed(command, what, cwd)
    client = children_cpu() - children
    used = {name: cpu_seconds([pid]) - before[name] for name, pid in cluster.items()}
    return seconds, output, {"client": client, **used}


def one_dlweb(
    data: Path, warc_file: Path, warc: dict[str, Any], nodes: int = 1, replicas: int = 1
) -> dict[str, Any]:
    config = data / CONFIG_FILE
    try:
        cluster_up(data, nodes, replicas)
        cluster = cluster_pids(data / RUN_DIR)
        command = dlweb("import", "-c", str(config), str(warc_file))
        what = "dlweb import (it must exit 0 once every record is imported)"
        seconds, output, cpu = timed_with_cpu(command, what, cluster)
        shape = f"{nodes} node{'s' if nodes > 1 else ''}, replica {replicas}"
        print(f"  dlweb import, {shape}: {seconds:.2f} s; {last_line(output)}")
        stored = content_files(config, new_contents(output))
        again, output, cpu_again = timed_with_cpu(command, f"the second {what}", cluster)
        print(f"  dlweb import again: {again:.2f} s; {last_line(output)}")
        return {
            **figures(seconds, warc),
            "cpu_s": cpu,
            "reimport": {**figures(again, warc), "cpu_s": cpu_again},
            "content_files_after_import": stored,
            "content_files_after_reimport": content_files(config, stored),
        }
    finally:
        cluster_down(data)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with work_directory("import", args) as work:
        warc_file = work / "crawl.warc.gz"
        print(f"writing a WARC of {args.records:,} responses and their requests ...")
        warc = make_warc(warc_file, args.records, random.Random(args.seed))
        print(
            f"  {warc['records']:,} records ({warc['duplicates']:,} duplicate payloads),"
            f" {warc['bytes'] / MB:.1f} MB gzipped, {warc['payload_bytes'] / MB:.1f} MB of payloads"
        )
        print("raw disk: the same files written by a plain loop, no cluster ...")
        raw = bench_raw(work, warc_file, warc)
        print(
            f"pywb {PYWB_VERSION} wb-manager add, and dlweb import into a local cluster (1 storage"
            f" node, replica 1), in turns: {args.rounds} rounds, each on a fresh collection or"
            " cluster ..."
        )
        pywb_tries: list[tuple[float, float, float]] = []
        dlweb_tries: list[dict[str, Any]] = []
        spread_tries: list[dict[str, Any]] = []
        replicated_tries: list[dict[str, Any]] = []
        for attempt in range(args.rounds):
            pywb_tries.append(one_pywb(work / f"pywb-{attempt}", warc_file))
            dlweb_tries.append(one_dlweb(work / f"cluster-{attempt}", warc_file, warc))
            # The two runs of 3 nodes in turns first, so that neither always meets a later moment.
            for replicas in (1, 2) if attempt % 2 == 0 else (2, 1):
                tries = spread_tries if replicas == 1 else replicated_tries
                name = f"{'spread' if replicas == 1 else 'replicated'}-{attempt}"
                tries.append(one_dlweb(work / name, warc_file, warc, nodes=3, replicas=replicas))
        seconds, cpu, flushed = min(pywb_tries)
        pywb = {
            "version": PYWB_VERSION,
            "tries": [one[0] for one in pywb_tries],
            "cpu_s": cpu,
            "sync_after_s": flushed,
            **figures(seconds, warc),
        }
        best = min(dlweb_tries, key=lambda one: float(one["seconds"]))
        ours = {**best, "tries": [one["seconds"] for one in dlweb_tries]}
        best_spread = min(spread_tries, key=lambda one: float(one["seconds"]))
        spread = {**best_spread, "tries": [one["seconds"] for one in spread_tries]}
        best_replicated = min(replicated_tries, key=lambda one: float(one["seconds"]))
        replicated = {**best_replicated, "tries": [one["seconds"] for one in replicated_tries]}
    ratio = ours["records_per_s"] / pywb["records_per_s"]
    replica_ratio = replicated["records_per_s"] / spread["records_per_s"]
    return {
        "warc": warc,
        "pywb": pywb,
        "raw": raw,
        "dlweb": ours,
        "spread": spread,
        "replicated": replicated,
        "ratio": ratio,
        "ratio_replica_2_to_1": replica_ratio,
        "ratio_replica_2_to_1_node": replicated["records_per_s"] / ours["records_per_s"],
        "rounds_replica_2_to_1": [
            one / two for one, two in zip(spread["tries"], replicated["tries"], strict=True)
        ],
        "ratio_replica_2_to_pywb": replicated["records_per_s"] / pywb["records_per_s"],
        "ratio_to_raw": ours["records_per_s"] / raw["records_per_s"],
        "target_met": ratio >= 1,
        "replica_target_met": replica_ratio >= 0.8,
        "cores": os.cpu_count(),
    }


def show(report: dict[str, Any]) -> None:
    warc = report["warc"]
    print()
    print(f"Import of one WARC: {warc['records']:,} records, {warc['bytes'] / MB:.1f} MB")
    print(f"  {'':<26}{'seconds':>10}{'records/s':>12}{'MB/s':>9}")
    rows = [
        (f"pywb {report['pywb']['version']} wb-manager add", report["pywb"]),
        ("raw store (no cluster)", report["raw"]),
        ("dlweb import, replica 1", report["dlweb"]),
        ("  3 nodes, replica 1", report["spread"]),
        ("  3 nodes, replica 2", report["replicated"]),
        ("dlweb import again", report["dlweb"]["reimport"]),
    ]
    for label, row in rows:
        print(
            f"  {label:<26}{row['seconds']:>10.2f}{row['records_per_s']:>12,.0f}"
            f"{row['mb_per_s']:>9.1f}"
        )
    ours = report["dlweb"]
    print(
        f"  contents on the cluster: {ours['content_files_after_import']:,} after the import,"
        f" {ours['content_files_after_reimport']:,} after the second"
    )
    print(f"  CPU s of pywb's wb-manager add: {report['pywb']['cpu_s']:.2f}")
    print(
        f"  disk flush right after pywb's add: {report['pywb']['sync_after_s']:.2f} s"
        " (not counted: pywb exits before its files are durable, dlweb once they are)"
    )
    for label, row in (
        ("import", ours),
        ("import again", ours["reimport"]),
        ("import on 3 nodes, replica 1", report["spread"]),
        ("import on 3 nodes, replica 2", report["replicated"]),
    ):
        cpu = row["cpu_s"]
        parts = ", ".join(f"{name} {seconds:.2f}" for name, seconds in cpu.items())
        print(f"  CPU s of the dlweb {label}: {parts} (total {sum(cpu.values()):.2f})")
    print(f"  CPU cores of this machine: {report['cores']}")
    print(f"  ratio (dlweb / pywb, records/s) {report['ratio']:>8.2f}")
    print(f"  ratio (dlweb / raw store)       {report['ratio_to_raw']:>8.2f}")
    print(f"  ratio (replica 2 / replica 1)   {report['ratio_replica_2_to_1']:>8.2f}")
    rounds = ", ".join(f"{ratio:.2f}" for ratio in report["rounds_replica_2_to_1"])
    print(f"    round by round: {rounds}")
    print(f"  ratio (replica 2 / one node)    {report['ratio_replica_2_to_1_node']:>8.2f}")
    print(f"  ratio (replica 2 / pywb)        {report['ratio_replica_2_to_pywb']:>8.2f}")
    print()
    print(f"target: dlweb >= pywb at replica 1: {'PASS' if report['target_met'] else 'MISS'}")
    met = "PASS" if report["replica_target_met"] else "MISS"
    print(f"target: replica 2 (2 copies at insertion) >= 0.8x replica 1, on 3 nodes: {met}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 responses instead of 5,000")
    parser.add_argument("--records", type=int, default=None, help="responses in the WARC")
    parser.add_argument("--rounds", type=positive_int, default=None, help="rounds, best kept (5)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the WARC's contents")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary dir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    args.records = args.records or (1_000 if args.quick else 5_000)
    args.rounds = args.rounds or (2 if args.quick else 5)
    outcome = run_benchmark(args, run, show, "cluster stopped and files removed")
    return outcome if isinstance(outcome, int) else 0


if __name__ == "__main__":
    sys.exit(main())
