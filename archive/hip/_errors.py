"""The two exceptions HIP raises: failures reported by the remote end and failures seen locally."""

from archive.errors import DlwebError


class HipError(DlwebError):
    """A local failure: not connected, connection lost, authentication refused, call timed out."""


class RemoteError(DlwebError):
    """The remote end answered a call with an error frame.

    A handler may raise it itself to choose the code sent back, e.g.
    ``raise RemoteError("bad_params", "delay must be a number")``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
