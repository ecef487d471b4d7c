"""cancel_and_wait: the stopped task ends, and a cancellation of the stopper goes through."""

import asyncio

import pytest

from archive.tasks import cancel_and_wait


async def test_the_task_is_cancelled_and_waited_for() -> None:
    inner = asyncio.create_task(asyncio.sleep(60))
    await cancel_and_wait(inner)
    assert inner.cancelled()


async def test_a_cancellation_of_the_waiting_task_is_not_swallowed() -> None:
    started, waiting = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            waiting.set()
            await asyncio.sleep(0.2)  # cleaning up while the stopper is itself cancelled
            raise

    async def stopper() -> str:
        inner = asyncio.create_task(slow_to_stop())
        await started.wait()
        await cancel_and_wait(inner)
        return "went on after being cancelled"

    outer = asyncio.create_task(stopper())
    await waiting.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
