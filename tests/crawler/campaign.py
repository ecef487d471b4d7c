"""A crawl campaign as real processes for the tests: the scheduler, its site crawler agents and
streaming agents, each started on loopback against a real cluster and stopped with the campaign."""

import json
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy.testing.cluster import Cluster
from deploy.testing.ports import free_port
from deploy.testing.waits import wait_until


@dataclass
class Campaign:
    cluster: Cluster
    root: Path
    resolve: list[str] = field(default_factory=list)  # HOST:IP pins for the agents' orders
    scheduler: subprocess.Popen[bytes] | None = None
    port: int = 0
    agents: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_scheduler(self, *extra: str) -> None:
        self.port = self.port or free_port()
        resolve = [arg for host in self.resolve for arg in ("--resolve", host)]
        self.scheduler = self._spawn(
            "scheduler",
            "crawler.scheduler",
            "--data", str(self.root / "scheduler"),
            "--listen", f"127.0.0.1:{self.port}",
            "--delay", "0",
            "--agent-grace", "1",
            *resolve,
            *extra,
        )  # fmt: skip
        wait_until(self._answers, "the scheduler to answer")

    def _answers(self) -> bool:
        assert self.scheduler is not None
        if self.scheduler.poll() is not None:
            raise AssertionError((self.root / "scheduler.log").read_text())
        try:
            self.api("/api/status")
            return True
        except OSError:
            return False

    def start_agent(self, name: str) -> None:
        """A site crawler agent."""
        self.agents[name] = self._spawn(
            name,
            "crawler.agent",
            "--scheduler", self.url,
            "--name", name,
            "--work", str(self.root / name),
        )  # fmt: skip

    def start_stream_agent(self, name: str, *extra: str) -> None:
        self.agents[name] = self._spawn(
            name, "crawler.stream.agent", "--scheduler", self.url, "--name", name, *extra
        )

    def _spawn(self, name: str, module: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (the process holds it)
        return subprocess.Popen(
            [sys.executable, "-m", module, *args, "-c", str(self.cluster.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def log(self, name: str) -> str:
        """What a process of the campaign (an agent's name, or `scheduler`) wrote."""
        return (self.root / f"{name}.log").read_text(errors="replace")

    def api(self, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(self.url + path)
        if body is not None:
            request = urllib.request.Request(
                self.url + path,
                data=json.dumps(body).encode(),
                method="POST",
                headers={"Authorization": f"Bearer {self.cluster.config.write_token}"},
            )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        for process in [*self.agents.values(), self.scheduler]:
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def dlweb(campaign: Campaign, *args: str) -> subprocess.CompletedProcess[str]:
    """`dlweb ARGS` run against the campaign's scheduler."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "dlweb",
            *args,
            "--scheduler",
            campaign.url,
            "-c",
            str(campaign.cluster.config_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
