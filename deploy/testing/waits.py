"""Waiting for something to happen: one polling loop for every wait of the tests and benchmarks.

`wait_until` polls a condition from blocking code, `eventually` from a coroutine. Both fail with
`NotReady`, naming what did not happen, once `timeout` seconds have passed, or at once when the
process meant to bring it about has exited; what `details` returns (a log, the last status
seen) ends the message. `answers` is the probe of a server that answers HTTP.
"""

import asyncio
import subprocess
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar

INTERVAL = 0.05
P = ParamSpec("P")
C = TypeVar("C")
R = TypeVar("R")


class NotReady(RuntimeError):
    """What was awaited did not happen in time, or the process meant to bring it about exited.

    A RuntimeError, as a starter that fails to start raises: the benchmarks report it as a
    failed run, the soak as a failed restart."""


@dataclass
class _Watch:
    """One wait: what it awaits, its deadline, the process it watches and the `details` that end
    its failure's message."""

    what: str
    timeout: float = 30.0
    _: KW_ONLY
    interval: float = INTERVAL
    process: "subprocess.Popen[Any] | None" = None
    details: Callable[[], str] | None = None
    started: float = field(init=False, default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def check_running(self) -> None:
        """Raise NotReady if the process has exited: what it was to bring about will not come
        (and whatever answers in its place, on its port, is not it)."""
        if self.process is not None and (code := self.process.poll()) is not None:
            self._fail(f"{_name(self.process)} exited with status {code} waiting for {self.what}")

    def check_deadline(self) -> None:
        if self.elapsed() > self.timeout:
            self._fail(f"timed out after {self.timeout:g} s waiting for {self.what}")

    def _fail(self, message: str) -> NoReturn:
        if self.details is not None:
            message += f":\n{self.details()}"
        raise NotReady(message)


def _name(process: "subprocess.Popen[Any]") -> str:
    args = process.args
    if isinstance(args, (list, tuple)):
        return " ".join(str(arg) for arg in args[:3])
    return str(args)


def _taking(
    options: Callable[P, _Watch],
) -> Callable[[Callable[[C, _Watch], R]], Callable[Concatenate[C, P], R]]:
    """Makes a wait's loop callable as `loop(condition, *options)`: both waits take the options
    `_Watch` declares."""

    def wrap(loop: Callable[[C, _Watch], R]) -> Callable[Concatenate[C, P], R]:
        def wait(condition: C, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return loop(condition, options(*args, **kwargs))

        wait.__name__ = wait.__qualname__ = loop.__name__
        wait.__doc__ = loop.__doc__
        return wait

    return wrap


@_taking(_Watch)
def wait_until(condition: Callable[[], bool], watch: _Watch) -> float:
    """`wait_until(condition, what, timeout=30.0, *, interval, process, details)`: poll
    `condition` every `interval` seconds until it holds; the seconds that took.

    Fails with NotReady naming `what` after `timeout` seconds, or as soon as `process` (when
    given), which must run all along, has exited; `details()` (a log, the last status seen)
    then ends the message."""
    while True:
        watch.check_running()
        if condition():
            return watch.elapsed()
        watch.check_deadline()
        time.sleep(watch.interval)


@_taking(_Watch)
async def eventually(condition: Callable[[], Awaitable[bool]], watch: _Watch) -> float:
    """`wait_until` for a coroutine: awaits `condition()` every `interval` seconds, sleeping in
    the event loop in between."""
    while True:
        watch.check_running()
        if await condition():
            return watch.elapsed()
        watch.check_deadline()
        await asyncio.sleep(watch.interval)


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server answers 200 at `url` now."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except OSError:
        return False
