"""NameLocks: batches of names held exclusively, first come first served, cancellation safe."""

import asyncio

import pytest

from storage_node.name_locks import NameLocks


async def _hold_until(
    locks: NameLocks, names: list[str], release: asyncio.Event, log: list[str], tag: str
) -> None:
    async with locks.hold(names):
        log.append(f"{tag} in")
        await release.wait()
        log.append(f"{tag} out")


async def _settle() -> None:
    """Let every task that can run do so (a few turns of the loop)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_overlapping_batches_wait_and_disjoint_ones_do_not() -> None:
    locks = NameLocks()
    log: list[str] = []
    first, second, third = asyncio.Event(), asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold_until(locks, ["x", "y"], first, log, "a"))
    await _settle()
    b = asyncio.create_task(_hold_until(locks, ["y", "z"], second, log, "b"))
    c = asyncio.create_task(_hold_until(locks, ["w"], third, log, "c"))
    await _settle()
    assert log == ["a in", "c in"]
    first.set()
    await _settle()
    assert log == ["a in", "c in", "a out", "b in"]
    second.set()
    third.set()
    await asyncio.gather(a, b, c)


async def _c_behind_b_behind_a(
    locks: NameLocks, log: list[str], release: dict[str, asyncio.Event]
) -> list[asyncio.Task[None]]:
    """a holds x; b waits for x and y; c wants only y, which is free, but b has reserved it."""
    tasks = []
    for tag, names in (("a", ["x"]), ("b", ["x", "y"]), ("c", ["y"])):
        tasks.append(asyncio.create_task(_hold_until(locks, names, release[tag], log, tag)))
        await _settle()
    assert log == ["a in"]
    return tasks


async def test_a_waiting_batch_is_not_overtaken_by_a_later_one_on_its_names() -> None:
    locks = NameLocks()
    log: list[str] = []
    release = {tag: asyncio.Event() for tag in "abc"}
    a, b, c = await _c_behind_b_behind_a(locks, log, release)
    release["a"].set()
    await _settle()
    assert log == ["a in", "a out", "b in"]
    release["b"].set()
    await _settle()
    assert log[-2:] == ["b out", "c in"]
    release["c"].set()
    await asyncio.gather(a, b, c)


async def test_names_repeated_in_one_batch_are_held_once() -> None:
    locks = NameLocks()
    async with locks.hold(["x", "x", "y"]):
        pass
    async with asyncio.timeout(1):
        async with locks.hold(["x"]):
            pass


async def test_a_waiter_cancelled_gives_up_its_reservation() -> None:
    locks = NameLocks()
    log: list[str] = []
    release = {tag: asyncio.Event() for tag in "abc"}
    a, b, c = await _c_behind_b_behind_a(locks, log, release)
    b.cancel()
    await _settle()
    assert log == ["a in", "c in"]
    with pytest.raises(asyncio.CancelledError):
        await b
    release["a"].set()
    release["c"].set()
    await asyncio.gather(a, c)
    async with asyncio.timeout(1):
        async with locks.hold(["x", "y"]):
            pass


async def test_a_waiter_cancelled_right_after_its_grant_lets_its_names_go() -> None:
    locks = NameLocks()
    log: list[str] = []
    async with locks.hold(["x"]):
        b = asyncio.create_task(_hold_until(locks, ["x"], asyncio.Event(), log, "b"))
        await _settle()
    # Leaving the block granted x to b, which is cancelled before it runs again.
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    assert log == []
    async with asyncio.timeout(1):
        async with locks.hold(["x"]):
            pass


async def test_a_failure_inside_the_block_lets_the_names_go() -> None:
    locks = NameLocks()
    with pytest.raises(RuntimeError):
        async with locks.hold(["x"]):
            raise RuntimeError("boom")
    async with asyncio.timeout(1):
        async with locks.hold(["x"]):
            pass
