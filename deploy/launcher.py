"""A whole cluster on one machine: a master, an index node and N storage nodes as background
processes, recorded in DIR/cluster.json and DIR/run/*.pid so `dlweb down` can stop them."""

import json
import random
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archive.atomic import atomic_write
from archive.config import SEARCH_FOLDER, load_config, write_new_config
from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.master_answers import ClusterStatus, IndexStatus

from .ports import free_port
from .processes import RUN_DIR, is_ours, locked, log_file, pid_file, running_pid, spawn, stop, tail

STATE_FILE = "cluster.json"
CONFIG_FILE = "dlweb.yaml"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_NODES = 3
DEFAULT_REPLICAS = 2
DEFAULT_GRACE = 30.0
DEFAULT_PROXY_PORT = 8080
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


class LaunchError(DlwebError):
    """A process of the local cluster did not start or stop as it should."""


@dataclass(frozen=True)
class Plan:
    """What `dlweb up` was asked for; None keeps what an earlier start chose."""

    data: Path
    nodes: int | None = None
    replicas: int | None = None
    host: str | None = None
    port_base: int | None = None
    grace: float | None = None
    proxy_port: int | None = None  # 0 picks a free port
    timeout: float = READY_TIMEOUT
    search: bool | None = None  # also a search indexer; None: as an earlier start chose
    db: str | None = None  # the master's metadata URL, for a new cluster; None: SQLite in data


@dataclass
class Launch:
    """What `up` did: the processes it started, those it found running, the master's status."""

    data: Path
    master: str
    proxy: str
    direct: str = ""  # the root of the proxy's direct front, /web/TIMESTAMP/URL under it
    started: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def read_record(data: Path) -> dict[str, Any]:
    """DIR/cluster.json, or an empty record when the cluster was never started."""
    path = data / STATE_FILE
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return {"processes": {}}
    except (OSError, ValueError) as exc:
        raise LaunchError(f"{path}: unreadable ({exc}); remove it to start anew") from None
    if not isinstance(record, dict) or not isinstance(record.get("processes"), dict):
        raise LaunchError(f"{path}: not a cluster record; remove it to start anew")
    return record


def _write_record(data: Path, record: dict[str, Any]) -> None:
    atomic_write(data / STATE_FILE, (json.dumps(record, indent=2) + "\n").encode())


def write_config(
    path: Path, host: str, master_port: int, replicas: int, metadata: str | None = None
) -> None:
    """A new cluster configuration: generated secret, the master's URL, the replica count, and
    multicast groups and port of its own so two local clusters never answer each other; with
    `metadata`, where the master keeps its metadata."""
    write_new_config(
        path,
        extra={
            **({"metadata": metadata} if metadata is not None else {}),
            "master": f"http://{_url_host(host)}:{master_port}",
            "lookup": "both",
            "multicast": {
                "group_base": f"230.{random.randint(1, 254)}.{random.randint(0, 255)}.0",
                "port": free_port("", socket.SOCK_DGRAM),
            },
            "replication": {"default": replicas},
        },
    )


def _kept(option: str, given: object, recorded: object, data: Path) -> None:
    if given is not None and recorded is not None and given != recorded:
        raise LaunchError(
            f"the cluster in {data} was created with {option} {recorded}; it keeps its settings"
            " (use another --data for a new cluster)"
        )


@dataclass(frozen=True)
class _Settings:
    host: str
    master_port: int
    nodes: int
    replicas: int
    port_base: int | None
    grace: float
    proxy_port: int
    search: bool


def _node_count(plan: Plan, record: dict[str, Any]) -> int:
    """The storage nodes asked for; a cluster can gain nodes here, not lose them."""
    recorded_nodes = record.get("nodes")
    recorded_nodes = recorded_nodes if isinstance(recorded_nodes, int) else None
    nodes = plan.nodes or recorded_nodes or DEFAULT_NODES
    if recorded_nodes is not None and nodes < recorded_nodes:
        raise LaunchError(
            f"the cluster in {plan.data} has {recorded_nodes} storage nodes; --nodes can add nodes,"
            " not remove them (move a node's files away with dlweb admin drain)"
        )
    return nodes


