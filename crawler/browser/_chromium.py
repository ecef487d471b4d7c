"""A headless Chromium process for one agent: started, watched, and killed with its children.

Chromium is the system's (Debian's `chromium` package). It listens for the DevTools protocol on
a free loopback port it chooses and prints the endpoint on its error output. It gets a profile of
its own, removed when it stops, and none of the background traffic a desktop browser makes
(updates, sync, safe browsing): a crawler's browser talks only to the pages it is given.
"""

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

from ._cdp import BrowserError, Connection

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
ENDPOINT = re.compile(rb"DevTools listening on (ws://\S+)")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--autoplay-policy=no-user-gesture-required",
    # A page's script that allocates without end crashes its renderer at this heap size, long
    # before the agent's memory cap.
    "--js-flags=--max-old-space-size=256",
    "--proxy-bypass-list=<-loopback>",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


# What the Fetch domain does not pause (a WebSocket, say) goes to a proxy that is not there:
# nothing reaches the network but through the crawler.
NOWHERE = "http://127.0.0.1:9"


def chromium_path() -> str:
    """The browser to run: $DLWEB_CHROMIUM, or chromium on the PATH."""
    found = os.environ.get("DLWEB_CHROMIUM") or shutil.which("chromium")
    found = found or shutil.which("chromium-browser")
    if found is None:
        raise BrowserError("missing", "Chromium is not installed (apt-get install chromium)")
    return found


class Chromium:
    """One running browser. `memory()` is the memory of its whole process tree."""

    def __init__(self, window: tuple[int, int] = (1280, 900), proxy: str = NOWHERE) -> None:
        self.window = window
        self.proxy = proxy
        self.process: asyncio.subprocess.Process | None = None
        self.connection: Connection | None = None
        self._profile: Path | None = None
        self._stderr: asyncio.Task[None] | None = None

    async def start(self) -> Connection:
        self._profile = Path(tempfile.mkdtemp(prefix="dlweb-browser-"))
        width, height = self.window
        self.process = await asyncio.create_subprocess_exec(
            chromium_path(),
            *FLAGS,
            f"--proxy-server={self.proxy}",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "about:blank",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            endpoint = await self._endpoint()
            self.connection = await Connection.open(endpoint)
            # A page that starts a download gets nothing: the crawler fetches files itself.
            await self.connection.send("Browser.setDownloadBehavior", {"behavior": "deny"})
        except BaseException:
            await self.stop()
            raise
        return self.connection

    async def _endpoint(self) -> str:
        """Read the DevTools endpoint Chromium prints, then keep draining its error output."""
        assert self.process is not None and self.process.stderr is not None
        stderr = self.process.stderr
        seen: list[bytes] = []
        try:
            async with asyncio.timeout(START_TIMEOUT):
                while line := await stderr.readline():
                    if match := ENDPOINT.search(line):
                        self._stderr = asyncio.create_task(_drain(stderr))
                        return match[1].decode()
                    seen.append(line)
        except TimeoutError:
            raise BrowserError("hung", f"Chromium did not start in {START_TIMEOUT:g} s") from None
        said = b"".join(seen[-5:]).decode(errors="replace").strip()
        raise BrowserError("crashed", f"Chromium exited at start: {said or 'no message'}")

    @property
    def alive(self) -> bool:
        return (
            self.process is not None
            and self.process.returncode is None
            and self.connection is not None
            and not self.connection.closed.is_set()
        )

    def memory(self) -> int:
        """Bytes resident in the browser and every process it started."""
        if self.process is None or self.process.returncode is not None:
            return 0
        return sum(_resident(pid) for pid in _tree(self.process.pid))

    async def stop(self) -> None:
        """Close the connection, kill the browser's whole process group, remove its profile."""
        if self.connection is not None:
            await self.connection.close()
            self.connection = None
        if self.process is not None:
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()
            self.process = None
        if self._stderr is not None:
            self._stderr.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr
            self._stderr = None
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None


async def _drain(stream: asyncio.StreamReader) -> None:
    """Chromium writes warnings on its error output for as long as it runs: read them away so
    that it never blocks on a full pipe."""
    while await stream.read(65536):
        pass


def _tree(root: int) -> list[int]:
    """A process and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _resident(pid: int) -> int:
    """A process's share of the memory only it can free (anonymous and shared-memory pages, each
    shared page counted once across the processes sharing it). Pages of the browser's program
    file are left out: they are the system's page cache, shared with every other browser and
    dropped under pressure."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    kilobytes = sum(
        int(match[1]) for match in re.finditer(r"^Pss_(?:Anon|Shmem):\s+(\d+) kB", rollup, re.M)
    )
    return kilobytes * 1024
