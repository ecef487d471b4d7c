"""Runs one HIP master or slave in a process of its own, for the HIP tests.

Usage:
  hip_agents.py master --port PORT --name NAME --secret SECRET [--max-frame N] [--redirect ROLE=URL]
  hip_agents.py slave --url URL --name NAME --secret SECRET [--role ROLE]

A master listens on 127.0.0.1:PORT, serves HIP at /hip and a status page at /, and prints
"READY PORT" once listening. A slave prints "READY MASTER_NAME" once connected, after asking the
master who it is. Both serve until their standard input closes.
"""

import argparse
import asyncio
import os
import sys
from typing import Any

from aiohttp import web

from archive.hip import Handler, HipMaster, HipSlave, Peer, RemoteError


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["master", "slave"])
    parser.add_argument("--name", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--port", type=int)
    parser.add_argument("--max-frame", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--redirect", action="append", default=[], metavar="ROLE=URL")
    parser.add_argument("--url")
    parser.add_argument("--role", default="storage")
    return parser.parse_args()


async def stdin_closed() -> None:
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.buffer.read)


class RecordingMaster:
    """A master whose handlers let the tests see what happened inside it."""

    def __init__(self, arguments: argparse.Namespace) -> None:
        self.name: str = arguments.name
        self.recorded: dict[str, list[Any]] = {}
        self.connected: list[str] = []
        self.handled_for: set[str] = set()
        redirects = dict(item.split("=", 1) for item in arguments.redirect)
        handlers: dict[str, Handler] = {
            "echo": self.echo,
            "sleep_echo": self.sleep_echo,
            "fail": self.fail,
            "repeat": self.repeat,
            "record": self.record,
            "recorded": self.get_recorded,
            "whoami": self.whoami,
            "call_slave": self.call_slave,
            "redirect_me": self.redirect_me,
            "stats": self.stats,
        }
        self.master = HipMaster(
            arguments.secret.encode(),
            self.name,
            {method: self.counted(handler) for method, handler in handlers.items()},
            on_connect=self.on_connect,
            redirect=lambda name, role: redirects.get(role),
            max_frame=arguments.max_frame,
        )

    def counted(self, handler: Handler) -> Handler:
        """Wrap a handler so that stats can tell for which slaves any handler ran."""

        async def run(peer: Peer, params: Any) -> Any:
            self.handled_for.add(peer.name)
            return await handler(peer, params)

        return run

    async def on_connect(self, peer: Peer) -> None:
        self.connected.append(peer.name)

    async def echo(self, peer: Peer, params: Any) -> Any:
        return params

    async def sleep_echo(self, peer: Peer, params: Any) -> Any:
        if not isinstance(params, dict) or not isinstance(params.get("delay"), int | float):
            raise RemoteError("bad_params", "sleep_echo needs {'delay': seconds, 'value': any}")
        await asyncio.sleep(params["delay"])
        return params.get("value")

    async def fail(self, peer: Peer, params: Any) -> Any:
        raise ValueError(f"boom: {params}")

    async def repeat(self, peer: Peer, params: Any) -> Any:
        return "x" * int(params)

    async def record(self, peer: Peer, params: Any) -> None:
        self.recorded.setdefault(str(params["key"]), []).append(params["value"])

    async def get_recorded(self, peer: Peer, params: Any) -> Any:
        return self.recorded.get(str(params), [])

    async def whoami(self, peer: Peer, params: Any) -> Any:
        return {"master": self.name, "slave": peer.name, "role": peer.role, "format": peer.format}

    async def call_slave(self, peer: Peer, params: Any) -> Any:
        target = self.master.slaves[params["slave"]]
        return await target.call(params["method"], params.get("params"))

    async def redirect_me(self, peer: Peer, params: Any) -> None:
        await self.master.redirect_slave(peer.name, params["url"])

    async def stats(self, peer: Peer, params: Any) -> Any:
        return {"connected": self.connected, "handled_for": sorted(self.handled_for)}

    async def status_page(self, request: web.Request) -> web.Response:
        return web.Response(text=f"HIP master {self.name}: {len(self.master.slaves)} slaves\n")

    async def serve(self, port: int) -> None:
        app = web.Application()
        app.router.add_get("/", self.status_page)
        self.master.add_routes(app)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print(f"READY {port}", flush=True)
        await stdin_closed()
        await runner.cleanup()


async def slave_info(peer: Peer, params: Any) -> Any:
    return {"pid": os.getpid(), "params": params}


async def run_slave(arguments: argparse.Namespace) -> None:
    slave = HipSlave(
        arguments.url,
        arguments.secret.encode(),
        arguments.name,
        {"slave_info": slave_info},
        role=arguments.role,
    )
    await slave.start()
    answer = await slave.call("whoami", timeout=10.0)
    print(f"READY {answer['master']}", flush=True)
    await stdin_closed()
    await slave.stop()


def main() -> None:
    arguments = parse_arguments()
    if arguments.kind == "master":
        asyncio.run(RecordingMaster(arguments).serve(arguments.port))
    else:
        asyncio.run(run_slave(arguments))


if __name__ == "__main__":
    main()
