"""Running asyncio tasks on their own, and stopping them without swallowing the cancellation of
the task that stops them."""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


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


class Background:
    """Tasks run on their own, each kept until it ends (the event loop keeps only weak
    references to tasks) and all cancelled together when their owner stops."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, T]) -> "asyncio.Task[T]":
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def wait(self) -> None:
        """Wait for the tasks running now to end."""
        await asyncio.gather(*self._tasks, return_exceptions=True)
