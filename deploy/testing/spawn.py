"""Processes a test run starts, that die with it, and the things started on entry and stopped on
exit.

Each process started by `spawn` is known to a small watcher process that kills whatever is left
once the process that started it is gone, however it ended, so a killed test run leaves no
encoder behind. Each runs with Python's faulthandler on: one that `end` finds stuck is sent
SIGABRT, which writes the stack of each of its threads into its log, and the log ends the error.
"""

import abc
import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Self

from deploy.processes import start_in_session

# Runs in its own process: reads "+ PID START" and "- PID" lines, and once its input ends (the
# test process exited or died) kills every process still listed, if it is still the same one.
_WATCHER = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
live = {}
for line in sys.stdin:
    verb, pid, *start = line.split()
    if verb == "+":
        live[pid] = start[0]
    else:
        live.pop(pid, None)
for pid, start in live.items():
    try:
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[19] == start:
                os.kill(int(pid), signal.SIGKILL)
    except (OSError, IndexError):
        pass
"""

_FAULTHANDLER = {**os.environ, "PYTHONFAULTHANDLER": "1"}

_watcher: subprocess.Popen[bytes] | None = None
_watcher_lock = threading.Lock()


def _tell_watcher(line: str) -> None:
    global _watcher
    with _watcher_lock:
        if _watcher is None or _watcher.poll() is not None:
            _watcher = subprocess.Popen(
                [sys.executable, "-c", _WATCHER], stdin=subprocess.PIPE, start_new_session=True
            )
        assert _watcher.stdin is not None
        _watcher.stdin.write(line.encode() + b"\n")
        _watcher.stdin.flush()


def spawn(command: list[str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start `command` with its output in `log`, in a session of its own (a Ctrl-C in the
    terminal reaches the tests, which stop it), known to the watcher."""
    with open(log, "ab") as output:
        process = start_in_session(command, output, cwd, _FAULTHANDLER)
    with contextlib.suppress(OSError, IndexError):
        start = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        _tell_watcher(f"+ {process.pid} {start}")
    return process


def end(
    process: subprocess.Popen[bytes],
    sig: int = signal.SIGTERM,
    timeout: float = 5.0,
    log: Path | None = None,
) -> int:
    """Stop a process started by `spawn` with `sig` and reap it; give its exit code. One still
    running after `timeout` s is killed; when its `log` is given, that is a failure: its threads'
    stacks are written to the log first, and the TimeoutError raised ends with the log's end."""
    try:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            if log is None:
                process.kill()
                return process.wait()
            process.send_signal(signal.SIGABRT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            raise TimeoutError(
                f"{process.args!r} did not exit within {timeout:g} s of signal {sig}; its log"
                " ends:\n" + tail(log, 20_000)
            ) from None
    finally:
        _tell_watcher(f"- {process.pid}")


def tail(path: Path, size: int = 4000) -> str:
    """The last `size` characters of a log; nothing if it cannot be read."""
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""


class Started(abc.ABC):
    """Something used as a context manager: started on entry, closed on exit."""

    @abc.abstractmethod
    def start(self) -> None:
        """Start it; return once it answers."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything it started."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
