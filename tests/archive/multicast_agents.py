"""Runs one multicast lookup responder in a process of its own, for the multicast tests.

Usage: multicast_agents.py PORT GROUP_BASE SECRET_HEX NODE_ID ADDRESS HELD_FILE JOIN
       [--stale] [--wait SECONDS]

HELD_FILE lists the files the responder holds, one "kind name" pair a line; JOIN is "all" or
"held"; with --stale every file held is a stale copy, answered after half of --wait. Prints
"READY groups=N" once listening, serves until its standard input closes, then prints
"requests=N answers=N late=N rejected=N" and exits.
"""

import argparse
import asyncio
import sys
from pathlib import Path

from archive.multicast import MulticastSettings, Responder


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port", type=int)
    parser.add_argument("group_base")
    parser.add_argument("secret_hex")
    parser.add_argument("node_id")
    parser.add_argument("address")
    parser.add_argument("held_file", type=Path)
    parser.add_argument("join", choices=["all", "held"])
    parser.add_argument("--stale", action="store_true")
    parser.add_argument("--wait", type=float, default=MulticastSettings.wait)
    return parser.parse_args()


def read_held(path: Path) -> set[tuple[str, str]]:
    held = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            kind, name = line.split()
            held.add((kind, name))
    return held


async def serve(arguments: argparse.Namespace) -> None:
    settings = MulticastSettings(
        group_base=arguments.group_base,
        port=arguments.port,
        join=arguments.join,
        wait=arguments.wait,
    )
    held = read_held(arguments.held_file)
    responder = Responder(
        settings,
        bytes.fromhex(arguments.secret_hex),
        arguments.node_id,
        arguments.address,
        lambda kind, name: (kind, name) in held,
        lambda kind, name: arguments.stale,
    )
    await responder.start()
    if arguments.join == "held":
        responder.join_groups(int(name[:2], 16) for _, name in held)
    print(f"READY groups={len(responder.groups)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.buffer.read)
    await responder.close()
    print(
        f"requests={responder.requests} answers={responder.answers} late={responder.late}"
        f" rejected={responder.rejected}",
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(serve(parse_arguments()))
