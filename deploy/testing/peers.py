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
from collections.abc import Callable, Sequence
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


def cached_build(name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name` of the peers' cache, made by `build` on first use.

    A folder is built in a directory of its own (a virtual environment cannot be moved: its
    scripts name their interpreter by absolute path), under a lock that makes parallel workers
    (pytest-xdist's, or two runs) wait for the one building, and published by atomically
    replacing a symbolic link: the name only ever points to a complete folder.
    """
    cache = _cache_dir()
    done = cache / name
    if (done / COMPLETE).exists():
        return done
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f".{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (done / COMPLETE).exists():  # another process built it while this one waited
            return done
        folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=cache))
        try:
            build(folder)
            (folder / COMPLETE).write_text(name + "\n")
            link = cache / f".{folder.name}.link"
            link.symlink_to(folder.name)
            os.replace(link, done)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return done


def peer_venv(name: str, requirements: Sequence[str]) -> Path:
    """The `bin` directory of a cached virtual environment holding `requirements`, built on
    first use (`cached_build`)."""

    def build(folder: Path) -> None:
        run([sys.executable, "-m", "venv", str(folder)])
        run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", *requirements])

    return cached_build(name, build) / "bin"


def wacz_validate(path: Path) -> subprocess.CompletedProcess[str]:
    """py-wacz's `wacz validate -f PATH`, the reference check of a WACZ package, run from a
    virtual environment of its own (its frictionless pins stay out of dlweb's and pywb's)."""
    validator = peer_venv(WACZ_VENV_NAME, WACZ_REQUIREMENTS) / "wacz"
    return subprocess.run(
        [str(validator), "validate", "-f", str(path)], capture_output=True, text=True, timeout=120
    )
