"""Run the `dlweb` command as an admin would, and look at the processes it started."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

COMMAND_TIMEOUT = 120


def dlweb(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`dlweb ARGS` in a subprocess (the same entry point as the installed script)."""
    result = subprocess.run(
        [sys.executable, "-m", "dlweb", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    if check:
        assert result.returncode == 0, f"dlweb {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def dlweb_json(*args: str) -> Any:
    return json.loads(dlweb(*args, "--json").stdout)


def recorded_pids(data: Path) -> dict[str, int]:
    """The pids cluster.json records, by process name."""
    state = json.loads((data / "cluster.json").read_text())
    return {name: proc["pid"] for name, proc in state["processes"].items() if proc["pid"]}


def running(pid: int) -> bool:
    """Whether pid is a live process (a zombie has an empty command line)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() != b""
    except OSError:
        return False


def processes_naming(path: Path) -> list[int]:
    """Live processes whose command line names path: what a cluster in path left running."""
    needle = str(path.resolve()).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error a failed command printed, checked to be one line without a traceback."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
