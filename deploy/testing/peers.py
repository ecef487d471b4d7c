"""The peers' environments: other tools run from virtual environments of their own, built once
and cached (in `$DLWEB_PEER_CACHE`, else `~/.cache/dlweb-peers/`).

A peer pins what dlweb cannot share (pywb pins werkzeug 2.2.3, where mitmproxy, a dlweb
dependency, needs werkzeug 3), so each lives apart: `peer_venv` builds one from its
requirements, and py-wacz's validator, the reference check of WACZ packages, gets one here.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

WACZ_REQUIREMENTS = ("wacz==0.6.0",)
WACZ_VENV_NAME = f"wacz-{hashlib.sha256(' '.join(WACZ_REQUIREMENTS).encode()).hexdigest()[:8]}"
COMPLETE = "dlweb-peer-complete"


def _cache_dir() -> Path:
    root = os.environ.get("DLWEB_PEER_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "dlweb-peers"


def run(command: list[str], cwd: Path | None = None) -> None:
    """Run a command; on failure, raise with its output, which says what went wrong."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited with {done.returncode}:\n{done.stderr or done.stdout}"
        )


def peer_venv(name: str, requirements: Sequence[str]) -> Path:
    """The `bin` directory of a cached virtual environment holding `requirements`, built on
    first use.

    A virtual environment cannot be moved (its scripts name their interpreter by absolute path),
    so it is built in a directory of its own and published by atomically replacing a symbolic
    link: the name only ever points to a complete environment.
    """
    cache = _cache_dir()
    venv = cache / name
    if (venv / COMPLETE).exists():
        return venv / "bin"
    cache.mkdir(parents=True, exist_ok=True)
    # One process builds at a time (pytest-xdist's workers, or two runs): the others wait for it
    # and then find the environment complete, instead of each installing it again.
    with (cache / f".{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / COMPLETE).exists():  # another process built it while this one waited
            return venv / "bin"
        build = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=cache))
        try:
            run([sys.executable, "-m", "venv", str(build)])
            run([str(build / "bin" / "python"), "-m", "pip", "install", "-q", *requirements])
            (build / COMPLETE).write_text(" ".join(requirements) + "\n")
            if (venv / COMPLETE).exists():  # another process finished first
                shutil.rmtree(build)
            else:
                link = cache / f".{build.name}.link"
                link.symlink_to(build.name)
                os.replace(link, venv)
        except BaseException:
            shutil.rmtree(build, ignore_errors=True)
            raise
    return venv / "bin"


def wacz_validate(path: Path) -> subprocess.CompletedProcess[str]:
    """py-wacz's `wacz validate -f PATH`, the reference check of a WACZ package, run from a
    virtual environment of its own (its frictionless pins stay out of dlweb's and pywb's)."""
    validator = peer_venv(WACZ_VENV_NAME, WACZ_REQUIREMENTS) / "wacz"
    return subprocess.run(
        [str(validator), "validate", "-f", str(path)], capture_output=True, text=True, timeout=120
    )
