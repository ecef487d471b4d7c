"""Background processes of a local cluster: detached starts, pid files, logs, and stops."""

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from archive.atomic import atomic_write

RUN_DIR = "run"
LOG_DIR = "logs"


def pid_file(data: Path, name: str) -> Path:
    return data / RUN_DIR / f"{name}.pid"


def log_file(data: Path, name: str) -> Path:
    return data / LOG_DIR / f"{name}.log"


def is_ours(pid: int, data: Path) -> bool:
    """Whether pid runs and is one of this cluster's processes, not a recycled number."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return False
        try:  # no /proc on this system: trust the number
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    except OSError:
        return False
    if not cmdline:
        # Empty: a zombie, or a process we just started, between fork and exec.
        return not _is_zombie(pid)
    # Every process we start names the resolved directory.
    return str(data.resolve()).encode() in cmdline


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def read_pid(data: Path, name: str) -> int | None:
    try:
        text = pid_file(data, name).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def running_pid(data: Path, name: str) -> int | None:
    """The pid of `name` if its pid file names a live process of this cluster."""
    pid = read_pid(data, name)
    return pid if pid is not None and is_ours(pid, data) else None


def start_in_session(
    command: list[str], output: BinaryIO, cwd: Path | None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `command` in a session of its own, so that a Ctrl-C in the terminal does not reach
    it, with no input and its output and errors to `output`."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,
        env=env,
    )


def spawn(data: Path, name: str, command: list[str]) -> int:
    """Start `command` in its own session, output to logs/<name>.log, pid in run/<name>.pid."""
    log_path = log_file(data, name)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    pid_file(data, name).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {name}\n".encode())
        log.flush()
        process = start_in_session(command, log, data, {**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        atomic_write(pid_file(data, name), f"{process.pid}\n".encode())
    except BaseException:
        # Interrupted before anything recorded it: nobody could stop it later.
        _signal(process.pid, signal.SIGKILL)
        raise
    return process.pid


def _signal(pid: int, sig: int) -> None:
    """Signal the process group the process leads (it was started in a session of its own)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    except PermissionError:
        pass


def _wait_gone(pids: list[int], data: Path, timeout: float) -> list[int]:
    """Wait until none of pids runs, at most `timeout` seconds; the ones still running."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if is_ours(pid, data)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def stop(data: Path, pids: dict[str, int], timeout: float) -> list[str]:
    """SIGTERM each named process, SIGKILL what remains after `timeout` seconds, remove their pid
    files. Returns the names that were still running."""
    running = {name: pid for name, pid in pids.items() if is_ours(pid, data)}
    for pid in running.values():
        _signal(pid, signal.SIGTERM)
    left = _wait_gone(list(running.values()), data, timeout)
    for pid in left:
        _signal(pid, signal.SIGKILL)
    _wait_gone(left, data, 10.0)
    for name in pids:
        pid_file(data, name).unlink(missing_ok=True)
    return list(running)


def tail(data: Path, name: str, lines: int = 15) -> str:
    """The last lines of a process's log, for an error message."""
    try:
        text = log_file(data, name).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@contextlib.contextmanager
def locked(data: Path) -> Iterator[None]:
    """Hold the cluster directory's lock, so two `dlweb up` never start the same processes."""
    path = data / RUN_DIR / "lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
