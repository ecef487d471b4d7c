"""NameFilter against pybloom-live: adds/s, lookups/s and false-positive rate at capacity.

Both filters are sized for n names at the same error rate, take n adds, then n lookups of which
half are names that were added and half are names that were not; the absent half gives the
measured false-positive rate. The work is cut into chunks that the two filters take in turn, so
a busy machine slows both alike and the ratio stays meaningful.
Run: python benchmarks/bench_bloom.py [--n 1000000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pybloom_live import BloomFilter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archive.bloom import NameFilter  # noqa: E402

CHUNK = 20_000


@dataclass
class Contender:
    label: str
    add: Callable[[str], object]
    holds: Callable[[str], bool]
    add_seconds: float = 0.0
    lookup_seconds: float = 0.0
    misses: int = 0
    false_positives: int = 0

    def time_adds(self, names: list[str]) -> None:
        add = self.add
        started = time.perf_counter()
        for name in names:
            add(name)
        self.add_seconds += time.perf_counter() - started

    def time_lookups(self, names: list[str]) -> None:
        """Look up names alternating present, absent; tally misses and false positives."""
        holds = self.holds
        started = time.perf_counter()
        hits = [holds(name) for name in names]
        self.lookup_seconds += time.perf_counter() - started
        self.misses += hits[0::2].count(False)
        self.false_positives += hits[1::2].count(True)


def random_names(count: int, rng: random.Random) -> list[str]:
    return [rng.randbytes(32).hex() for _ in range(count)]


def in_turns(contenders: list[Contender], work: list[str], run: Callable[..., None]) -> None:
    """Feed `work` chunk by chunk to every contender, swapping who goes first at each chunk."""
    for number, start in enumerate(range(0, len(work), CHUNK)):
        chunk = work[start : start + CHUNK]
        for contender in contenders[::-1] if number % 2 else contenders:
            run(contender, chunk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="names added (and looked up)")
    parser.add_argument("--error-rate", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.n < 2:
        parser.error("--n must be at least 2")

    rng = random.Random(args.seed)
    present = random_names(args.n, rng)
    absent = random_names(args.n // 2, rng)
    lookups = [name for pair in zip(present, absent, strict=False) for name in pair]

    ours = NameFilter(args.n, args.error_rate)
    theirs = BloomFilter(args.n, args.error_rate)
    print(f"n={args.n} error_rate={args.error_rate}")
    print(f"NameFilter:   m={ours.bit_count} bits, k={ours.index_count}")
    print(f"pybloom-live: m={theirs.num_bits} bits, k={theirs.num_slices}")
    name_filter = Contender("NameFilter", ours.add, ours.might_hold)
    pybloom = Contender("pybloom-live", theirs.add, theirs.__contains__)
    contenders = [name_filter, pybloom]
    in_turns(contenders, present, Contender.time_adds)
    in_turns(contenders, lookups, Contender.time_lookups)

    print(f"{'':12}{'NameFilter':>14}{'pybloom-live':>14}{'ratio':>8}")
    for label, ours_rate, theirs_rate in (
        ("adds/s", len(present) / name_filter.add_seconds, len(present) / pybloom.add_seconds),
        (
            "lookups/s",
            len(lookups) / name_filter.lookup_seconds,
            len(lookups) / pybloom.lookup_seconds,
        ),
    ):
        ratio = ours_rate / theirs_rate
        print(f"{label:12}{ours_rate:>14,.0f}{theirs_rate:>14,.0f}{ratio:>8.2f}")
    print(
        f"{'false pos.':12}{name_filter.false_positives / len(absent):>14.5f}"
        f"{pybloom.false_positives / len(absent):>14.5f}"
    )
    broken = [contender.label for contender in contenders if contender.misses]
    if broken:
        raise SystemExit(f"missed names that were added (false negatives): {', '.join(broken)}")


if __name__ == "__main__":
    main()
