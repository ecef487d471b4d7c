"""The hosts of URLs: a name, or an address written in its place."""

import ipaddress


def is_address(host: str) -> bool:
    """Whether `host` is an IP address (an IPv6 one with or without its brackets), not a name."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
