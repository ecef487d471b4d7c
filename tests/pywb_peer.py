"""pywb as a real peer: its own virtual environment, a running `wayback` server, raw replay.

pywb pins exact, old releases of its dependencies (werkzeug 2.2.3, where mitmproxy, a dlweb
dependency, needs werkzeug 3), so it lives in a virtual environment of its own, built once and
cached. py-wacz's validator, the reference check of WACZ packages, gets one of its own, built
the same way.
"""

import fcntl
import hashlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

PYWB_VERSION = "2.8.3"
# gevent 22.10 (pinned by pywb) loads its plugins through pkg_resources, which cannot find the
# zope packages under the normalized names (zope_interface-*.dist-info) that their newer releases
# install: the last releases installed under the dotted names.
# pywb's certificate authority (certauth, used in proxy mode) needs pyOpenSSL's X509Extension,
# which pyOpenSSL 26.2 removed; nothing in pywb's own requirements caps it.
REQUIREMENTS = (
    f"pywb=={PYWB_VERSION}",
    "zope.interface==6.4.post2",
    "zope.event==5.0",
    "pyOpenSSL<26.2",
)
# The environment's name says what it holds, so one built from other requirements is not reused.
VENV_NAME = f"pywb-{PYWB_VERSION}-{hashlib.sha256(' '.join(REQUIREMENTS).encode()).hexdigest()[:8]}"
WACZ_REQUIREMENTS = ("wacz==0.6.0",)
WACZ_VENV_NAME = f"wacz-{hashlib.sha256(' '.join(WACZ_REQUIREMENTS).encode()).hexdigest()[:8]}"
COMPLETE = "dlweb-peer-complete"
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
# What browsers accept: pywb then sends a stored gzip, deflate or br body as it is, where for a
# client accepting only identity (http.client's default) it decodes it.
ACCEPT_ENCODING = "gzip, deflate, br"


def _cache_dir() -> Path:
    root = os.environ.get("DLWEB_PEER_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "dlweb-peers"


def _run(command: list[str], cwd: Path | None = None) -> None:
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
            _run([sys.executable, "-m", "venv", str(build)])
            _run([str(build / "bin" / "python"), "-m", "pip", "install", "-q", *requirements])
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


def pywb_bin() -> Path:
    """The `bin` directory of a virtual environment with pywb, built on first use."""
    return peer_venv(VENV_NAME, REQUIREMENTS)


def wacz_validate(path: Path) -> subprocess.CompletedProcess[str]:
    """py-wacz's `wacz validate -f PATH`, the reference check of a WACZ package, run from a
    virtual environment of its own (its frictionless pins stay out of dlweb's and pywb's)."""
    validator = peer_venv(WACZ_VENV_NAME, WACZ_REQUIREMENTS) / "wacz"
    return subprocess.run(
        [str(validator), "validate", "-f", str(path)], capture_output=True, text=True, timeout=120
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(base: str) -> bool:
    try:
        _get(base, "/")
    except (OSError, http.client.HTTPException):
        return False
    return True


def _get(
    base: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.netloc, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


@contextmanager
def _wayback(workdir: Path, log_name: str) -> Iterator[str]:
    """pywb's `wayback` server started in `workdir` (where it finds its collections and
    configuration) on a free loopback port, its output in `workdir / log_name`; yields its base
    URL once it answers, and stops it on leaving."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = workdir / log_name
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(pywb_bin() / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not _answers(base):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"wayback did not start on {base}:\n{log_path.read_text(errors='replace')}"
                )
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def running_pywb(workdir: Path, warcs: list[Path], collection: str = "coll") -> Iterator[str]:
    """A `wayback` server on a free loopback port replaying `warcs`; yields its base URL."""
    manager = str(pywb_bin() / "wb-manager")
    _run([manager, "init", collection], cwd=workdir)
    _run([manager, "add", collection, *map(str, warcs)], cwd=workdir)
    with _wayback(workdir, "wayback.log") as base:
        yield base


def replay(
    base: str, collection: str, url: str, timestamp: str
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The archived response as pywb serves it in identity mode (`id_`): status, headers and
    body as sent (chunked framing aside), redirects not followed and content-encoding not undone,
    so that dlweb's replay can be compared with it byte for byte."""
    return _get(base, f"/{collection}/{timestamp}id_/{url}", {"Accept-Encoding": ACCEPT_ENCODING})


# pywb's recording proxy: what it fetches comes from the live web ("$live") and is written to the
# proxy's collection. Content rewriting is off, so that a browser gets the site's bytes as they are
# (no banner, no wombat.js) and the WARC holds what the site sent.
RECORDING_CONFIG = """\
collections:
  live: $live
recorder:
  source_coll: live
  rollover_idle_secs: 3600
proxy:
  coll: {collection}
  recording: true
  enable_content_rewrite: false
enable_memento: true
"""


@dataclass(frozen=True)
class Recording:
    """A running pywb recording proxy."""

    proxy: str  # its address, http://127.0.0.1:PORT, to set as a browser's HTTP proxy
    archive: Path  # where it writes its WARC files

    def warcs(self) -> list[Path]:
        return sorted(self.archive.glob("*.warc*"))

    def records(self) -> list[tuple[str, str, bytes]]:
        """Type, target URI and payload of every record written so far; a record still being
        written ends the list."""
        found: list[tuple[str, str, bytes]] = []
        for warc in self.warcs():
            with warc.open("rb") as stream:
                try:
                    for record in ArchiveIterator(stream):
                        uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                        found.append((record.rec_type, uri, record.content_stream().read()))
                except (ArchiveLoadFailed, EOFError, OSError, ValueError, zlib.error):
                    pass  # a gzip member or a record cut short: not all written yet
        return found

    def wait_recorded(
        self, condition: Callable[[list[tuple[str, str, bytes]]], bool], timeout: float = 30
    ) -> list[tuple[str, str, bytes]]:
        """Poll the WARC files until their records satisfy `condition`: pywb writes a request
        and its response from a queue of its own, after the response has gone to the browser."""
        deadline = time.monotonic() + timeout
        while True:
            records = self.records()
            if condition(records):
                return records
            if time.monotonic() > deadline:
                kinds = [(kind, uri) for kind, uri, _ in records]
                raise AssertionError(f"pywb did not write the records awaited; it wrote {kinds}")
            time.sleep(0.05)


@contextmanager
def recording_pywb(workdir: Path, collection: str = "rec") -> Iterator[Recording]:
    """pywb's `wayback` as a recording HTTP proxy on a free loopback port: every request a client
    sends through it is fetched from the live web and written, request and response records (a
    POST's body in its request record), to a WARC under `collections/<collection>/archive/`.

    pywb writes each pair of records after the response went back, each record a gzip member
    flushed whole: wait with `Recording.wait_recorded` for the records expected before leaving,
    and the WARC is complete when pywb is stopped."""
    _run([str(pywb_bin() / "wb-manager"), "init", collection], cwd=workdir)
    (workdir / "config.yaml").write_text(RECORDING_CONFIG.format(collection=collection))
    with _wayback(workdir, "wayback-recording.log") as base:
        yield Recording(base, workdir / "collections" / collection / "archive")
