"""What a client may make the proxy hold: the size and time of a request's head, the idle time of
a kept-alive connection, the size of a request body. mitmproxy sets none of these itself;
proxy/mitm_limits.py puts them in it. Light on purpose: the command line reads the defaults
without loading mitmproxy."""

from dataclasses import dataclass

from archive.inserts import MAX_URL

# Of a request's head from its first byte, and of a kept-alive connection between requests: as
# long as Apache's and nginx's defaults.
HEAD_TIMEOUT = 20.0
IDLE_TIMEOUT = 75.0


@dataclass(frozen=True)
class Limits:
    head_timeout: float = HEAD_TIMEOUT  # seconds from a request's first byte to its head's end
    idle_timeout: float = IDLE_TIMEOUT  # seconds a kept-alive connection may wait for a request
    max_line: int = MAX_URL + 64  # the request line: the longest URL the archive holds, and more
    max_head: int = 64 * 1024  # request line and header fields
    max_fields: int = 100  # header lines
    max_body: int = 32 * 1024 * 1024  # a request body, held whole to find its capture
    # Seconds with no byte either way after which any connection is closed (TLS handshakes and
    # bodies included): mitmproxy's own watchdog, 600 s by default.
    silence_timeout: float = 300.0
