"""The scheduler announces itself on the LAN, and an agent started without --scheduler finds it,
site crawler or streaming agent."""

import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from deploy.testing.cluster import write_cluster_config
from deploy.testing.ports import free_port
from deploy.testing.waits import answers, wait_until


def agents(url: str, kind: str = "agents") -> list[Any]:
    with urllib.request.urlopen(f"{url}/api/status", timeout=10) as answer:
        found: list[Any] = json.loads(answer.read())[kind]
        return found


def test_agents_without_scheduler_address_find_the_scheduler(tmp_path: Path) -> None:
    config = tmp_path / "dlweb.yaml"
    write_cluster_config(config)
    config.write_text(config.read_text().replace("name: test", f"name: t-{uuid.uuid4().hex[:12]}"))
    url = f"http://127.0.0.1:{free_port()}"
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with open(tmp_path / f"{name}.log", "ab") as log:
            command = [sys.executable, "-m", *args, "-c", str(config)]
            processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))

    def log(name: str) -> str:
        return (tmp_path / f"{name}.log").read_text(errors="replace")

    try:
        start("scheduler", "crawler.scheduler", "--data", str(tmp_path / "s"), "--listen", url[7:])
        wait_until(lambda: answers(f"{url}/api/status"), "the scheduler to answer")
        start("agent", "crawler.agent", "--name", "found", "--work", str(tmp_path / "a"))
        wait_until(lambda: bool(agents(url)), "the agent to join")
        assert [agent["name"] for agent in agents(url)] == ["found"]
        assert f"found _dlweb-scheduler._tcp at {url}" in log("agent")
        start("streamer", "crawler.stream.agent", "--name", "streamer")
        wait_until(lambda: bool(agents(url, "stream_agents")), "the streaming agent to join")
        assert [agent["name"] for agent in agents(url, "stream_agents")] == ["streamer"]
        assert f"found _dlweb-scheduler._tcp at {url}" in log("streamer")
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=20)
