"""The access addon: no open proxy, and no request that says two things at once.

Clients outside the allowed networks get 403, at CONNECT as for plain requests, before any other
addon looks at their request. A request whose `Host` field names another authority than its
target (the request line's, or the CONNECT tunnel's it came through) gets 400: the proxy would
otherwise answer, record or fetch one address under another's name. So does a `Host` that is not
an authority, given twice, or a request with more header fields or a longer URL than the archive
could hold (431, 414).
"""

import functools

from mitmproxy import http
from mitmproxy.net.http.url import default_port, parse_authority

from archive.errors import clipped
from archive.url_parts import MAX_URL_LENGTH

from .access import Access

MAX_FIELDS = 100


def client_of(flow: http.HTTPFlow) -> str:
    """The address of the client a flow came from."""
    return str(flow.client_conn.peername[0])


def refused(status: int, message: str) -> http.Response:
    """An answer of the proxy's own that refuses a request: plain text saying why."""
    return http.Response.make(
        status, f"dlweb: {message}\n", {"Content-Type": "text/plain; charset=utf-8"}
    )


class Guard:
    def __init__(self, access: Access) -> None:
        self.access = access

    def http_connect(self, flow: http.HTTPFlow) -> None:
        self.request(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None:  # answered already (proxy authentication asked for)
            return
        client = client_of(flow)
        if not self.access.allows(client):
            flow.response = refused(403, f"clients at {client} may not use this proxy")
            return
        problem = malformed(flow.request)
        if problem is not None:
            flow.response = refused(*problem)


def malformed(request: http.Request) -> tuple[int, str] | None:
    """The status and reason refusing a request the proxy cannot take as it is, else None."""
    if len(request.headers.fields) > MAX_FIELDS:
        return 431, f"a request has at most {MAX_FIELDS} header fields"
    if len(request.path) > MAX_URL_LENGTH:
        return 414, f"the archive holds no URL longer than {MAX_URL_LENGTH} characters"
    hosts = request.headers.get_all("host")
    if len(hosts) > 1:
        return 400, "the request has several Host fields"
    if not hosts or request.method == "CONNECT":
        return None
    try:
        host, port = parse_authority(hosts[0], check=True)
    except ValueError:
        return 400, f"Host: {clipped(hosts[0], 100)} is not a host and port"
    port = port or default_port(request.scheme) or 0
    if _host_key(host) != _host_key(request.host) or port != request.port:
        return 400, (
            f"Host: {clipped(hosts[0], 100)} names another authority than the request's"
            f" target {clipped(request.host, 100)}:{request.port}"
        )
    return None


@functools.lru_cache(maxsize=4096)  # asked twice for every request, of the same few hosts
def _host_key(host: str) -> str:
    """A host as compared: lower case, no trailing dot nor brackets, international names in
    their ASCII form (a request line may carry either)."""
    host = host.lower().rstrip(".").strip("[]")
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host
