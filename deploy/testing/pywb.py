"""pywb as a real peer: its own virtual environment, a running `wayback` server, raw replay.

pywb pins exact, old releases of its dependencies (werkzeug 2.2.3, where mitmproxy, a dlweb
dependency, needs werkzeug 3), so it lives in a virtual environment of its own
(`deploy.testing.peers`), built once and cached.
"""

import hashlib
import http.client
import tarfile
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from deploy.testing.peers import cached_build, peer_venv, run
from deploy.testing.ports import free_port
from deploy.testing.spawn import end, spawn
from deploy.testing.waits import wait_until

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
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
# What browsers accept: pywb then sends a stored gzip, deflate or br body as it is, where for a
# client accepting only identity (http.client's default) it decodes it.
ACCEPT_ENCODING = "gzip, deflate, br"


def pywb_bin() -> Path:
    """The `bin` directory of a virtual environment with pywb, built on first use."""
    return peer_venv(VENV_NAME, REQUIREMENTS)


def pywb_source() -> Path:
    """pywb's source release, unpacked once into the peers' cache: its sample archive
    (`sample_archive/`) and its own tests (`pywb/warcserver/index/test/`...), which the wheel
    leaves out."""

    def build(folder: Path) -> None:
        python = pywb_bin() / "python"
        run(
            [
                str(python),
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(folder),
                f"pywb=={PYWB_VERSION}",
            ]
        )
        (archive,) = folder.glob("pywb-*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
        archive.unlink()

    return cached_build(f"pywb-{PYWB_VERSION}-source", build) / f"pywb-{PYWB_VERSION}"


def _answers(base: str) -> bool:
    try:
        get(base, "/")
    except (OSError, http.client.HTTPException):
        return False
    return True


def get(
    base: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """GET `path` of the server at `base`: status, headers and body, redirects not followed."""
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
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = workdir / log_name
    process = spawn(
        [str(pywb_bin() / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
        log_path,
        cwd=workdir,
    )
    try:
        wait_until(
            lambda: _answers(base),
            f"wayback to answer on {base}",
            READY_TIMEOUT,
            process=process,
            details=lambda: log_path.read_text(errors="replace"),
        )
        yield base
    finally:
        end(process, timeout=STOP_TIMEOUT)


@contextmanager
def running_pywb(workdir: Path, warcs: list[Path], collection: str = "coll") -> Iterator[str]:
    """A `wayback` server on a free loopback port replaying `warcs`; yields its base URL."""
    manager = str(pywb_bin() / "wb-manager")
    run([manager, "init", collection], cwd=workdir)
    run([manager, "add", collection, *map(str, warcs)], cwd=workdir)
    with _wayback(workdir, "wayback.log") as base:
        yield base


def replay(
    base: str, collection: str, url: str, timestamp: str
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The archived response as pywb serves it in identity mode (`id_`): status, headers and
    body as sent (chunked framing aside), redirects not followed and content-encoding not undone,
    so that dlweb's replay can be compared with it byte for byte."""
    return get(base, f"/{collection}/{timestamp}id_/{url}", {"Accept-Encoding": ACCEPT_ENCODING})


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
        records: list[tuple[str, str, bytes]] = []

        def written() -> bool:
            nonlocal records
            records = self.records()
            return condition(records)

        wait_until(
            written,
            "pywb to write the records awaited",
            timeout,
            details=lambda: f"it wrote {[(kind, uri) for kind, uri, _ in records]}",
        )
        return records


@contextmanager
def recording_pywb(workdir: Path, collection: str = "rec") -> Iterator[Recording]:
    """pywb's `wayback` as a recording HTTP proxy on a free loopback port: every request a client
    sends through it is fetched from the live web and written, request and response records (a
    POST's body in its request record), to a WARC under `collections/<collection>/archive/`.

    pywb writes each pair of records after the response went back, each record a gzip member
    flushed whole: wait with `Recording.wait_recorded` for the records expected before leaving,
    and the WARC is complete when pywb is stopped."""
    run([str(pywb_bin() / "wb-manager"), "init", collection], cwd=workdir)
    (workdir / "config.yaml").write_text(RECORDING_CONFIG.format(collection=collection))
    with _wayback(workdir, "wayback-recording.log") as base:
        yield Recording(base, workdir / "collections" / collection / "archive")
