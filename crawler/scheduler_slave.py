"""An agent of the scheduler as a HIP slave of it, until SIGINT or SIGTERM (scheduler_slave); a
small agent (a connectivity agent, a feed aggregator) served whole by serve_slave: its scheduler
found as the other agents find it, its name `ROLE-PID` unless given, and a background task beside
its handlers if it has one."""

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

from archive.config import ClusterConfig, load_config
from archive.discovery import SCHEDULER, SCHEDULER_HOW, address
from archive.hip import Handler, HipSlave, hip_url

__all__ = ["scheduler_slave", "serve_slave"]


@contextlib.asynccontextmanager
async def scheduler_slave(
    args: argparse.Namespace,
    config: ClusterConfig,
    name: str,
    role: str,
    handlers: Mapping[str, Handler],
    stopped: asyncio.Event,
) -> AsyncIterator[HipSlave]:
    """A started HIP slave of the scheduler at `args.scheduler`, with SIGINT and SIGTERM setting
    `stopped`; it is stopped on leaving."""
    slave = HipSlave(
        hip_url(args.scheduler),
        config.secret,
        name,
        handlers,
        role=role,
        proxy=args.hip_proxy or config.hip_proxy,
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    await slave.start()
    try:
        yield slave
    finally:
        await slave.stop()


async def serve_slave(
    args: argparse.Namespace,
    role: str,
    handlers: Mapping[str, Handler],
    work: Callable[[HipSlave], Coroutine[Any, Any, None]] | None = None,
) -> None:
    """A small agent, served until stopped."""
    config = load_config(args.config)
    args.scheduler = await address(SCHEDULER, args.scheduler, config, SCHEDULER_HOW)
    name = args.name or f"{role}-{os.getpid()}"
    stopped = asyncio.Event()
    async with scheduler_slave(args, config, name, role, handlers, stopped) as slave:
        task = asyncio.create_task(work(slave)) if work is not None else None
        try:
            await stopped.wait()
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
