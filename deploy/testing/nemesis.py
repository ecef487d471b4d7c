"""The fault soak: a cluster of real processes on loopback takes inserts while a nemesis kills,
pauses, damages and fills its parts at random moments; afterwards every acknowledged capture must
read back byte-identical by every lookup, every file must be at its replica target, and no
process may have crashed on its own.

An acknowledgement is a promise: once `ClusterClient.insert` returns, the capture must survive
any fault the replica target tolerates. So the nemesis never makes more faults at once than
replica 2 tolerates (one storage node down, paused or full at a time; a byte flipped only in a
file whose other copies are on healthy nodes), and whatever is lost is the cluster's fault.

The schedule (the waits, the kinds, how long each fault lasts, which target) is drawn from one
seeded random.Random whatever happens, so a seed replays the same schedule; the target of a byte
flip also depends on which files the cluster holds at that moment. `tests/test_soak.py` runs it
for a minute in the test suite, `benchmarks/soak.py` as long as asked (docs/soak.md).
"""

import asyncio
import errno
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp

from archive.cluster import ClusterClient, NewCapture
from archive.config import ClusterConfig, load_config
from archive.errors import DlwebError
from archive.urlkey import structure_name
from deploy.testing.cluster import checked, write_config
from deploy.testing.disk import damage, stored_spans
from deploy.testing.ports import free_port
from deploy.testing.waits import NotReady, eventually

Say = Callable[[str], None]

STORAGE_NODES = 4
KINDS = ("kill-storage", "cut", "fill", "flip", "kill-index", "kill-master")
# The faults that take a storage node out: replica 2 tolerates one at a time.
STORAGE_FAULTS = ("kill-storage", "cut", "fill")
# A lost node is declared down after this long, so that short and long outages both happen.
GRACE = 2.0
# Seconds between two faults, and how long a fault lasts before it is healed.
GAP = (1.5, 5.0)
STORAGE_OUTAGE = (2.0, 12.0)
SERVICE_OUTAGE = (0.5, 5.0)
READY_TIMEOUT = 30.0
# A batch that takes longer is given up (not acknowledged): a paused node can hold an upload
# for the client's peer-silence bound, and the soak must keep inserting meanwhile.
INSERT_TIMEOUT = 30.0
INSERTERS = 2
# Captures a second by default: enough to keep every node busy, little enough for 2 shared cores.
RATE = 15.0
READ_TIMEOUT = 30.0
CHECKS_AT_ONCE = 4
# The free space a storage node keeps (its --reserve): small, for disks of a few dozen MiB.
RESERVE = "8M"
# Unplanned restarts of one process before it is left dead: past that it is in a crash loop.
RESTARTS_AFTER_CRASH = 3
BASE_TIME = 1_700_000_000_000_000  # capture times, UTC microseconds; one second apart
SECOND = 1_000_000
HEADERS = tuple(
    f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\n\r\n".encode()
    for kind in ("text/html", "image/png", "application/octet-stream")
)
# Contents up to 1 KiB get a replica more; those over 1 MiB travel alone, not in packs.
SIZES = (200, 900, 3_000, 12_000, 60_000, 1_200_000)
SIZE_WEIGHTS = (200, 200, 250, 200, 140, 3)
REPEATED = 0.1  # share of captures whose content another capture already had
REVISITED = 0.3  # share of captures of a URL captured before (an append to its structure file)


def since(started: float) -> float:
    return time.monotonic() - started


# -- processes and disks ---------------------------------------------------------------------


