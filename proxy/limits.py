"""What a client may make the proxy hold: the size and time of a request's head, the idle time of
a kept-alive connection, the size of a request body. mitmproxy sets none of these itself;
proxy/mitm_limits.py puts them in it. The timeouts are the cluster's (the configuration's `http`
section, as every server of the cluster reads them); the sizes are those of the cluster's
servers (archive/connections.py) but for the head, which a browser fills with cookies."""

from dataclasses import dataclass

from archive.config import HttpTimeouts
from archive.url_parts import MAX_URL_LENGTH


@dataclass(frozen=True)
class Limits:
    head_timeout: float = HttpTimeouts.head  # seconds from a request's first byte to its end
    idle_timeout: float = HttpTimeouts.idle  # seconds a kept-alive connection may wait
    # The request line: the longest URL the archive holds, and more.
    max_line: int = MAX_URL_LENGTH + 64
    max_head: int = 64 * 1024  # request line and header fields
    max_fields: int = 100  # header lines
    max_body: int = 32 * 1024 * 1024  # a request body, held whole to find its capture
    # Seconds with no byte either way after which any connection is closed (TLS handshakes and
    # bodies included): mitmproxy's own watchdog, 600 s by default.
    silence_timeout: float = 300.0
