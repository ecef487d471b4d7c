"""The fault soak for as long as asked (docs/soak.md).

A cluster on 127.0.0.1 (1 master, 1 index node, 4 storage nodes in distinct failure domains,
replica 2) takes inserts while a nemesis kills, pauses, fills and damages its parts at random
moments drawn from a seeded Random; then everything is healed, repaired and read back. It prints
the seed first, every fault as it happens, each capture that did not read back with the faults
around its acknowledgement, and ends with the line `acknowledged A, faults F, lost L, unreadable
U` and the faults by kind. The exit status is 0 when nothing was lost or unreadable, every file
is at its target and no process crashed; 1 otherwise; 130 when interrupted.

Usage: python benchmarks/soak.py --seconds N [--seed S] [--rate R] [--disk-mb M] [--settle S]
       [--dir DIR]
"""

import argparse
import asyncio
import random
import shutil
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tools import compile_dlweb, interrupt  # noqa: E402

from deploy.testing.nemesis import RATE, soak  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, required=True, help="how long faults go on")
    parser.add_argument("--seed", type=int, help="replay a run (default: a new seed, printed)")
    parser.add_argument(
        "--rate", type=float, default=RATE, help=f"captures a second (default {RATE:g})"
    )
    parser.add_argument(
        "--disk-mb",
        type=int,
        default=256,
        help="size of each storage node's tmpfs, in MiB (held in memory as it fills; a fill"
        " fault writes the rest); it must hold the run's data (default 256)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=300.0,
        help="seconds to wait for repairs once every fault is healed (default 300)",
    )
    parser.add_argument("--dir", type=Path, help="where the run's directory goes")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    signal.signal(signal.SIGTERM, interrupt)
    compile_dlweb()
    work = Path(tempfile.mkdtemp(prefix="dlweb-soak-", dir=args.dir))
    print(f"processes' logs in {work} (kept when the run fails)", flush=True)
    passed = False
    try:
        report = asyncio.run(
            soak(
                args.seconds,
                seed,
                work,
                settle=args.settle,
                disk_mb=args.disk_mb,
                rate=args.rate,
                say=lambda line: print(line, flush=True),
            )
        )
        passed = report.passed
    except KeyboardInterrupt:
        return 130
    finally:
        if passed:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
