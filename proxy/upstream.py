"""The last gate before the live web: every connection mitmproxy is about to open to an upstream
server passes here (its `server_connect` hook), whatever layer asked for it.

Only a client that the operator's `live` setting and its own harbor setting put in live or record
mode gets one, and only to an address it may reach: the host is resolved here, each address is
checked, and the connection is pinned to the address checked, so a name that resolves again to
another address (DNS rebinding) cannot move it. Public unicast addresses pass; loopback, private,
link-local, multicast, reserved and unspecified ones are refused (IPv4 inside IPv6 judged as
IPv4) unless the operator lists their network in `consultation: live_networks`; the cluster's own
members (master, index nodes, storage nodes) and the proxy itself are refused in every case.
Anything else is refused with a log line: a request the addon chain left unanswered by mistake
still reaches nothing.
"""

import asyncio
import ipaddress
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from mitmproxy.proxy.server_hooks import ServerConnectionHookData

from archive.hosts import is_address

from .access import Network

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")
MEMBERS_KEPT = 30.0  # seconds the list of the cluster's members is kept
RESOLVE_TIMEOUT = 5.0

# Who may go live (the client's address) and the cluster's member addresses ("http://host:port").
Allows = Callable[[str], bool]
Members = Callable[[], Awaitable[Sequence[str]]]


class Refused(Exception):
    """An upstream address this proxy does not connect to; says why."""


def embedded(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), else itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
        if ip in NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def public(ip: IPAddress) -> bool:
    """Whether an address is on the public Internet: global unicast, not multicast or reserved."""
    inner = embedded(ip)
    return all(
        one.is_global and not (one.is_multicast or one.is_reserved or one.is_unspecified)
        for one in {ip, inner}
    )


class UpstreamGate:
    """The `server_connect` hook: refuses, or pins to a checked address, every upstream
    connection."""

    def __init__(
        self,
        may_go_live: Allows,
        members: Members,
        networks: Sequence[Network] = (),
        own: Sequence[tuple[str, int]] = (),
    ) -> None:
        self.may_go_live = may_go_live
        self.members = members
        self.networks = list(networks)  # private networks the operator lets the live web reach
        self.own = set(own)  # the proxy's own listening addresses
        self._members: tuple[float, set[tuple[IPAddress, int]]] | None = None
        # Connections the replay itself makes for a client connection: to the storage node
        # that streams a large body, or to the relay of a recorded stream.
        self._internal: set[tuple[str, str, int]] = set()

    def expect(self, client: str, host: str, port: int) -> None:
        """Let the client connection `client` (its id) connect once to host:port, which the
        replay chose: a storage node, or the stream relay."""
        self._internal.add((client, host, port))

    async def server_connect(self, data: ServerConnectionHookData) -> None:
        server = data.server
        if server.address is not None:
            internal = (data.client.id, str(server.address[0]), int(server.address[1]))
            if internal in self._internal:
                self._internal.discard(internal)
                return
        client = str(data.client.peername[0]) if data.client.peername else "?"
        try:
            if not self.may_go_live(client):
                raise Refused(f"client {client} is not in live or record mode")
            if server.address is None:
                raise Refused("no address")
            host, port = str(server.address[0]), int(server.address[1])
            address = await self.checked(host, port)
        except Refused as exc:
            target = "?" if server.address is None else f"{server.address[0]}:{server.address[1]}"
            log.warning("no upstream connection to %s for %s: %s", target[:300], client, exc)
            server.error = f"dlweb: no connection to {target[:300]}: {exc}"
            return
        if server.sni is None and not is_address(host):
            server.sni = host  # the certificate is checked against the name, not the address
        server.address = (str(address), port)

    async def checked(self, host: str, port: int) -> IPAddress:
        """The address to connect to for host:port, each address it resolves to checked; Refused
        when none may be reached."""
        addresses = await _resolve(host, port)
        members = await self._member_addresses()
        reasons = []
        for ip in addresses:
            why = self._refusal(ip, port, members)
            if why is None:
                return ip
            reasons.append(f"{ip} {why}")
        raise Refused("; ".join(reasons) or f"{host} has no address")

    def _refusal(self, ip: IPAddress, port: int, members: set[tuple[IPAddress, int]]) -> str | None:
        inner = embedded(ip)
        if (inner, port) in members or (ip, port) in members:
            return "is a member of this cluster"
        if any(
            port == own_port
            and (own_host in ("", "0.0.0.0", "::") or inner.is_loopback or str(inner) == own_host)
            for own_host, own_port in self.own
        ):
            return "is this proxy"
        if public(ip):
            return None
        if any(inner in network or ip in network for network in self.networks):
            return None
        return "is not a public address (consultation: live_networks lists the private ones)"

    async def _member_addresses(self) -> set[tuple[IPAddress, int]]:
        """The cluster members' addresses, asked again every MEMBERS_KEPT s; Refused when they
        cannot be known (fail closed: a member could be any address)."""
        now = time.monotonic()
        if self._members is not None and now - self._members[0] < MEMBERS_KEPT:
            return self._members[1]
        try:
            urls = await self.members()
        except Exception as exc:  # the master unreachable: nothing goes live meanwhile
            raise Refused(f"the cluster's members cannot be listed: {exc}") from None
        found: set[tuple[IPAddress, int]] = set()
        for url in urls:
            parts = urlsplit(url)
            if parts.hostname is None:
                continue
            port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
            for ip in await _resolve(parts.hostname, port):
                found.add((embedded(ip), port))
        self._members = (now, found)
        return found


async def _resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses of host, in the resolver's order; Refused when it has none."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
        )
    except (OSError, UnicodeError, TimeoutError) as exc:
        raise Refused(f"{host[:200]} does not resolve: {exc}") from None
    ordered: dict[IPAddress, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        ordered[ipaddress.ip_address(str(sockaddr[0]).split("%")[0])] = None
    return list(ordered)
