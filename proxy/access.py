"""Which clients may use the proxy: allowed networks (loopback by default). No open proxy."""

import ipaddress
from collections.abc import Sequence

from archive.errors import ConfigError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
KNOWN_ADDRESSES = 65_536


def parse_networks(texts: Sequence[str]) -> list[Network]:
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ConfigError(f"{text!r} is not a network such as 10.0.0.0/8 or ::1/128") from None
    return networks


class Access:
    def __init__(self, networks: Sequence[Network]) -> None:
        self.networks = list(networks)
        self._known: dict[str, bool] = {}  # the answer for each address seen: asked per request

    def allows(self, address: str) -> bool:
        allowed = self._known.get(address)
        if allowed is None:
            if len(self._known) >= KNOWN_ADDRESSES:
                self._known.clear()
            allowed = self._known[address] = self._check(address)
        return allowed

    def _check(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)
