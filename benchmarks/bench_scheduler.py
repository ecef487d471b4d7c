"""The scheduler's store at campaign scale: scheduling decisions/s, find_site_for/s and HITS time.

Builds a SqliteStore of --sites sites (90% registered domains, 10% personal pages on 100 shared
hosts, a few sites whose accept names no host) and --edges random links between them, power-law
in both directions, through the store's own methods; then times scheduling decisions (next_sites
for one site, claim, finish with a small report, set_state with the next crawl), lookups of
random URLs (80% inside a known site, checked against the site that must own them) and a rank
pass (the edges streamed out of the store, HITS, set_ranks). No peer does this job, so the
figures are absolute.
Run: python benchmarks/bench_scheduler.py [--sites 100000] [--edges 1000000] [--quick]
"""

from __future__ import annotations

import argparse
import random
import re
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_tools import interrupt, work_directory  # noqa: E402
from crawler.scheduler.guess import guess_site  # noqa: E402
from crawler.scheduler.ranks import hits  # noqa: E402
from crawler.scheduler.store import SqliteStore  # noqa: E402

SHARED_HOSTS = 100
PERSONAL_SHARE = 0.1
HOSTLESS_SITES = 10
TLDS = ("com", "org", "net", "fr", "de", "co.uk", "com.br")
INSIDE_SHARE = 0.8  # of the URLs looked up
REPORT = {
    "pages": 40,
    "new_contents": 4,
    "known_contents": 36,
    "content_types": {"text/html": 40},
    "text": {"documents": 40, "words": 12_000, "keywords": {"museum": 9}},
    "external_links": [],
}


def site_urls(count: int) -> list[str]:
    """A URL inside each future site: domains, then personal pages, then hostless sites."""
    personal = int(count * PERSONAL_SHARE)
    domains = count - personal - HOSTLESS_SITES
    urls = [f"http://www.site{n}.{TLDS[n % len(TLDS)]}/" for n in range(domains)]
    urls += [f"http://perso.host{n % SHARED_HOSTS}.fr/user{n}/" for n in range(personal)]
    return urls + [f"http://wiki{n}.test/" for n in range(HOSTLESS_SITES)]


def build_sites(store: SqliteStore, urls: list[str], rng: random.Random) -> list[int]:
    ids = [
        store.add_site(*guess_site(url), priority=rng.random()).id for url in urls[:-HOSTLESS_SITES]
    ]
    for url in urls[-HOSTLESS_SITES:]:
        ids.append(store.add_site(url, "re:^https?://" + re.escape(url[7:-1])).id)
    return ids


