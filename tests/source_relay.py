"""A TCP relay that makes a program on loopback another client: connections to the relay's port
reach the target from a loopback address of the test's choosing (127.0.0.2, ...).

The proxy keeps its settings per client address, and a browser cannot choose the address it
connects from; pointed at a relay, it can.
"""

import contextlib
import socket
import threading
from types import TracebackType
from typing import Self

CHUNK = 64 * 1024


class SourceRelay:
    def __init__(self, target: tuple[str, int], source: str) -> None:
        self.target = target
        self.source = source
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="relay", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Shut down first: closing alone does not wake a thread waiting in accept().
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in self._open:
                sock.close()
        self._thread.join()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, source_address=(self.source, 0))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for reader, writer in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(reader, writer), daemon=True).start()


def _pump(reader: socket.socket, writer: socket.socket) -> None:
    """Copy one direction until it ends, then end the other side's writing."""
    try:
        while data := reader.recv(CHUNK):
            writer.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.shutdown(socket.SHUT_WR)
