"""The HTTP proxy a slave behind a firewall reaches its master through (archive/hip/_tunnel.py)."""

import base64
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from archive.url_parts import split_url

MAX_URL = 2000
_CREDENTIALS = re.compile(r"//[^/]*@")


@dataclass(frozen=True)
class HttpProxy:
    """An HTTP proxy that opens tunnels with CONNECT, and the credentials it wants, if any."""

    host: str
    port: int
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        """The proxy's URL without its credentials, for messages and logs."""
        return f"http://{self._address}"

    @property
    def _address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The proxy's URL with its credentials, as parse_proxy reads it back."""
        if self.user is None:
            return str(self)
        credentials = quote(self.user, safe="") + ":" + quote(self.password or "", safe="")
        return f"http://{credentials}@{self._address}"

    @property
    def authorization(self) -> str | None:
        """The Proxy-Authorization header (Basic) to send, when credentials were given."""
        if self.user is None:
            return None
        pair = f"{self.user}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def parse_proxy(url: str) -> HttpProxy:
    """http://[user:password@]host:port as a proxy; ValueError saying what is wrong."""
    shown = repr(_CREDENTIALS.sub("//***@", url[:100], count=1)) + ("..." if len(url) > 100 else "")
    try:
        parts = split_url(url, MAX_URL, shown)
    except ValueError as exc:
        raise ValueError(f"not a proxy URL: {exc}") from None
    port = parts.port
    if parts.scheme != "http":
        raise ValueError(
            f"{shown}: the proxy's URL must be http://[user:password@]host:port (the tunnel"
            " carries TLS itself when the master's URL is https://)"
        )
    if not parts.hostname:
        raise ValueError(f"{shown}: the proxy URL has no host")
    if not port:
        raise ValueError(f"{shown}: give the proxy's port (http://host:port)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{shown}: a proxy URL is http://[user:password@]host:port alone")
    user = None if parts.username is None else unquote(parts.username)
    password = None if parts.password is None else unquote(parts.password)
    return HttpProxy(parts.hostname, port, user, password)
