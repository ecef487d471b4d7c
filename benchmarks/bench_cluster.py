"""Cluster benchmark: insertion through an index node, replica restore after a node loss, lookups.

Starts a local cluster with `dlweb up` (a master, one index node, 3 storage nodes, replica 2) in
a temporary directory and measures, side by side with a peer doing the same work in the plainest
way in the same run:

1. insertion of 4 KB captures through the index node (ClusterClient.insert), in captures/s and
   MB/s, until every content is at 2 replicas; the peer PUTs the same number of contents straight
   to two storage nodes each (what replica 2 costs with no index, no dedup, no structure files);
2. the time to restore the replicas of N files after a node is killed (kill -9), counted from
   the moment the master declares it down; the peer copies the same files by hand (GET from a
   holder, PUT to another node) with as many requests in flight as the client's uploads;
3. lookups per second by multicast (LookupClient) and by the master (GET /locate).

Usage: python benchmarks/bench_cluster.py [--quick] [--captures N] [--restore N] [--json FILE]
"""

import argparse
import asyncio
import hashlib
import json
import os
import random
import signal
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from bench_tools import cluster_down, cluster_up, settle_disk, work_directory

from archive.cluster import UPLOADS_IN_FLIGHT, ClusterClient, NewCapture
from archive.config import ClusterConfig, load_config
from archive.multicast import LookupClient

SIZE = 4096
HEADER = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
CONCURRENCY = 16
# The peers get as many requests in flight as the cluster client uses for its uploads.
PEER_CONCURRENCY = UPLOADS_IN_FLIGHT


def get_status(config: ClusterConfig) -> dict[str, Any]:
    assert config.master is not None
    with urllib.request.urlopen(f"{config.master}/status", timeout=5) as answer:
        result: dict[str, Any] = json.load(answer)
        return result


