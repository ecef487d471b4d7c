"""Recognising the cluster's own processes by their pid, whatever moment they are at."""

import subprocess
import sys
import time
from pathlib import Path

from deploy.processes import is_ours


def test_a_process_of_the_cluster_is_ours_from_its_start_to_its_end(tmp_path: Path):
    data = tmp_path / "cluster"
    data.mkdir()
    command = [sys.executable, "-c", "import sys, time; time.sleep(30)", str(data)]
    process = subprocess.Popen(command, start_new_session=True)
    try:
        # From the very first moment (between fork and exec the command line is empty).
        assert is_ours(process.pid, data)
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{process.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the process never showed its command line"
        assert is_ours(process.pid, data)
        assert not is_ours(process.pid, tmp_path / "another")
    finally:
        process.kill()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline, "the killed process never became a zombie"
    assert not is_ours(process.pid, data)  # dead, not yet waited for: a zombie
    process.wait()
    assert not is_ours(process.pid, data)
