"""The host and registered domain of a URL, so that a search can be narrowed to a site."""

from urllib.parse import urlsplit

from publicsuffix2 import get_sld

from archive.hosts import is_address


def host_of(url: str) -> str:
    """The lowercased host of `url`, without port or user; "" when it has none."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return ""


def registered_domain(host: str) -> str:
    """The domain its owner registered (bbc.co.uk for www.bbc.co.uk) by the public suffix list
    bundled with publicsuffix2 (never fetched); under a suffix the list does not know (.test,
    .internal), the last two labels; an address or a one-label host is its own domain."""
    if not host:
        return ""
    if is_address(host):
        return host
    domain = get_sld(host, strict=True)
    if domain:
        return str(domain)
    return ".".join(host.split(".")[-2:])
