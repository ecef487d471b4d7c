"""A request to a harbor, as the proxy hands it over."""

from dataclasses import dataclass, field

SUFFIX = ".dlweb"


def is_harbor(host: str) -> bool:
    return host.lower().rstrip(".").endswith(SUFFIX)


@dataclass(frozen=True)
class HarborRequest:
    client: str  # the client's IP address: harbor settings are per client
    method: str
    host: str
    path: str
    # Every parameter in order, a name given twice kept twice (the CDX API's `filter`).
    query_pairs: tuple[tuple[str, str], ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""

    @property
    def query(self) -> dict[str, str]:
        """The parameters by name, each one's last value; a parameter with no value is left
        out, as if not given."""
        return {name: value for name, value in self.query_pairs if value}
