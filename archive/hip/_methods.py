"""HIP methods typed once: the name of a call, the message its params are and the message it is
answered with, used by the caller (`call`, `notify`) and by the handler (`handler`) alike.

A message is a class with `from_json(data)`, which checks every field and raises a `bad_params`
RemoteError naming the call and the field at fault, and `to_json()` (`Fields` and `Message`
derive them from a dataclass's fields, archive/hip/_messages.py). A handler made by `handler`
receives the decoded params and returns the answer's message (or None for a notification).
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

from archive.hip._errors import RemoteError

if TYPE_CHECKING:
    from archive.hip._peer import Handler, Peer


class Wire(Protocol):
    """A message that goes over HIP as JSON."""

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self: ...

    def to_json(self) -> Any: ...


class Caller(Protocol):
    """Either end of a HIP connection: a master's Peer or a HipSlave."""

    async def call(
        self, method: str, params: Any = None, *, timeout: float | None = 30.0
    ) -> Any: ...

    async def notify(self, method: str, params: Any = None) -> None: ...


P = TypeVar("P", bound=Wire)
A = TypeVar("A", bound=Wire)


class Nothing:
    """The params of a call that takes none, or the answer of one that only acknowledges."""

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        return cls()

    def to_json(self) -> Any:
        return None


@dataclass(frozen=True)
class Method(Generic[P, A]):
    """One HIP call: its name, the type of its params and the type of its answer."""

    name: str
    params: type[P]
    answer: type[A]

    async def call(self, peer: Caller, params: P, *, timeout: float | None = 30.0) -> A:
        """Call the method on `peer`; its answer decoded (bad_params if the peer's is malformed)."""
        return self.answer.from_json(
            await peer.call(self.name, params.to_json(), timeout=timeout), self.name
        )

    async def notify(self, peer: Caller, params: P) -> None:
        await peer.notify(self.name, params.to_json())

    def handler(self, answer: "Callable[[Peer, P], Awaitable[A]]") -> "Handler":
        """The handler of a table of handlers that decodes the params, runs `answer` and encodes
        what it returns."""

        async def run(peer: "Peer", params: Any) -> Any:
            return (await answer(peer, self.params.from_json(params, self.name))).to_json()

        return run


def bad_params(method: str, message: str) -> RemoteError:
    """The error of params a call cannot take, naming the call."""
    return RemoteError("bad_params", f"{method}: {message}")


def as_object(data: Any, method: str) -> dict[str, Any]:
    """The params, which must be a JSON object."""
    if not isinstance(data, dict):
        raise bad_params(method, "params must be an object")
    return data


def field(data: dict[str, Any], key: str, kind: type, method: str) -> Any:
    """The value of a field that must be of type `kind` (a bool is no int)."""
    value = data.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise bad_params(method, f"{key!r} must be {kind.__name__}")
    return value