def _asked_proxy_port(plan: Plan, record: dict[str, Any]) -> int:
    """The proxy's port as asked or recorded; 0 when a free port is still to be found."""
    recorded_proxy = record["processes"].get("proxy", {}).get("port")
    if plan.proxy_port:  # a port asked for
        return plan.proxy_port
    if isinstance(recorded_proxy, int):  # the port an earlier start chose
        return recorded_proxy
    # 0: a free port, found by _settings
    return DEFAULT_PROXY_PORT if plan.proxy_port is None else 0


def _new_cluster(plan: Plan, nodes: int, port_base: int | None) -> tuple[str, int, int]:
    """The host, master port and replicas of a cluster without a configuration yet."""
    replicas = plan.replicas or min(DEFAULT_REPLICAS, nodes)
    host = plan.host or DEFAULT_HOST
    if replicas > nodes:
        raise LaunchError(f"--replicas {replicas} is more than --nodes {nodes}")
    master_port = port_base if port_base is not None else free_port(host)
    return host, master_port, replicas


def _existing_cluster(plan: Plan, nodes: int, config_path: Path) -> tuple[str, int, int]:
    """The host, master port and replicas of a configured cluster; refuse options it cannot
    take."""
    data = plan.data
    config = load_config(config_path)
    if plan.db is not None and plan.db != config.metadata:
        raise LaunchError(
            f"the cluster in {data} keeps its metadata in {config.metadata or 'its master folder'};"
            " to move it, use dlweb admin migrate-metadata, then set metadata: in"
            f" {config_path}"
        )
    if config.master is None:
        raise LaunchError(
            f"{config_path} has no master key; add one (master: http://127.0.0.1:PORT)"
            " or use another --data"
        )
    url = urlsplit(config.master)
    if url.hostname is None or url.port is None:
        raise LaunchError(f"{config_path}: master {config.master} names no host and port")
    _kept("--host", plan.host, url.hostname, data)
    _kept("--replicas", plan.replicas, config.replication.default, data)
    if config.replication.default > nodes:
        raise LaunchError(
            f"{config_path} asks for {config.replication.default} replicas and --nodes is {nodes}"
        )
    return url.hostname, url.port, config.replication.default


def _settings(plan: Plan, record: dict[str, Any], config_path: Path) -> _Settings:
    """The cluster's settings: an existing cluster's own, else the plan's; refuse conflicts."""
    nodes = _node_count(plan, record)
    _kept("--port-base", plan.port_base, record.get("port_base"), plan.data)
    port_base = plan.port_base if plan.port_base is not None else record.get("port_base")
    grace = float(plan.grace or record.get("grace") or DEFAULT_GRACE)
    search = plan.search if plan.search is not None else "search" in record["processes"]
    proxy_port = _asked_proxy_port(plan, record)
    if not config_path.exists():
        host, master_port, replicas = _new_cluster(plan, nodes, port_base)
    else:
        host, master_port, replicas = _existing_cluster(plan, nodes, config_path)
    proxy_port = proxy_port or free_port(host)
    return _Settings(host, master_port, nodes, replicas, port_base, grace, proxy_port, search)


def _port_picker(settings: _Settings, known: dict[str, Any]) -> Callable[[str, int], int]:
    """A function giving each process its port: the one an earlier start recorded, else
    port_base + offset, else a free port no other process of this start took."""
    taken = {settings.master_port}

    def port(name: str, offset: int) -> int:
        recorded = known.get(name, {}).get("port")
        if isinstance(recorded, int):
            chosen = recorded
        elif settings.port_base is not None:
            chosen = settings.port_base + offset
        else:
            chosen = free_port(settings.host)
            while chosen in taken:
                chosen = free_port(settings.host)
        taken.add(chosen)
        return chosen

    return port


def _python(*args: str) -> list[str]:
    """The command line running a module of dlweb with this Python."""
    return [sys.executable, "-m", *args]


def _listen(host: str, port: int) -> list[str]:
    return ["--listen", f"{host}:{port}"]


def _master_spec(root: Path, settings: _Settings, config: list[str]) -> dict[str, Any]:
    port = settings.master_port
    return {
        "port": port,
        "command": _python(
            "master",
            "--data",
            str(root / "master"),
            *_listen(settings.host, port),
            "--grace",
            f"{settings.grace:g}",
            *config,
        ),
    }