@dataclass
class Proc:
    """One process of the cluster, started again on the same port and data after a fault."""

    name: str
    command: list[str]
    port: int
    log_path: Path
    popen: "subprocess.Popen[bytes] | None" = None
    starts: int = 0
    planned: int = 1  # starts the soak meant: the first, and one a restart after a fault
    killed: bool = False  # by the nemesis, and not started again yet
    paused: bool = False
    crashes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, session: aiohttp.ClientSession) -> float:
        """Start it and wait until its /status answers; the seconds that took."""
        began = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        self.killed = self.paused = False
        await eventually(
            lambda: answers(session, f"{self.url}/status"),
            f"the {self.name} to answer",
            READY_TIMEOUT,
            process=self.popen,
        )
        return time.monotonic() - began

    def kill(self) -> None:
        """kill -9, as a power cut or the OOM killer would."""
        assert self.popen is not None
        self.killed = True
        self.popen.kill()
        self.popen.wait()

    def pause(self) -> None:
        """SIGSTOP: on loopback, the stand-in for a cut link: the peers get silence, no reset."""
        assert self.popen is not None
        self.popen.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.popen is not None
        self.popen.send_signal(signal.SIGCONT)
        self.paused = False

    def exited(self) -> int | None:
        """The exit code of a process that ended on its own (not killed by the nemesis)."""
        if self.killed or self.popen is None:
            return None
        return self.popen.poll()

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self) -> None:
        """SIGTERM, so that it syncs what it holds; SIGKILL if that takes over 30 s."""
        if self.popen is None or self.popen.poll() is not None:
            return
        if self.paused:
            self.resume()
        self.popen.terminate()
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def log_tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


async def answers(session: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as response:
            return response.status == 200
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False


@dataclass
class Disk:
    """A storage node's disk: a size-limited tmpfs of its own when the soak may mount one, so
    that filling it fills that node's disk only, and not the machine's."""

    path: Path
    mounted: bool = False

    @property
    def root(self) -> Path:
        return self.path / "node"

    @property
    def filler(self) -> Path:
        return self.path / "filler"

    def mount(self, megabytes: int) -> str | None:
        """Mount the tmpfs; None, or why it cannot be."""
        self.path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return "mounting a tmpfs needs root"
        if shutil.which("mount") is None:
            return "no mount command"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return f"mount -t tmpfs failed: {done.stderr.strip() or done.returncode}"
        self.mounted = True
        return None

    def fill(self) -> int:
        """Write zeros until the file system refuses more, as a runaway log would; the bytes
        written. Big pieces first, then pages, so that not a page is left."""
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 4096):
                piece = bytes(size)
                while True:
                    try:
                        written += os.write(fd, piece)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.path)], check=True)
            self.mounted = False


class SoakCluster:
    """1 master, 1 index node and 4 storage nodes in distinct failure domains, replica 2."""

    def __init__(self, root: Path, disk_mb: int) -> None:
        self.root = root
        self.disk_mb = disk_mb
        self.config_path = root / "dlweb.yaml"
        master_port = free_port()
        write_config(self.config_path, master_port, replicas=2, lookup="both")
        self.config: ClusterConfig = load_config(self.config_path)
        python = [sys.executable, "-m"]
        config = ["-c", str(self.config_path)]
        self.master = Proc(
            "master",
            [*python, "master", "--data", str(root / "master"), "--grace", str(GRACE)]
            + ["--listen", f"127.0.0.1:{master_port}", *config],
            master_port,
            root / "master.log",
        )
        index_port = free_port()
        self.index = Proc(
            "index",
            [*python, "master.index", "--data", str(root / "index")]
            + ["--listen", f"127.0.0.1:{index_port}", *config],
            index_port,
            root / "index.log",
        )
        self.disks: dict[str, Disk] = {}
        self.nodes: dict[str, Proc] = {}
        for i in range(1, STORAGE_NODES + 1):
            name, port = f"node{i}", free_port()
            disk = self.disks[name] = Disk(root / f"disk{i}")
            self.nodes[name] = Proc(
                name,
                [*python, "storage_node", "--root", str(disk.root), "--id", name]
                + ["--domain", f"rack{i}", "--reserve", RESERVE]
                + ["--listen", f"127.0.0.1:{port}", *config],
                port,
                root / f"{name}.log",
            )
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))

    @property
    def procs(self) -> list[Proc]:
        return [self.master, self.index, *self.nodes.values()]

    def mount_disks(self) -> str | None:
        """A tmpfs for every storage node; None, or why disks cannot be filled in this run."""
        for disk in self.disks.values():
            if (reason := disk.mount(self.disk_mb)) is not None:
                return reason
        return None

    async def start(self) -> None:
        await self.master.start(self.session)
        for node in self.nodes.values():
            await node.start(self.session)
        await self.wait_for(lambda s: alive(s) == STORAGE_NODES, "the storage nodes to join")
        await self.index.start(self.session)
        await self.wait_for(lambda s: len(s["index_nodes"]) == 1, "the index node to join")

    async def get(self, path: str) -> Any:
        async with self.session.get(f"{self.master.url}{path}") as answer:
            answer.raise_for_status()
            return await answer.json()

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        headers = {"Authorization": f"Bearer {self.config.write_token}"}
        async with self.session.post(f"{self.master.url}{path}", json=body, headers=headers) as r:
            r.raise_for_status()
            return await r.json()

    async def status(self) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await self.get("/status")
            return result
        except (aiohttp.ClientError, OSError, TimeoutError):
            return None

    async def wait_for(
        self, condition: Callable[[dict[str, Any]], bool], what: str, timeout: float = 60
    ) -> dict[str, Any]:
        """Poll the master's status until condition holds; fail naming what did not happen."""
        status: dict[str, Any] | None = None

        async def holds() -> bool:
            nonlocal status
            status = await self.status()
            return status is not None and condition(status)

        await eventually(
            holds,
            what,
            timeout,
            interval=0.1,
            details=lambda: f"last: {'no answer' if status is None else brief(status)}",
        )
        assert status is not None
        return status

    async def holders(self, kind: str, name: str) -> list[str]:
        """The nodes the master says hold a file (readable ones)."""
        answer = await self.get(f"/locate/{kind}/{name}")
        return [str(node["id"]) for node in answer["nodes"]]

    async def close(self) -> None:
        for proc in self.procs:
            proc.stop()
        await self.session.close()
        for disk in self.disks.values():
            disk.unmount()


