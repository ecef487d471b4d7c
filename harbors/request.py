"""A request to a harbor, as the proxy hands it over."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HarborRequest:
    client: str  # the client's IP address: harbor settings are per client
    method: str
    host: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    # Every parameter in order, a name given twice kept twice (the CDX API's `filter`); empty
    # when the request was made without them: then `query`'s items.
    query_pairs: tuple[tuple[str, str], ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""
