"""A request to a harbor, as the proxy hands it over."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HarborRequest:
    client: str  # the client's IP address: harbor settings are per client
    method: str
    host: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""