def alive(status: dict[str, Any]) -> int:
    return sum(1 for n in status["nodes"] if n["state"] == "alive" and n["connected"])


def brief(status: dict[str, Any]) -> str:
    """What of the master's status says whether the cluster is settled."""
    nodes = ", ".join(
        f"{n['id']} {n['state']}{'' if n['connected'] else ' (not connected)'}"
        for n in status["nodes"]
    )
    keys = ("below_target", "lost", "structures_dirty", "structures_diverged")
    counts = ", ".join(f"{key} {status[key]}" for key in keys)
    return f"{nodes}; index nodes {len(status['index_nodes'])}; {counts}; {status['repairs']}"


def settled(status: dict[str, Any]) -> bool:
    """Every node back, nothing below target, and nothing left for the repair pass to do."""
    repairs = status["repairs"]
    return (
        alive(status) == STORAGE_NODES
        and len(status["index_nodes"]) == 1
        and status["below_target"] == 0
        and status["lost"] == 0
        and status["structures_dirty"] == 0
        and status["structures_diverged"] == 0
        and repairs["running"] == 0
        and checked(status)
        and repairs["nodes_to_check"] == 0
    )


# -- the workload ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Acked:
    """A capture whose insert returned without error: the cluster promised to keep it."""

    url: str
    time: int
    content: str
    header: str
    at: float  # seconds since the soak began


