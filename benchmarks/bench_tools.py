"""What the benchmarks share: running dlweb and peer commands, their way in and out, and words
for made-up pages."""

import argparse
import compileall
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

MB = 2**20
TICKS = os.sysconf("SC_CLK_TCK")
VOCABULARY = (
    "the of and to in is for on with as by at from archive web page link news story "
    "image video search home about contact privacy terms login help data report "
    "update world local sport science culture review opinion event market city"
)
WORDS = VOCABULARY.split()
ROOT = Path(__file__).resolve().parent.parent


class BenchError(Exception):
    """Something the benchmark needs did not work: the figures would be meaningless."""


def checked(command: list[str], what: str, cwd: Path | None = None) -> str:
    """Run a command, return its output; raise naming `what` with its error output on failure."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise BenchError(f"{what} exited with {done.returncode}:\n{output[-4000:]}")
    return done.stdout


def dlweb(*args: str) -> list[str]:
    """The command line of `dlweb ARGS`, with this interpreter."""
    return [sys.executable, "-m", "dlweb", *args]


def cluster_up(data: Path, nodes: int, replicas: int, *more: str) -> None:
    """Start a local cluster in `data` with `dlweb up` (no proxy port to clash over)."""
    arguments = ["--nodes", str(nodes), "--replicas", str(replicas), *more]
    checked(dlweb("up", "--data", str(data), "--proxy-port", "0", *arguments), "dlweb up")


def cluster_down(data: Path) -> None:
    subprocess.run(dlweb("down", "--data", str(data)), capture_output=True)


def settle_disk() -> None:
    """Write back what earlier work left dirty, so that no phase pays for another's writes
    (the nodes' group commit flushes the whole filesystem)."""
    os.sync()


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM takes the same way out as Ctrl-C, through every cleanup: as SIGINT, which a
    running event loop turns into a cancellation of its task, not an exception in a callback."""
    signal.raise_signal(signal.SIGINT)


Report = dict[str, Any]


def run_benchmark(
    args: argparse.Namespace,
    run: Callable[[argparse.Namespace], Report],
    show: Callable[[Report], None],
    stopped: str,
) -> Report | int:
    """Run, print the figures, how long it all took, and write them to --json: the report; or
    the exit status (1 failed, 130 interrupted, `stopped` saying what was cleaned up)."""
    signal.signal(signal.SIGTERM, interrupt)
    started = time.monotonic()
    try:
        compile_dlweb()
        report = run(args)
    except KeyboardInterrupt:
        print(f"\ninterrupted; {stopped}", file=sys.stderr)
        return 130
    except (BenchError, OSError, RuntimeError) as exc:
        print(f"\nbenchmark failed: {exc}", file=sys.stderr)
        return 1
    show(report)
    print(f"\nfull run took {time.monotonic() - started:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return report


def compile_dlweb() -> None:
    """Byte-compile dlweb's packages, as pip does when it installs a package (the peers' were,
    when pip installed them into their environments): where bytecode is not written on import
    (PYTHONDONTWRITEBYTECODE), each dlweb command would otherwise compile its modules from
    source at start-up, about 0.1 s of every command measured."""
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    for package in found["find"]["include"]:
        folder = ROOT / package.rstrip("*")
        if not compileall.compile_dir(folder, quiet=1):
            raise BenchError(f"dlweb's package {folder.name} does not compile")


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's children that ended so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user and system) the running processes `pids` used so far."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / TICKS


def cluster_pids(run_dir: Path) -> dict[str, int]:
    """The processes `dlweb up` started, by name (master, index, node1...), from their pid files."""
    return {path.stem: int(path.read_text()) for path in sorted(run_dir.glob("*.pid"))}


def stop(process: "subprocess.Popen[bytes]", timeout: float = 10.0) -> None:
    """Stop a process the benchmark started: SIGTERM, then SIGKILL after `timeout` seconds."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def work_directory(name: str, args: argparse.Namespace) -> Iterator[Path]:
    """A new directory for one run of the benchmark `name`, under --dir if it has one: removed
    after the run, unless --keep."""
    work = Path(tempfile.mkdtemp(prefix=f"dlweb-bench-{name}-", dir=getattr(args, "dir", None)))
    try:
        yield work
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
