"""The end of the time a piece of work has, looked at between its steps: for work nothing can
stop from outside (a CDX answer in our own Python, a parser reading a hostile document), which
then stops itself with the error its caller understands."""

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

CHECK_EVERY = 1024  # items of a long loop between two looks at the clock


class Deadline:
    """`seconds` from now; `overrun(seconds)` makes the error raised once it is past."""

    def __init__(self, seconds: float, overrun: Callable[[float], Exception]) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self._overrun = overrun

    def check(self, *_: object) -> None:
        """Raise the overrun error once the deadline passed (takes and ignores a callback's
        arguments, so that it can be one)."""
        if time.monotonic() > self.end:
            raise self.overrun()

    def overrun(self) -> Exception:
        return self._overrun(self.seconds)

    def watch(self, items: Iterable[T]) -> Iterator[T]:
        """The items, the clock looked at every CHECK_EVERY of them."""
        for count, item in enumerate(items):
            if count % CHECK_EVERY == 0:
                self.check()
            yield item