class Workload:
    """Captures of new and revisited URLs, with new and repeated contents, inserted by a few
    batches at a time; every content's bytes are made again from its seed when needed, so a
    long run does not hold them all."""

    def __init__(self, seed: int, started: float, rate: float) -> None:
        self.rng = random.Random(f"workload {seed}")
        self.seed = seed
        self.started = started
        self.rate = rate
        self.next_batch = started  # when the pace lets the next batch go
        self.urls = 0
        self.captures = 0
        self.made: dict[str, tuple[int, int]] = {}  # content name: its seed and size
        self.contents: list[str] = []
        self.headers = {sha256(h): h for h in HEADERS}
        self.acked: list[Acked] = []
        self.failed = 0
        self.reasons: Counter[str] = Counter()

    def body(self, name: str) -> bytes:
        if (header := self.headers.get(name)) is not None:
            return header
        key, size = self.made[name]
        return random.Random(f"content {self.seed} {key}").randbytes(size)

    def _content(self) -> str:
        if self.contents and self.rng.random() < REPEATED:
            return self.rng.choice(self.contents)
        key = len(self.made)
        size = self.rng.choices(SIZES, SIZE_WEIGHTS)[0]
        data = random.Random(f"content {self.seed} {key}").randbytes(size)
        name = sha256(data)
        self.made[name] = (key, size)
        self.contents.append(name)
        return name

    def batch(self) -> list[NewCapture]:
        captures = []
        for _ in range(self.rng.randint(1, 8)):
            if self.urls and self.rng.random() < REVISITED:
                number = self.rng.randrange(self.urls)
            else:
                number, self.urls = self.urls, self.urls + 1
            header = self.rng.choice(HEADERS)
            content = self._content()
            self.captures += 1
            captures.append(
                NewCapture(
                    url=f"http://soak{self.seed}.example/page/{number}",
                    time=BASE_TIME + self.captures * SECOND,
                    content=content,
                    header=sha256(header),
                    status=200,
                    size=self.made[content][1],
                    header_size=len(header),
                )
            )
        return captures

    async def run(self, config: ClusterConfig, until: float) -> None:
        """Insert until `until` (monotonic), INSERTERS batches at a time."""
        async with ClusterClient(config, "soak-inserter", connect_timeout=10) as client:
            await asyncio.gather(*(self._inserter(client, until) for _ in range(INSERTERS)))

    async def _inserter(self, client: ClusterClient, until: float) -> None:
        while time.monotonic() < until:
            batch = self.batch()
            now = time.monotonic()
            pause, self.next_batch = (
                self.next_batch - now,
                max(now, self.next_batch) + len(batch) / self.rate,
            )
            await asyncio.sleep(max(0.0, pause))  # the pace of inserts, not a readiness wait
            try:
                async with asyncio.timeout(INSERT_TIMEOUT):
                    await client.insert(batch, self.body)
            except (DlwebError, TimeoutError, aiohttp.ClientError, OSError) as exc:
                self.failed += 1
                self.reasons[reason(exc)] += 1
                # Not a readiness wait: a cluster that refuses at once is not hammered.
                await asyncio.sleep(0.2)
                continue
            at = since(self.started)
            self.acked.extend(Acked(c.url, c.time, c.content, c.header, at) for c in batch)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def reason(exc: BaseException) -> str:
    """An error's message with its names, addresses, sizes and times blanked (counts of nodes
    and copies are kept), for counting insert failures by cause."""
    text = str(exc) or type(exc).__name__
    text = re.sub(r"[0-9a-f]{64}", "<name>", text)
    text = re.sub(r"http://[0-9.:]+", "<node>", text)
    return re.sub(r"\d+\.\d+|\d{3,}", "N", text)[:200]


# -- the nemesis -----------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str
    target: str
    began: float
    ends: float | None = None  # when it is (or was) healed; None for a flip, which stays
    detail: str = ""

    def __str__(self) -> str:
        end = "" if self.ends is None else f" to {self.ends:.1f} s"
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.kind} {self.target} at {self.began:.1f} s{end}{detail}"


@dataclass
class Heal:
    due: float  # monotonic
    fault: Fault
    action: Callable[[], Awaitable[str]]


