"""Stopping asyncio tasks without swallowing the cancellation of the task that stops them."""

import asyncio
from typing import Any


async def cancel_and_wait(task: "asyncio.Task[Any]") -> None:
    """Cancel `task` and wait until it has ended. Suppressing CancelledError around the wait
    would also swallow a cancellation of the waiting task itself, which then runs on: a
    connection loop stopped at that moment never stops."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
