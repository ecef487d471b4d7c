"""Objects used with `async with`: opened on entry, closed on exit."""

import abc
from types import TracebackType
from typing import Self


class Opened(abc.ABC):
    """Used as `async with thing:`, which opens it, then closes it however the block ends."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Start what it runs; an entry that fails or is cancelled leaves nothing open."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop everything it started."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
