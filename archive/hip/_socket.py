"""What HIP needs from an aiohttp WebSocket, on the server side and the client side alike."""

from typing import Protocol

from aiohttp import WSMessage


class Socket(Protocol):
    """The part of web.WebSocketResponse and ClientWebSocketResponse that HIP uses."""

    @property
    def closed(self) -> bool: ...

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def receive(self, timeout: float | None = None) -> WSMessage: ...

    async def close(self, *, code: int = ..., message: bytes = ...) -> bool: ...


def close_reason(text: str) -> bytes:
    """A close message cut to the 123 bytes a WebSocket close frame can carry."""
    return text.encode("utf-8")[:123].decode("utf-8", "ignore").encode("utf-8")
