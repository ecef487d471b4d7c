"""What a harbor sends back, and what it may use of the proxy."""

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from archive.cluster import ClusterClient
from archive.reading import CaptureReader

from .settings import ClientSettings

log = logging.getLogger(__name__)

# Harbor pages are not archived resources: Memento clients must not negotiate them.
NO_NEGOTIATION = ("Link", '<http://mementoweb.org/terms/donotnegotiate>; rel="type"')
# Every harbor answer: read only as the type it says, and never inside another page's frame (an
# archived page must not dress a harbor's button up as its own).
GUARDS = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
)
# A header field a harbor may send: a token for its name, visible ASCII and spaces for its value.
_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\x20-\x7e\t]*")
_SHOWN = 100  # characters of a refused header value in the log


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str
    headers: list[tuple[str, str]] = field(default_factory=list)

    def all_headers(self) -> list[tuple[str, str]]:
        return [("Content-Type", self.content_type), NO_NEGOTIATION, *GUARDS, *self.headers]

    def checked(self, where: str) -> "Answer":
        """This answer, or a fault page in its place when one of its header fields cannot be
        sent as it is: a CR, LF, NUL or other control character, text beyond ASCII, or a grant
        of cross-origin access (the harbors give none: their answers hold the client's
        tokens). Such a field is a bug of ours, logged with `where` the request went (bounded),
        never sent."""
        for name, value in self.all_headers():
            if not _sendable(name, value):
                log.error(
                    "harbor answer to %r not sent: header %r: %r",
                    where[:_SHOWN],
                    name[:_SHOWN],
                    value[:_SHOWN],
                )
                return Answer(
                    500,
                    b"dlweb: this harbor made an answer it must not send; the fault is logged.\n",
                    "text/plain; charset=utf-8",
                )
        return self


def _sendable(name: str, value: str) -> bool:
    return (
        _NAME.fullmatch(name) is not None
        and _VALUE.fullmatch(value) is not None
        and not name.lower().startswith("access-control-allow-")
    )


class HarborContext(Protocol):
    """The proxy's parts a harbor uses."""

    settings: ClientSettings
    reader: CaptureReader
    live_allowed: bool
    ca_folder: Path  # mitmproxy's configuration folder, holding the CA certificate
    search_index: Path  # the search index folder, with the URL-key index of the CDX API
    scheduler: str  # the crawl scheduler's URL, "" when the proxy has none

    @property
    def client(self) -> ClusterClient: ...