class Nemesis:
    """Makes faults at moments drawn from a seeded Random, and heals them when their time is up.

    Each step draws the same four numbers whatever happens (the wait before it, the kind, how
    long it lasts, and the seed of its own Random, which picks the target), so the schedule a
    seed makes does not depend on timing; a step whose fault the cluster cannot take now (a
    storage node is out already) is skipped.
    """

    def __init__(
        self,
        cluster: SoakCluster,
        workload: Workload,
        seed: int,
        kinds: tuple[str, ...],
        started: float,
        say: Say,
    ) -> None:
        self.cluster = cluster
        self.workload = workload
        self.rng = random.Random(seed)
        self.kinds = kinds
        self.started = started
        self.say = say
        self.faults: list[Fault] = []
        self.pending: list[Heal] = []
        self.flipped: set[tuple[str, str]] = set()

    def note(self, text: str) -> None:
        self.say(f"[{since(self.started):6.1f} s] {text}")

    def out(self) -> str | None:
        """The storage node a fault has taken out, if one has."""
        for heal in self.pending:
            if heal.fault.kind in STORAGE_FAULTS:
                return heal.fault.target
        return None

    async def run(self, until: float) -> None:
        """Make and heal faults until `until` (monotonic), then heal those still on (while the
        last inserts end)."""
        next_fault = time.monotonic() + self.rng.uniform(*GAP)
        while True:
            heal_due = min((h.due for h in self.pending), default=float("inf"))
            moment = min(next_fault, heal_due)
            if moment >= until:
                break
            await asyncio.sleep(max(0.0, moment - time.monotonic()))
            if heal_due <= next_fault:
                await self._heal(min(self.pending, key=lambda h: h.due))
                continue
            kind = self.rng.choice(self.kinds)
            duration = self.rng.uniform(
                *(STORAGE_OUTAGE if kind in STORAGE_FAULTS else SERVICE_OUTAGE)
            )
            chance = random.Random(self.rng.random())
            next_fault += self.rng.uniform(*GAP)
            await self._fault(kind, duration, chance)
        for heal in sorted(self.pending, key=lambda h: h.due):
            await self._heal(heal)

    async def _heal(self, heal: Heal) -> None:
        self.pending.remove(heal)
        heal.fault.ends = since(self.started)
        try:
            self.note(await heal.action())
        except (RuntimeError, OSError) as exc:
            self.note(f"healing {heal.fault} failed: {exc}")

    def _skip(self, kind: str, why: str) -> None:
        self.note(f"skipped {kind}: {why}")

    def _begin(self, kind: str, target: str, duration: float | None, detail: str = "") -> Fault:
        now = since(self.started)
        fault = Fault(kind, target, now, None if duration is None else now + duration, detail)
        self.faults.append(fault)
        lasting = "" if duration is None else f" for {duration:.1f} s"
        self.note(f"{kind} {target}{lasting}{f' ({detail})' if detail else ''}")
        return fault

    def _later(self, fault: Fault, duration: float, action: Callable[[], Awaitable[str]]) -> None:
        self.pending.append(Heal(time.monotonic() + duration, fault, action))

    async def _fault(self, kind: str, duration: float, chance: random.Random) -> None:
        cluster = self.cluster
        if kind == "flip":
            await self._flip(chance)
            return
        if kind in ("kill-index", "kill-master"):
            proc = cluster.index if kind == "kill-index" else cluster.master
            if proc.killed or not proc.alive():
                self._skip(kind, f"the {proc.name} is not running")
                return
            proc.kill()
            self._later(self._begin(kind, proc.name, duration), duration, self._restart(proc))
            return
        if (out := self.out()) is not None:
            self._skip(kind, f"{out} is out already and replica 2 tolerates one node out")
            return
        target = chance.choice(sorted(cluster.nodes))
        node = cluster.nodes[target]
        if not node.alive():
            self._skip(kind, f"{target} is not running")
            return
        if kind == "kill-storage":
            node.kill()
            self._later(self._begin(kind, target, duration), duration, self._restart(node))
        elif kind == "cut":
            node.pause()
            self._later(self._begin(kind, target, duration), duration, self._resume(node))
        else:
            disk = cluster.disks[target]
            filled = await asyncio.to_thread(disk.fill)
            fault = self._begin(kind, target, duration, f"{filled / 2**20:.1f} MiB written")
            self._later(fault, duration, self._free(target, disk))

    def _restart(self, proc: Proc) -> Callable[[], Awaitable[str]]:
        async def restart() -> str:
            proc.planned += 1
            took = await proc.start(self.cluster.session)
            return f"restarted {proc.name} (answering after {took:.1f} s)"

        return restart

    def _resume(self, proc: Proc) -> Callable[[], Awaitable[str]]:
        async def resume() -> str:
            proc.resume()
            return f"restored {proc.name}'s links (SIGCONT)"

        return resume

    def _free(self, name: str, disk: Disk) -> Callable[[], Awaitable[str]]:
        async def free() -> str:
            disk.free()
            return f"freed {name}'s disk"

        return free

    async def _flip(self, chance: random.Random) -> None:
        """Flip a byte of a stored copy of a file whose other copies are on healthy nodes: the
        content or the structure file of an acknowledged capture (a few are tried)."""
        acked = self.workload.acked
        if not acked:
            self._skip("flip", "nothing acknowledged yet")
            return
        out = self.out()
        unhealthy = {out} if out is not None else set()
        unhealthy |= {name for name, node in self.cluster.nodes.items() if not node.alive()}
        kind = chance.choice(("content", "structure"))
        for capture in chance.sample(acked, min(20, len(acked))):
            name = structure_name(capture.url) if kind == "structure" else capture.content
            if (kind, name) in self.flipped:
                continue
            try:
                holders = await self.cluster.holders(kind, name)
            except (aiohttp.ClientError, OSError, TimeoutError):
                self._skip("flip", "the master does not answer")
                return
            if len(holders) < 2 or unhealthy & set(holders):
                continue
            target = chance.choice(sorted(holders))
            root = self.cluster.disks[target].root
            spans = await asyncio.to_thread(stored_spans, root, kind)
            if name not in spans:
                continue
            at = chance.randrange(spans[name].size)
            await asyncio.to_thread(damage, root, name, at, kind)
            self.flipped.add((kind, name))
            self._begin("flip", target, None, f"{kind} {name[:12]} byte {at}")
            return
        self._skip("flip", f"no {kind} with its other copies on healthy nodes among those tried")


