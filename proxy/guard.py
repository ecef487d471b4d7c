"""The access addon: no open proxy. Clients outside the allowed networks get 403, at CONNECT as
for plain requests, before any other addon looks at their request."""

from mitmproxy import http

from .access import Access


def client_of(flow: http.HTTPFlow) -> str:
    """The address of the client a flow came from."""
    return str(flow.client_conn.peername[0])


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
            flow.response = http.Response.make(
                403,
                f"dlweb: clients at {client} may not use this proxy\n",
                {"Content-Type": "text/plain; charset=utf-8"},
            )
