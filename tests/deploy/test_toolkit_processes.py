"""The test toolkit's processes: one that does not stop in time tells where it is stuck."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.testing.spawn import end, spawn
from deploy.testing.waits import wait_until

_STUCK = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def waiting_for_ever():
    print("ready", flush=True)
    time.sleep(1000)
waiting_for_ever()
"""


def _started(tmp_path: Path, source: str) -> tuple["subprocess.Popen[bytes]", Path]:
    log = tmp_path / "process.log"
    process = spawn([sys.executable, "-c", source], log)
    wait_until(lambda: "ready" in log.read_text(), "the process to start", 20, process=process)
    return process, log


def test_a_process_that_ignores_the_signal_fails_the_stop_with_its_stack(tmp_path: Path) -> None:
    process, log = _started(tmp_path, _STUCK)
    with pytest.raises(TimeoutError) as stopped:
        end(process, signal.SIGTERM, 0.5, log)
    assert "did not exit within 0.5 s of signal 15" in str(stopped.value)
    assert "in waiting_for_ever" in str(stopped.value)
    assert process.poll() is not None


def test_a_process_that_stops_gives_its_exit_code(tmp_path: Path) -> None:
    process, log = _started(tmp_path, 'print("ready", flush=True); import time; time.sleep(1000)')
    assert end(process, signal.SIGTERM, 10, log) == -signal.SIGTERM