def _index_spec(root: Path, host: str, port: int, config: list[str]) -> dict[str, Any]:
    return {
        "port": port,
        "command": _python(
            "master.index", "--data", str(root / "index"), *_listen(host, port), *config
        ),
    }


def _node_spec(root: Path, name: str, host: str, port: int, config: list[str]) -> dict[str, Any]:
    return {
        "port": port,
        "command": _python(
            "storage_node", "--root", str(root / name), *_listen(host, port), *config, "--id", name
        ),
    }


def _proxy_spec(root: Path, host: str, port: int, direct: int, config: list[str]) -> dict[str, Any]:
    """The proxy, and its direct front on port `direct` (archival URLs without a proxy)."""
    return {
        "port": port,
        "direct": direct,
        "command": _python(
            "proxy",
            "--data",
            str(root / "proxy"),
            *_listen(host, port),
            "--direct",
            f"{host}:{direct}",
            *config,
        ),
    }


def _search_spec(root: Path, config: list[str]) -> dict[str, Any]:
    # No port: it only follows the master. Its folder is the one the proxy searches.
    return {
        "port": None,
        "command": _python(
            "dlweb", "search-indexer", "--index", str(root / SEARCH_FOLDER), *config
        ),
    }


def _commands(
    data: Path, settings: _Settings, config_path: Path, record: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The command and port of every process, keeping the ports an earlier start recorded."""
    port = _port_picker(settings, record["processes"])
    host = settings.host
    root = data.resolve()
    config = ["-c", str(config_path.resolve())]
    commands = {"master": _master_spec(root, settings, config)}
    commands["index"] = _index_spec(root, host, port("index", 1), config)
    for i in range(1, settings.nodes + 1):
        name = f"node{i}"
        commands[name] = _node_spec(root, name, host, port(name, 1 + i), config)
    recorded = record["processes"].get("proxy", {}).get("direct")
    direct = recorded if isinstance(recorded, int) else free_port(host)
    commands["proxy"] = _proxy_spec(root, host, settings.proxy_port, direct, config)
    if settings.search:
        commands["search"] = _search_spec(root, config)
    return commands


def proxy_url(host: str, port: int) -> str:
    return f"http://{_url_host(host)}:{port}"


def _record_proxy(config_path: Path, url: str) -> None:
    """Add or correct the `proxy` key of the configuration, keeping every other line."""
    if load_config(config_path).proxy == url:
        return
    lines = [
        line
        for line in config_path.read_text(encoding="utf-8").splitlines()
        if not line.startswith("proxy:")
    ]
    atomic_write(config_path, ("\n".join([*lines, f"proxy: {url}"]) + "\n").encode())


def _proxy_answers(proxy: str) -> bool:
    """Whether the proxy answers a request for a harbor (any HTTP answer will do)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    try:
        with opener.open("http://api.dlweb/date", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _get_json(url: str) -> Any:
    """The JSON at url, or None when nothing answers it with JSON yet."""
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return json.load(answer)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def not_ready(status: Any, index: Any, nodes: list[str]) -> str | None:
    """The first process that is not ready, judged from the master's and index's /status."""
    try:
        cluster = ClusterStatus.from_json(status, "/status")
    except RemoteError:
        return "master"
    known = {node.id: node for node in cluster.nodes}
    for name in nodes:
        node = known.get(name)
        if node is None or not node.connected or node.state in ("down", "dead"):
            return name
    try:
        link = IndexStatus.from_json(index, "/status").master
    except RemoteError:
        return "index"
    return "index" if not link.connected or not cluster.index_nodes else None


def _wait_ready(
    data: Path, master: str, index: str, proxy: str, pids: dict[str, int], timeout: float
) -> dict[str, Any]:
    """Wait until the master has every storage node, and the index node and proxy answer."""
    nodes = [name for name in pids if name.startswith("node")]
    deadline = time.monotonic() + timeout
    while True:
        for name, pid in pids.items():
            if not is_ours(pid, data):
                raise LaunchError(
                    f"{name} exited at start; the end of {log_file(data, name)}:\n"
                    f"{tail(data, name)}"
                )
        status = _get_json(f"{master}/status")
        missing = not_ready(status, _get_json(f"{index}/status"), nodes)
        if missing is None and not _proxy_answers(proxy):
            missing = "proxy"
        if missing is None:
            assert isinstance(status, dict)
            return status
        if time.monotonic() > deadline:
            raise LaunchError(
                f"{missing} is not ready after {timeout:g} s; the end of {log_file(data, missing)}:"
                f"\n{tail(data, missing)}"
            )
        time.sleep(0.1)


def _pid(data: Path, name: str, record: dict[str, Any]) -> int | None:
    """The running pid of a process: its pid file, else what cluster.json recorded."""
    pid = running_pid(data, name)
    if pid is None:
        recorded = record["processes"].get(name)
        recorded = recorded.get("pid") if isinstance(recorded, dict) else None
        if isinstance(recorded, int) and is_ours(recorded, data):
            pid = recorded
    return pid


def up(plan: Plan) -> Launch:
    """Start what is not running yet, wait until the cluster is ready; stop what it started if
    the cluster does not become ready."""
    data = plan.data
    data.mkdir(parents=True, exist_ok=True)
    with locked(data):
        old = read_record(data)
        config_path = data / CONFIG_FILE
        settings = _settings(plan, old, config_path)
        if not config_path.exists():
            write_config(
                config_path, settings.host, settings.master_port, settings.replicas, plan.db
            )
        proxy = proxy_url(settings.host, settings.proxy_port)
        _record_proxy(config_path, proxy)
        config = load_config(config_path)
        assert config.master is not None
        master = config.master.rstrip("/")
        commands = _commands(data, settings, config_path, old)
        direct = proxy_url(settings.host, commands["proxy"]["direct"])
        launch = Launch(data, master, proxy, f"{direct}/web")
        processes: dict[str, dict[str, Any]] = {
            name: {
                **spec,
                "pid": _pid(data, name, old),
                "pid_file": str(pid_file(data, name).resolve()),
                "log": str(log_file(data, name).resolve()),
            }
            for name, spec in commands.items()
        }
        record: dict[str, Any] = {
            "config": str(config_path.resolve()),
            "master": master,
            "host": settings.host,
            "nodes": settings.nodes,
            "port_base": settings.port_base,
            "grace": settings.grace,
            "processes": processes,
        }
        launch.already = [name for name in commands if processes[name]["pid"] is not None]
        try:
            for name, spec in commands.items():
                if processes[name]["pid"] is None:
                    processes[name]["pid"] = spawn(data, name, spec["command"])
                    launch.started.append(name)
                    _write_record(data, record)
            _write_record(data, record)
            index = f"http://{_url_host(settings.host)}:{commands['index']['port']}"
            pids = {name: proc["pid"] for name, proc in processes.items()}
            launch.status = _wait_ready(data, master, index, proxy, pids, plan.timeout)
        except BaseException:
            # A process whose spawn was interrupted is found by its pid file.
            ours = [name for name in commands if name not in launch.already]
            pids = {name: processes[name]["pid"] or running_pid(data, name) for name in ours}
            stop(data, {name: pid for name, pid in pids.items() if pid is not None}, STOP_TIMEOUT)
            for name in ours:
                processes[name]["pid"] = None
            _write_record(data, record)
            raise
        return launch


def down(data: Path) -> list[str]:
    """Stop every process of the cluster in data; the names of those that were running."""
    if not data.exists():
        return []
    with locked(data):
        record = read_record(data)
        names = list(record["processes"])
        names += sorted(
            path.stem for path in (data / RUN_DIR).glob("*.pid") if path.stem not in names
        )
        pids = {name: pid for name in names if (pid := _pid(data, name, record)) is not None}
        stopped = stop(data, pids, STOP_TIMEOUT)
        for path in (data / RUN_DIR).glob("*.pid"):
            path.unlink(missing_ok=True)
        if (data / STATE_FILE).exists():
            for proc in record["processes"].values():
                if isinstance(proc, dict):
                    proc["pid"] = None
            _write_record(data, record)
        return stopped
