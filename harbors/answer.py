"""What a harbor sends back, and what it may use of the proxy."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from archive.cluster import ClusterClient
from archive.reading import CaptureReader

from .settings import ClientSettings

# Harbor pages are not archived resources: Memento clients must not negotiate them.
NO_NEGOTIATION = ("Link", '<http://mementoweb.org/terms/donotnegotiate>; rel="type"')


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str
    headers: list[tuple[str, str]] = field(default_factory=list)

    def all_headers(self) -> list[tuple[str, str]]:
        return [("Content-Type", self.content_type), NO_NEGOTIATION, *self.headers]


class HarborContext(Protocol):
    """The proxy's parts a harbor uses."""

    settings: ClientSettings
    reader: CaptureReader
    live_allowed: bool
    ca_folder: Path  # mitmproxy's configuration folder, holding the CA certificate
    search_index: Path  # the search index folder, with the URL-key index of the CDX API

    @property
    def client(self) -> ClusterClient: ...