# -- the supervisor --------------------------------------------------------------------------


async def supervise(cluster: SoakCluster, started: float, say: Say) -> None:
    """Restart a process that ended on its own, as a service manager would, a few times at
    most; each such start is counted against it (a crash loop shows as extra starts)."""
    while True:
        for proc in cluster.procs:
            code = proc.exited()
            if code is None:
                continue
            moment = since(started)
            proc.crashes.append(f"ended with status {code} at {moment:.1f} s")
            say(f"[{moment:6.1f} s] {proc.name} ended, unplanned, with status {code}:")
            say(proc.log_tail())
            if len(proc.crashes) > RESTARTS_AFTER_CRASH:
                proc.killed = True  # left dead: not noticed again
                continue
            try:
                await proc.start(cluster.session)
            except RuntimeError as exc:
                say(f"[{since(started):6.1f} s] restarting {proc.name} failed: {exc}")
        await asyncio.sleep(0.5)


# -- the check -------------------------------------------------------------------------------


@dataclass
class Verdict:
    capture: Acked
    problems: list[str]
    lost: bool  # no lookup read it back; else some did and some did not (unreadable)


async def read_back(
    clients: dict[str, ClusterClient], capture: Acked, body: Callable[[str], bytes]
) -> Verdict:
    """Read one capture back through every mode and both lookups, byte for byte."""
    problems: list[str] = []
    record_read = content_read = False
    # before and after are asked half a second off the capture: captures are a second apart,
    # so each must still find this one and no other.
    asks = (
        ("closest", capture.time),
        ("exact", capture.time),
        ("before", capture.time + SECOND // 2),
        ("after", capture.time - SECOND // 2),
    )
    for lookup, client in clients.items():
        for mode, at in asks:
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    found = (await client.closest(capture.url, at, mode)).capture
            except (DlwebError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                problems.append(f"{lookup} {mode}: {type(exc).__name__}: {str(exc)[:160]}")
                continue
            if (found.time, found.content, found.header) != (
                capture.time,
                capture.content,
                capture.header,
            ):
                problems.append(f"{lookup} {mode}: found another capture, at {found.time}")
                continue
            record_read = True
        both = True
        for what, name in (("content", capture.content), ("header", capture.header)):
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    data = await client.get_content(name)
            except (DlwebError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                problems.append(f"{lookup} {what}: {type(exc).__name__}: {str(exc)[:160]}")
                both = False
                continue
            if data != body(name):
                problems.append(f"{lookup} {what}: other bytes")
                both = False
        content_read |= both
    return Verdict(capture, problems, not (record_read and content_read))


async def read_all(config: ClusterConfig, workload: Workload) -> list[Verdict]:
    """Every acknowledged capture read back; the verdicts of those that did not read back.

    A capture that fails is read again once the others are done, as a reader would retry: a
    multicast lookup on two loaded cores can miss its window, and that is no loss.
    """
    bad: list[Verdict] = []
    gate = asyncio.Semaphore(CHECKS_AT_ONCE)
    async with (
        ClusterClient(replace(config, lookup="multicast"), "soak-check-multicast") as multicast,
        ClusterClient(replace(config, lookup="master"), "soak-check-master") as master,
    ):
        clients = {"multicast": multicast, "master": master}

        async def one(capture: Acked, failed: list[Verdict]) -> None:
            async with gate:
                verdict = await read_back(clients, capture, workload.body)
            if verdict.problems:
                failed.append(verdict)

        first: list[Verdict] = []
        await asyncio.gather(*(one(capture, first) for capture in workload.acked))
        await asyncio.gather(*(one(verdict.capture, bad) for verdict in first))
    return sorted(bad, key=lambda v: v.capture.at)


# -- the report ------------------------------------------------------------------------------


@dataclass
class SoakReport:
    acknowledged: int
    faults: list[Fault]
    lost: list[Verdict]
    unreadable: list[Verdict]
    at_target: bool
    crashed: dict[str, list[str]]  # process: its crashes, for those started more than planned

    @property
    def line(self) -> str:
        return (
            f"acknowledged {self.acknowledged}, faults {len(self.faults)}, "
            f"lost {len(self.lost)}, unreadable {len(self.unreadable)}"
        )

    @property
    def by_kind(self) -> str:
        counts = Counter(fault.kind for fault in self.faults)
        return "faults by kind: " + ", ".join(f"{kind} {counts[kind]}" for kind in KINDS)

    @property
    def passed(self) -> bool:
        return not self.lost and not self.unreadable and self.at_target and not self.crashed


def around(faults: list[Fault], at: float) -> str:
    """The faults on when a capture was acknowledged, and the next ones after: those that may
    have taken it."""
    on = [f for f in faults if f.began <= at and (f.ends is None or f.ends >= at)]
    on = [f for f in on if f.kind != "flip"]
    after = [f for f in faults if f.began > at][:2]
    parts = []
    if on:
        parts.append("on at its acknowledgement: " + "; ".join(map(str, on)))
    if after:
        parts.append("next: " + "; ".join(map(str, after)))
    return ", ".join(parts) or "no fault near it"


async def whereabouts(cluster: SoakCluster, client: ClusterClient, capture: Acked) -> str:
    """Where the master and the disks say a capture's files are, and which copies of its
    structure file hold its record (each asked alone)."""
    parts = []
    structure = structure_name(capture.url)
    for kind, name in (("content", capture.content), ("structure", structure)):
        try:
            listed = await cluster.holders(kind, name)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            listed = [f"? ({exc})"]
        on_disk = [
            node
            for node, disk in sorted(cluster.disks.items())
            if name in await asyncio.to_thread(stored_spans, disk.root, kind)
        ]
        parts.append(f"{kind} {name[:12]}: master lists {listed}, on the disks of {on_disk}")
    copies = []
    for node, proc in sorted(cluster.nodes.items()):
        try:
            records = (await client.read_structure(structure, capture.url, [proc.url]))[1]
        except (DlwebError, aiohttp.ClientError, OSError, TimeoutError):
            continue  # holds no copy, or cannot say
        held = any(r.time == capture.time and r.content == capture.content for r in records)
        copies.append(f"{node} {'has' if held else 'LACKS'} it ({len(records)} records)")
    parts.append(f"its record: {', '.join(copies) or 'no copy answered'}")
    return "; ".join(parts)


async def explain(
    cluster: SoakCluster, faults: list[Fault], verdicts: list[Verdict], say: Say
) -> None:
    """Print what went wrong with each capture (the first 30), and where its files are."""
    async with ClusterClient(replace(cluster.config, lookup="master"), "soak-explain") as client:
        for verdict in verdicts[:30]:
            capture = verdict.capture
            what = "lost" if verdict.lost else "unreadable"
            say(f"{what}: {capture.url} at {capture.time}, acknowledged at {capture.at:.1f} s")
            say(f"    {around(faults, capture.at)}")
            say(f"    {await whereabouts(cluster, client, capture)}")
            for problem in verdict.problems[:4]:
                say(f"    {problem}")
    if len(verdicts) > 30:
        say(f"... and {len(verdicts) - 30} more")


# -- the whole run ---------------------------------------------------------------------------


async def recover(cluster: SoakCluster, settle: float, started: float, say: Say) -> bool:
    """Once every fault is healed: wait for every process to be back, and scrub every node
    (so that a flipped byte is found and repaired, not only counted); whether it was done
    within `settle` s."""
    try:
        await cluster.wait_for(
            lambda s: alive(s) == STORAGE_NODES and len(s["index_nodes"]) == 1,
            "every node and the index node to be back",
            settle,
        )
        asked = time.time()
        await cluster.post("/admin/scrub", {"node": None})
        await cluster.wait_for(
            lambda s: all((n["scrub"] or {}).get("finished", 0) >= asked for n in s["nodes"]),
            "every node's scrub",
            settle,
        )
    except (NotReady, TimeoutError) as exc:
        say(f"not healed: {exc}")
        return False
    say(f"[{since(started):6.1f} s] healed and scrubbed; waiting for the repairs")
    return True


async def at_target(cluster: SoakCluster, settle: float, say: Say) -> bool:
    """Whether every file reaches its target within `settle` s and fsck finds nothing."""
    try:
        await cluster.wait_for(settled, "every file at its target", settle)
    except NotReady as exc:
        say(f"not settled: {exc}")
        return False
    fsck = await cluster.get("/admin/fsck")
    if not fsck["ok"]:
        say(f"fsck: {fsck}")
    return bool(fsck["ok"])


def crashed(cluster: SoakCluster, say: Say) -> dict[str, list[str]]:
    """The processes that crashed (started again more often than the faults planned, or not
    running at the end), each said with its crashes."""
    found = {
        p.name: p.crashes or ["not running at the end"]
        for p in cluster.procs
        if p.starts > p.planned or not p.alive()
    }
    for name, crashes in found.items():
        say(f"{name} crashed: {'; '.join(crashes)}")
    return found


async def soak(
    seconds: float,
    seed: int,
    root: Path,
    *,
    settle: float = 90.0,
    disk_mb: int = 64,
    rate: float = RATE,
    say: Say = print,
) -> SoakReport:
    """Run the soak in `root` for `seconds` of inserts and faults, then heal, settle, check."""
    say(f"soak seed {seed}, {seconds:g} s")
    cluster = SoakCluster(root, disk_mb)
    try:
        kinds: tuple[str, ...] = KINDS
        if (why := cluster.mount_disks()) is not None:
            kinds = tuple(kind for kind in KINDS if kind != "fill")
            say(f"no fill faults in this run: {why}")
        await cluster.start()
        started = time.monotonic()
        workload = Workload(seed, started, rate)
        nemesis = Nemesis(cluster, workload, seed, kinds, started, say)
        supervisor = asyncio.create_task(supervise(cluster, started, say))
        until = started + seconds
        try:
            await asyncio.gather(workload.run(cluster.config, until), nemesis.run(until))
            say(
                f"[{since(started):6.1f} s] inserts: {len(workload.acked)} captures acknowledged"
                f" of {workload.captures} made, {workload.failed} batches failed"
                + (f" ({dict(workload.reasons.most_common(4))})" if workload.reasons else "")
            )
            healed = await recover(cluster, settle, started, say)
            settled_first = healed and await at_target(cluster, settle, say)
            bad = await read_all(cluster.config, workload)
            say(f"[{since(started):6.1f} s] read back {len(workload.acked)} captures")
            await explain(cluster, nemesis.faults, bad, say)
            # A read that met a bad copy had it checked and repaired: the targets are looked at
            # again once that is done.
            on_target = settled_first and await at_target(cluster, settle, say)
        finally:
            supervisor.cancel()
            await asyncio.gather(supervisor, return_exceptions=True)
        report = SoakReport(
            len(workload.acked),
            nemesis.faults,
            [v for v in bad if v.lost],
            [v for v in bad if not v.lost],
            on_target,
            crashed(cluster, say),
        )
    finally:
        await cluster.close()
    say(f"every file at its target: {'yes' if report.at_target else 'NO'}")
    say(report.line)
    say(report.by_kind)
    return report