def wait_for(
    config: ClusterConfig, condition: Callable[[dict[str, Any]], bool], timeout: float = 600
) -> float:
    """Poll the master until condition holds; returns the time it happened."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition(get_status(config)):
            return time.monotonic()
        time.sleep(0.1)
    raise RuntimeError("the cluster did not reach the awaited state")


def corpus(count: int, rng: random.Random) -> tuple[list[NewCapture], dict[str, bytes]]:
    header = hashlib.sha256(HEADER).hexdigest()
    bodies = {header: HEADER}
    captures = []
    for i in range(count):
        data = rng.randbytes(SIZE)
        name = hashlib.sha256(data).hexdigest()
        bodies[name] = data
        captures.append(
            NewCapture(
                f"http://bench.example/{i // 4}",
                1_700_000_000_000_000 + i * 1000,
                name,
                header,
                200,
                SIZE,
                len(HEADER),
            )
        )
    return captures, bodies


async def gather_bounded(jobs: Sequence[Callable[[], Awaitable[None]]], limit: int) -> None:
    gate = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            await job()

    await asyncio.gather(*(run(job) for job in jobs))


async def put_all(config: ClusterConfig, jobs: list[tuple[str, bytes]]) -> float:
    """PUT each (node, bytes), as many at a time as the cluster client uploads; seconds taken."""
    auth = {"Authorization": f"Bearer {config.write_token}"}
    async with aiohttp.ClientSession() as session:

        def job(node: str, data: bytes) -> Callable[[], Awaitable[None]]:
            async def put() -> None:
                name = hashlib.sha256(data).hexdigest()
                async with session.put(f"{node}/content/{name}", data=data, headers=auth) as r:
                    assert r.status in (200, 201), await r.text()

            return put

        started = time.monotonic()
        await gather_bounded([job(node, data) for node, data in jobs], PEER_CONCURRENCY)
        return time.monotonic() - started


async def manual_copy(config: ClusterConfig, pairs: list[tuple[str, str, str]]) -> float:
    """The peer of repair: GET each file from a holder and PUT it to another node; seconds."""
    auth = {"Authorization": f"Bearer {config.write_token}"}
    async with aiohttp.ClientSession() as session:

        def job(name: str, src: str, dst: str) -> Callable[[], Awaitable[None]]:
            async def copy() -> None:
                async with session.get(f"{src}/content/{name}") as r:
                    data = await r.read()
                if hashlib.sha256(data).hexdigest() != name:
                    raise RuntimeError(f"{src} served a wrong {name}")
                async with session.put(f"{dst}/content/{name}", data=data, headers=auth) as r:
                    assert r.status in (200, 201)

            return copy

        started = time.monotonic()
        await gather_bounded([job(*pair) for pair in pairs], PEER_CONCURRENCY)
        return time.monotonic() - started


async def per_second(
    call: Callable[[str], Awaitable[None]], names: list[str], parallel: int, seconds: float
) -> float:
    """How many calls per second `parallel` workers complete in `seconds`."""
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            await call(names[done % len(names)])
            done += 1

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(parallel)))
    return done / (time.monotonic() - started)


async def lookups(config: ClusterConfig, names: list[str], seconds: float) -> dict[str, float]:
    """Lookups per second, one at a time and 16 at a time, by multicast and by the master."""
    assert config.master is not None
    results: dict[str, float] = {}
    client = LookupClient(config.multicast, config.secret)
    await client.start()
    async with aiohttp.ClientSession() as session:

        async def by_multicast(name: str) -> None:
            assert await client.locate("content", name, first=True)

        async def by_master(name: str) -> None:
            async with session.get(f"{config.master}/locate/content/{name}") as r:
                assert (await r.json())["nodes"]

        for label, locate in (("multicast", by_multicast), ("master", by_master)):
            for parallel in (1, CONCURRENCY):
                rate = await per_second(locate, names, parallel, seconds)
                results[f"{label} x{parallel}"] = rate
    await client.close()
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    with work_directory("cluster", args) as work:
        data = work / "cluster"
        report: dict[str, Any] = {"captures": args.captures, "restore_files": args.restore}
        try:
            cluster_up(data, 3, 2, "--grace", "2")
            config = load_config(data / "dlweb.yaml")
            nodes = sorted(n["address"] for n in get_status(config)["nodes"])

            captures, bodies = corpus(args.captures, rng)
            print(f"inserting {len(captures):,} captures of 4 KB through one index node ...")

            async def insert() -> float:
                async with ClusterClient(config) as client:
                    started = time.monotonic()
                    await client.insert(captures, bodies.__getitem__)
                    return time.monotonic() - started

            settle_disk()
            inserted = asyncio.run(insert())
            started = time.monotonic() - inserted
            settled = wait_for(
                config,
                lambda s: (
                    s["files"]["content"] >= len(bodies)
                    and s["below_target"] == 0
                    and s["repairs"]["running"] == 0
                ),
            )
            replicated = settled - started
            peer_jobs = []
            for i in range(args.captures):
                body = rng.randbytes(SIZE)
                peer_jobs += [(nodes[i % 3], body), (nodes[(i + 1) % 3], body)]
            settle_disk()
            peer = asyncio.run(put_all(config, peer_jobs))
            megabytes = args.captures * SIZE / 2**20
            report["insert"] = {
                "seconds_acknowledged": inserted,
                "seconds_at_replica_2": replicated,
                "captures_per_s": args.captures / inserted,
                "captures_per_s_at_replica_2": args.captures / replicated,
                "mb_per_s": megabytes / inserted,
                "peer_direct_puts_per_s": args.captures / peer,
                "ratio": (args.captures / replicated) / (args.captures / peer),
            }

            extra, extra_bodies = corpus(args.restore, random.Random(args.seed + 1))
            extra = [NewCapture(**{**c.to_json(), "url": c.url + "-r"}) for c in extra]
            print(f"storing {args.restore:,} more files for the restore test ...")

            async def insert_more() -> None:
                async with ClusterClient(config) as client:
                    await client.insert(extra, extra_bodies.__getitem__)

            asyncio.run(insert_more())
            wait_for(config, lambda s: s["below_target"] == 0 and s["repairs"]["running"] == 0)
            state = json.loads((data / "cluster.json").read_text())
            victim = "node3"
            held = next(n for n in get_status(config)["nodes"] if n["id"] == victim)["files"]
            print(f"killing {victim} ({held:,} files) ...")
            settle_disk()
            os.kill(state["processes"][victim]["pid"], signal.SIGKILL)
            down = wait_for(
                config,
                lambda s: next(n for n in s["nodes"] if n["id"] == victim)["state"] == "down",
            )
            restored = wait_for(
                config,
                lambda s: s["below_target"] == 0 and s["repairs"]["running"] == 0,
            )
            status = get_status(config)
            copied = status["repairs"]["copied"]
            survivors = [n["address"] for n in status["nodes"] if n["id"] != victim]
            peer_files = [rng.randbytes(SIZE) for _ in range(held)]
            asyncio.run(put_all(config, [(survivors[0], body) for body in peer_files]))
            pairs = [
                (hashlib.sha256(d).hexdigest(), survivors[0], survivors[1]) for d in peer_files
            ]
            settle_disk()
            peer_copy = asyncio.run(manual_copy(config, pairs))
            report["restore"] = {
                "files_on_lost_node": held,
                "seconds_after_down": restored - down,
                "files_per_s": held / max(restored - down, 1e-9),
                "copies_made_in_all": copied,
                "peer_manual_copy_seconds": peer_copy,
                "ratio": peer_copy / max(restored - down, 1e-9),
            }
            names = [c.content for c in captures[:2000]]
            report["lookups_per_s"] = asyncio.run(lookups(config, names, args.lookup_seconds))
        finally:
            cluster_down(data)
    return report


def show(report: dict[str, Any]) -> None:
    insert = report["insert"]
    restore = report["restore"]
    print()
    print("Insertion of 4 KB captures through one index node, 3 nodes, replica 2")
    print(
        f"  acknowledged            {insert['captures_per_s']:>10,.0f} captures/s"
        f"  {insert['mb_per_s']:>7.1f} MB/s"
    )
    print(f"  at replica 2            {insert['captures_per_s_at_replica_2']:>10,.0f} captures/s")
    print(f"  peer: direct PUT x2     {insert['peer_direct_puts_per_s']:>10,.0f} contents/s")
    print(f"  ratio (cluster / peer)  {insert['ratio']:>10.2f}")
    print()
    print("Restore after a node loss (kill -9), from the moment it is declared down")
    print(f"  files on the lost node  {restore['files_on_lost_node']:>10,}")
    print(
        f"  restored in             {restore['seconds_after_down']:>10.2f} s"
        f"  ({restore['files_per_s']:,.0f} files/s)"
    )
    print(f"  peer: GET+PUT by hand   {restore['peer_manual_copy_seconds']:>10.2f} s")
    print(f"  ratio (peer / cluster)  {restore['ratio']:>10.2f}")
    print()
    print("Lookups per second")
    lookups = report["lookups_per_s"]
    for label, rate in lookups.items():
        print(f"  {label:<22}  {rate:>10,.0f}/s")
    print(f"  multicast / master x1   {lookups['multicast x1'] / lookups['master x1']:>10.2f}")
    print()
    per_s = insert["captures_per_s_at_replica_2"]
    rows = [
        ("4 KB captures at replica 2 >= 1,000/s", f"{per_s:,.0f}/s", per_s >= 1000),
        (
            f"{restore['files_on_lost_node']:,} files restored < 60 s",
            f"{restore['seconds_after_down']:.1f} s",
            restore["seconds_after_down"] < 60,
        ),
    ]
    print(f"{'target':<40}{'measured':<16}result")
    for target, measured, passed in rows:
        print(f"{target:<40}{measured:<16}{'PASS' if passed else 'MISS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, under a minute")
    parser.add_argument("--captures", type=int, default=None, help="captures to insert (10,000)")
    parser.add_argument("--restore", type=int, default=None, help="extra files for the restore")
    parser.add_argument("--lookup-seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the cluster directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    args.captures = args.captures or (2_000 if args.quick else 10_000)
    args.restore = args.restore or (2_000 if args.quick else 10_000)
    args.lookup_seconds = args.lookup_seconds or (1.0 if args.quick else 3.0)
    started = time.monotonic()
    report = run(args)
    show(report)
    print(f"\nfull run took {time.monotonic() - started:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
