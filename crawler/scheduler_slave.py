"""Running a small agent of the scheduler (a connectivity agent, a feed aggregator) as a HIP
slave of it, until SIGINT or SIGTERM: its scheduler found as the crawler agent finds it, its
name `ROLE-PID` unless given, and a background task beside its handlers if it has one."""

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from archive.config import load_config
from archive.discovery import SCHEDULER, SCHEDULER_HOW, address
from archive.hip import Handler, HipSlave, hip_url

__all__ = ["serve_slave"]


async def serve_slave(
    args: argparse.Namespace,
    role: str,
    handlers: Mapping[str, Handler],
    work: Callable[[HipSlave], Coroutine[Any, Any, None]] | None = None,
) -> None:
    config = load_config(args.config)
    scheduler = await address(SCHEDULER, args.scheduler, config, SCHEDULER_HOW)
    slave = HipSlave(
        hip_url(scheduler),
        config.secret,
        args.name or f"{role}-{os.getpid()}",
        handlers,
        role=role,
        proxy=args.hip_proxy or config.hip_proxy,
    )
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    await slave.start()
    task = asyncio.create_task(work(slave)) if work is not None else None
    try:
        await stopped.wait()
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await slave.stop()
