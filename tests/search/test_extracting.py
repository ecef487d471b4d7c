"""The extracting processes: one a core, started with their model loaded, gone with their parent."""

import signal
import subprocess
import sys
import time
from pathlib import Path

GONE_WITHIN = 10.0  # seconds: a worker looks at its parent every second

# A process holding a pool of two extracting processes, as an indexer does: it prints their
# process ids once they have started and loaded their model, then waits to be killed.
HOLDER = """
import asyncio, multiprocessing, signal
from search.extract_workers import Extractors

async def main():
    extractors = Extractors(2)
    assert await extractors.ready() == 2
    print(*(child.pid for child in multiprocessing.active_children()), flush=True)
    signal.pause()

if __name__ == "__main__":
    asyncio.run(main())
"""


def running(pid: int) -> bool:
    """Whether a process exists and has not ended (a zombie has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_the_workers_of_an_indexer_killed_with_sigkill_end_too(tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        workers = [int(pid) for pid in holder.stdout.readline().split()]
        assert len(workers) >= 2 and all(map(running, workers)), workers
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=20)
    deadline = time.monotonic() + GONE_WITHIN
    while any(map(running, workers)):
        assert time.monotonic() < deadline, f"workers still running: {workers}"
        time.sleep(0.1)