def shares(weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def power_law_edges(ids: list[int], count: int, seed: int) -> dict[int, dict[int, int]]:
    """About `count` links, out-degrees and in-degrees both power-law, by source."""
    rng = np.random.default_rng(seed)
    nodes = np.array(ids)
    ranks = np.arange(1, len(ids) + 1, dtype=np.float64)
    wanted = int(count * 1.15)  # duplicates and self-links go
    sources = rng.choice(len(ids), size=wanted, p=shares(ranks**-0.6))
    targets = rng.choice(len(ids), size=wanted, p=shares(ranks**-0.9))
    # Popular sources and popular targets are different sites.
    sources = rng.permutation(len(ids))[sources]
    links = rng.geometric(0.3, size=wanted)
    graph: dict[int, dict[int, int]] = defaultdict(dict)
    kept = 0
    for src, dst, n in zip(
        nodes[sources].tolist(), nodes[targets].tolist(), links.tolist(), strict=True
    ):
        if src != dst and dst not in graph[src]:
            graph[src][dst] = n
            kept += 1
            if kept == count:
                break
    return graph


def lookups(
    urls: list[str], ids: list[int], count: int, rng: random.Random
) -> list[tuple[str, int | None]]:
    """URLs to look up, with the site that owns them (None: no site)."""
    found: list[tuple[str, int | None]] = []
    for _ in range(count):
        if rng.random() < INSIDE_SHARE:
            n = rng.randrange(len(ids))
            found.append((f"{urls[n]}page{rng.randrange(1000)}.html", ids[n]))
        else:
            found.append((f"http://www.unknown{rng.randrange(10**9)}.example.net/a", None))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--decisions", type=int, default=5_000)
    parser.add_argument("--lookups", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="20,000 sites, 200,000 edges")
    parser.add_argument("--dir", type=Path, help="where the temporary directory goes")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.quick:
        args.sites, args.edges, args.decisions, args.lookups = 20_000, 200_000, 2_000, 20_000
    if args.sites < 10 * HOSTLESS_SITES:
        parser.error(f"--sites must be at least {10 * HOSTLESS_SITES}")
    signal.signal(signal.SIGTERM, interrupt)
    with work_directory("scheduler", args) as work:
        try:
            run(args, work / "scheduler.db")
        except KeyboardInterrupt:
            return 130
    return 0


def run(args: argparse.Namespace, path: Path) -> None:
    rng = random.Random(args.seed)
    urls = site_urls(args.sites)
    rows: list[tuple[str, str, str]] = []

    store = SqliteStore(path)
    started = time.perf_counter()
    ids = build_sites(store, urls, rng)
    seconds = time.perf_counter() - started
    rows.append(
        ("add_site", f"{len(ids):,} sites in {seconds:.1f} s", f"{len(ids) / seconds:,.0f} /s")
    )

    graph = power_law_edges(ids, args.edges, args.seed)
    started = time.perf_counter()
    for src, targets in graph.items():
        store.add_edges(src, targets, 1.0)
    seconds = time.perf_counter() - started
    edges = sum(len(targets) for targets in graph.values())
    rows.append(
        (
            "add_edges",
            f"{edges:,} edges of {len(graph):,} sites in {seconds:.1f} s",
            f"{len(graph) / seconds:,.0f} calls/s",
        )
    )
    store.close()

    started = time.perf_counter()
    store = SqliteStore(path)
    seconds = time.perf_counter() - started
    rows.append(("open", f"{args.sites:,} sites indexed again", f"{seconds:.2f} s"))

    now = 1_000.0
    started = time.perf_counter()
    for number in range(args.decisions):
        [site] = store.next_sites(now, 1)
        if not store.claim(site.id, f"agent-{number % 64}", now):
            raise SystemExit(f"site {site.id} could not be claimed")
        store.finish(site.id, REPORT, f"/w/{site.id}.signatures", f"/w/{site.id}.chunks", now)
        store.set_state(site.id, "idle", next_crawl=now + 86_400, relevance=0.75, change_rate=0.1)
        now += 0.01
    seconds = time.perf_counter() - started
    rows.append(
        (
            "decisions",
            f"{args.decisions:,} of next_sites+claim+finish+set_state",
            f"{args.decisions / seconds:,.0f} /s ({1000 * seconds / args.decisions:.2f} ms)",
        )
    )

    started = time.perf_counter()
    for _ in range(args.decisions):
        store.next_sites(now, 8)
    seconds = time.perf_counter() - started
    rows.append(
        ("next_sites", "8 of the due sites, nothing taken", f"{args.decisions / seconds:,.0f} /s")
    )

    queries = lookups(urls, ids, args.lookups, rng)
    started = time.perf_counter()
    owners = [store.find_site_for(url) for url, _ in queries]
    seconds = time.perf_counter() - started
    wrong = sum(
        (owner.id if owner else None) != expected
        for owner, (_, expected) in zip(owners, queries, strict=True)
    )
    if wrong:
        raise SystemExit(f"find_site_for gave {wrong} wrong sites of {len(queries):,}")
    rows.append(
        (
            "find_site_for",
            f"{len(queries):,} URLs, {INSIDE_SHARE:.0%} inside a site",
            f"{len(queries) / seconds:,.0f} /s",
        )
    )

    started = time.perf_counter()
    listed = list(store.edges())
    read = time.perf_counter() - started
    started = time.perf_counter()
    hubs, authorities = hits(listed)
    ranked = time.perf_counter() - started
    started = time.perf_counter()
    store.set_ranks(hubs, authorities)
    saved = time.perf_counter() - started
    rows.append(("edges()", f"{len(listed):,} edges streamed out", f"{read:.2f} s"))
    rows.append(("hits", f"{len(hubs):,} sites, {len(listed):,} edges", f"{ranked:.2f} s"))
    rows.append(("set_ranks", f"{len(hubs):,} sites", f"{saved:.2f} s"))
    store.close()

    print(
        f"SqliteStore in {path.parent} ({path.stat().st_size / 2**20:,.0f} MB); every write is a"
        " transaction synced to disk before it returns"
    )
    width = max(len(row[1]) for row in rows)
    for name, what, figure in rows:
        print(f"{name:<14}{what:<{width + 2}}{figure:>22}")


if __name__ == "__main__":
    raise SystemExit(main())
