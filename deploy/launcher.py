"""A whole cluster on one machine: a master, an index node and N storage nodes as background
processes on loopback, recorded in DIR/cluster.json so `dlweb down` can stop them."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive.config import load_config, write_new_config
from archive.errors import DlwebError

STATE_FILE = "cluster.json"
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


class LaunchError(DlwebError):
    """A process of the local cluster did not start or stop as it should."""


@dataclass(frozen=True)
class Plan:
    data: Path
    nodes: int
    replicas: int
    host: str
    port_base: int | None
    grace: float


def _free_port(host: str, kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _alive(pid: int, data: Path) -> bool:
    """Whether pid is still one of this cluster's processes (not a recycled number)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return str(data.resolve()).encode() in cmdline


def _read_state(data: Path) -> dict[str, Any]:
    try:
        state = json.loads((data / STATE_FILE).read_text())
    except FileNotFoundError:
        return {"processes": {}}
    except (OSError, ValueError) as exc:
        raise LaunchError(
            f"{data / STATE_FILE}: unreadable ({exc}); remove it to start anew"
        ) from None
    if not isinstance(state, dict) or not isinstance(state.get("processes"), dict):
        raise LaunchError(f"{data / STATE_FILE}: not a cluster record; remove it to start anew")
    return state


def _write_state(data: Path, state: dict[str, Any]) -> None:
    path = data / STATE_FILE
    temp = path.with_suffix(".part")
    with open(temp, "w") as out:
        json.dump(state, out, indent=2)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2) as answer:
        return json.load(answer)


def running(data: Path) -> list[str]:
    """Names of this cluster's processes that are running now."""
    state = _read_state(data)
    return [
        name
        for name, proc in state["processes"].items()
        if proc.get("pid") and _alive(proc["pid"], data)
    ]


def _config(plan: Plan) -> Path:
    """The cluster configuration, written once with a new secret and kept across restarts."""
    path = plan.data / "dlweb.yaml"
    if not path.exists():
        port = plan.port_base if plan.port_base is not None else _free_port(plan.host)
        write_new_config(
            path,
            multicast_port=_free_port(plan.host, socket.SOCK_DGRAM),
            extra={
                "master": f"http://{plan.host}:{port}",
                "lookup": "both",
                "multicast": {
                    "group_base": f"230.{random.randint(1, 254)}.{random.randint(0, 255)}.0",
                    "port": _free_port(plan.host, socket.SOCK_DGRAM),
                },
                "replication": {"default": plan.replicas},
            },
        )
    return path


def _commands(plan: Plan, config: Path, master_port: int, state: dict[str, Any]) -> dict[str, Any]:
    """What to run for each process, keeping the ports a previous start recorded."""
    known = state["processes"]
    taken = {master_port}

    def port(name: str, offset: int) -> int:
        if name in known and "port" in known[name]:
            chosen = int(known[name]["port"])
        elif plan.port_base is not None:
            chosen = plan.port_base + offset
        else:
            chosen = _free_port(plan.host)
            while chosen in taken:
                chosen = _free_port(plan.host)
        taken.add(chosen)
        return chosen

    data = str(plan.data.resolve())
    python = [sys.executable, "-m"]
    common = ["-c", str(config.resolve())]
    commands: dict[str, Any] = {
        "master": {
            "port": master_port,
            "command": [
                *python,
                "master",
                "--data",
                f"{data}/master",
                "--listen",
                f"{plan.host}:{master_port}",
                "--grace",
                str(plan.grace),
                *common,
            ],
        }
    }
    index_port = port("index", 1)
    commands["index"] = {
        "port": index_port,
        "command": [
            *python,
            "master.index",
            "--data",
            f"{data}/index",
            "--listen",
            f"{plan.host}:{index_port}",
            *common,
        ],
    }
    for i in range(1, plan.nodes + 1):
        name = f"node{i}"
        node_port = port(name, 1 + i)
        commands[name] = {
            "port": node_port,
            "command": [
                *python,
                "storage_node",
                "--root",
                f"{data}/{name}",
                "--listen",
                f"{plan.host}:{node_port}",
                "--id",
                name,
                *common,
            ],
        }
    return commands


def _spawn(data: Path, name: str, command: list[str]) -> int:
    logs = data / "logs"
    logs.mkdir(exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=data,
        )
    return process.pid


def _tail(data: Path, name: str, lines: int = 15) -> str:
    try:
        text = (data / "logs" / f"{name}.log").read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _wait_ready(plan: Plan, master: str, state: dict[str, Any]) -> dict[str, Any]:
    """Wait until the master sees every node alive and the index node; name what is missing."""
    deadline = time.monotonic() + READY_TIMEOUT
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        for name, proc in state["processes"].items():
            if not _alive(proc["pid"], plan.data):
                raise LaunchError(
                    f"{name} exited at start; its log ends with:\n{_tail(plan.data, name)}"
                )
        try:
            status = _get_json(f"{master}/status")
        except (urllib.error.URLError, OSError, ValueError):
            status = {}
        if len(_connected(status)) >= plan.nodes and status.get("index_nodes"):
            return status
        time.sleep(0.1)
    if not status:
        missing = "master"
    else:
        joined = _connected(status)
        lacking = [f"node{i}" for i in range(1, plan.nodes + 1) if f"node{i}" not in joined]
        missing = (lacking or ["index"])[0]
    raise LaunchError(
        f"{missing} is not ready after {READY_TIMEOUT:.0f} s; its log ends with:\n"
        f"{_tail(plan.data, missing)}"
    )


def _connected(status: dict[str, Any]) -> set[str]:
    return {n["id"] for n in status.get("nodes", []) if n.get("connected")}


def up(plan: Plan) -> dict[str, Any]:
    """Start the cluster (or find it running) and return the master's status once ready."""
    plan.data.mkdir(parents=True, exist_ok=True)
    already = running(plan.data)
    config_path = _config(plan)
    config = load_config(config_path)
    assert config.master is not None
    if already:
        if "master" in already:
            return {"already_running": already, **_get_json(f"{config.master}/status")}
        raise LaunchError(
            f"{', '.join(already)} still running from an earlier start; run dlweb down"
        )
    master_port = int(config.master.rsplit(":", 1)[1].rstrip("/"))
    state = _read_state(plan.data)
    commands = _commands(plan, config_path, master_port, state)
    state = {"config": str(config_path), "master": config.master, "processes": {}}
    try:
        for name, spec in commands.items():
            pid = _spawn(plan.data, name, spec["command"])
            state["processes"][name] = {**spec, "pid": pid}
            _write_state(plan.data, state)
        return _wait_ready(plan, config.master, state)
    except BaseException:
        down(plan.data)
        raise


def down(data: Path) -> list[str]:
    """Stop every recorded process: SIGTERM, then SIGKILL after a while. Returns the names."""
    state = _read_state(data)
    stopped = []
    for name, proc in state["processes"].items():
        pid = proc.get("pid")
        if pid and _alive(pid, data):
            os.kill(pid, signal.SIGTERM)
            stopped.append(name)
    deadline = time.monotonic() + STOP_TIMEOUT
    for proc in state["processes"].values():
        pid = proc.get("pid")
        while pid and _alive(pid, data):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        proc["pid"] = None
    if state["processes"]:
        _write_state(data, state)
    return stopped
