"""LAN discovery of the master and the scheduler over mDNS/DNS-SD (zeroconf).

The master announces `_dlweb-master._tcp.local.` and the scheduler `_dlweb-scheduler._tcp.local.`
on the interface of the configuration's `multicast.interface` (0.0.0.0: every interface). An
announcement is an instance named after the cluster and the host and port, the IPv4 address and
port of the process's advertised URL, and TXT properties:

    cluster   the cluster name
    version   the discovery protocol version (1)
    scheme    http or https
    path      the URL's path, when it has one
    proof     lowercase hex HMAC-SHA256, keyed with the cluster secret, of
              "dlweb discovery v1", the service type, the cluster name and the URL, joined by
              newlines

A process that has no address for the service browses for it, ignores instances of other
clusters and those whose proof does not verify (so a stranger on the LAN cannot point it at a
fake address), and takes the lowest URL among the verified ones. The secret itself is never
sent. An explicit address (an option or a configuration key) always wins, and then nothing is
asked on the network.
"""

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .config import ClusterConfig
from .errors import ConfigError, DlwebError
from .lifetime import Opened
from .tasks import cancel_and_wait

if TYPE_CHECKING:
    from zeroconf import InterfaceChoice, ServiceStateChange
    from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

# zeroconf is imported where it is used: it costs ~70 ms and ~6 MB, and most processes that
# import this module are given an address and never ask the network.

log = logging.getLogger(__name__)

MASTER = "_dlweb-master._tcp.local."
SCHEDULER = "_dlweb-scheduler._tcp.local."
# Where an explicit address comes from, for the messages of processes that need one.
MASTER_HOW = "--master or the configuration's `master` key"
SCHEDULER_HOW = "--scheduler"
VERSION = "1"
FIND_TIMEOUT = 5.0
# After the first verified answer, how long others may still come in, so the choice among
# several instances does not depend on which answered first.
SETTLE = 0.2
_RESOLVE_MS = 3000
_LABEL = "dlweb discovery v1"
_MDNS_GROUP = "224.0.0.251"
_MAX_TXT = 200
_MAX_INSTANCE = 63


class DiscoveryError(DlwebError):
    """A service that could not be announced, or was not found on the LAN in time."""


def short(service: str) -> str:
    """`_dlweb-master._tcp.local.` as people write it: `_dlweb-master._tcp`."""
    return service.removesuffix(".local.")


def proof(secret: bytes, service: str, cluster: str, url: str) -> str:
    """The TXT proof that whoever announced `url` holds the cluster secret."""
    message = "\n".join((_LABEL, service, cluster, url)).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _interfaces(config: ClusterConfig) -> "InterfaceChoice | list[str]":
    from zeroconf import InterfaceChoice

    interface = config.multicast.interface
    return InterfaceChoice.All if ipaddress.ip_address(interface).is_unspecified else [interface]


def _zeroconf(config: ClusterConfig) -> "AsyncZeroconf":
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncZeroconf

    try:
        return AsyncZeroconf(interfaces=_interfaces(config), ip_version=IPVersion.V4Only)
    except OSError as exc:
        raise DiscoveryError(
            f"cannot use mDNS on interface {config.multicast.interface}"
            f" ({config.source}: multicast.interface): {exc.strerror or exc}"
        ) from None


def _outgoing_address() -> str:
    """The local address the system sends multicast from when no interface is named."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((_MDNS_GROUP, 5353))
        address: str = sock.getsockname()[0]
        return address


async def _announced_url(url: str, interface: str) -> str:
    """`url` with its host as the IPv4 address announced: a name is resolved, and a wildcard
    host is replaced by the multicast interface (or, when that is a wildcard too, the address
    multicast leaves from)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    if parts.scheme not in ("http", "https") or not parts.hostname or not port:
        raise DiscoveryError(f"{url[:100]!r} is not an http:// or https:// URL with a host")
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            parts.hostname, port, family=socket.AF_INET
        )
    except OSError as exc:
        raise DiscoveryError(f"cannot resolve {parts.hostname} of {url}: {exc}") from None
    host = ipaddress.ip_address(infos[0][4][0])
    if host.is_unspecified:
        host = ipaddress.ip_address(interface)
    if host.is_unspecified:
        try:
            host = ipaddress.ip_address(_outgoing_address())
        except OSError as exc:
            raise DiscoveryError(f"no address to announce for {url}: {exc}") from None
    return f"{parts.scheme}://{host}:{port}{parts.path.rstrip('/')}"


def _instance_name(cluster: str, url: str) -> str:
    """`<cluster> <host>-<port>`, unique per process, dots and other signs as dashes."""
    parts = urlsplit(url)
    where = f"{parts.hostname}-{parts.port}".replace(".", "-")
    label = re.sub(r"[^\w -]", "-", cluster)
    while len(f"{label} {where}".encode()) > _MAX_INSTANCE:
        label = label[:-1]
    return f"{label} {where}"


@dataclass(eq=False, repr=False)
class Announcement(Opened):
    """Announces one service while inside `async with`; on exit withdraws it with goodbye
    packets. Registration (mDNS probing, about a second) runs in the background so it never
    delays the start of the process; a failure to announce is logged, not raised."""

    service: str
    config: ClusterConfig
    url: str
    announced: str | None = field(init=False, default=None)
    _zeroconf: "AsyncZeroconf | None" = field(init=False, default=None)
    _registering: asyncio.Task[None] | None = field(init=False, default=None)

    async def open(self) -> None:
        if self.config.discovery:
            try:
                await self._start()
            except DiscoveryError as exc:
                log.warning("%s not announced on the LAN: %s", short(self.service), exc)

    async def close(self) -> None:
        if self._registering is not None:
            await cancel_and_wait(self._registering)
        if self._zeroconf is not None:
            await self._zeroconf.async_close()  # unregisters with goodbye packets

    async def _start(self) -> None:
        config = self.config
        url = await _announced_url(self.url, config.multicast.interface)
        parts = urlsplit(url)
        if max(len(config.name.encode()), len(parts.path.encode())) > _MAX_TXT:
            raise DiscoveryError(f"the cluster name or the URL path is over {_MAX_TXT} bytes")
        host = str(parts.hostname)
        properties = {
            "cluster": config.name,
            "version": VERSION,
            "scheme": parts.scheme,
            "proof": proof(config.secret, self.service, config.name, url),
        }
        if parts.path:
            properties["path"] = parts.path
        from zeroconf.asyncio import AsyncServiceInfo

        info = AsyncServiceInfo(
            self.service,
            f"{_instance_name(config.name, url)}.{self.service}",
            addresses=[socket.inet_aton(host)],
            port=parts.port,
            properties=properties,
            server=f"dlweb-{host.replace('.', '-')}-{parts.port}.local.",
        )
        self._zeroconf = _zeroconf(config)
        self._registering = asyncio.create_task(self._register(info, url))

    async def _register(self, info: "AsyncServiceInfo", url: str) -> None:
        from zeroconf import Error as ZeroconfError
        from zeroconf import NonUniqueNameException

        assert self._zeroconf is not None
        try:
            broadcast = await self._zeroconf.async_register_service(info)
        except NonUniqueNameException:
            log.warning("%s not announced: %s is taken on the LAN", short(self.service), info.name)
            return
        except ZeroconfError as exc:
            log.warning("%s not announced on the LAN: %r", short(self.service), exc)
            return
        self.announced = url
        log.info("announced %s on the LAN as %s", url, short(self.service))
        await broadcast


async def _verified_url(
    zeroconf: "AsyncZeroconf", service: str, name: str, config: ClusterConfig, warned: set[str]
) -> str | None:
    """The URL of instance `name` if it belongs to our cluster and its proof verifies."""
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncServiceInfo

    info = AsyncServiceInfo(service, name)
    if not await info.async_request(zeroconf.zeroconf, _RESOLVE_MS):
        return None
    properties = info.decoded_properties
    if properties.get("cluster") != config.name or properties.get("version") != VERSION:
        return None
    scheme, path = properties.get("scheme"), properties.get("path") or ""
    if scheme not in ("http", "https") or (path and not path.startswith("/")) or not info.port:
        return None
    addresses = info.parsed_addresses(IPVersion.V4Only)
    given = properties.get("proof") or ""
    for address in sorted(addresses):
        url = f"{scheme}://{address}:{info.port}{path}"
        if hmac.compare_digest(given, proof(config.secret, service, config.name, url)):
            return url
    if name not in warned:
        warned.add(name)
        log.warning(
            "ignoring %s at %s: its proof does not verify with our cluster secret",
            name,
            ", ".join(f"{a}:{info.port}" for a in addresses) or "no address",
        )
    return None


async def find(service: str, config: ClusterConfig, timeout: float | None = FIND_TIMEOUT) -> str:
    """The URL of a verified instance of `service` of our cluster on the LAN; waits at most
    `timeout` seconds (None: until one appears)."""
    from zeroconf import Error as ZeroconfError
    from zeroconf import ServiceStateChange
    from zeroconf.asyncio import AsyncServiceBrowser

    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    zc = _zeroconf(config)
    found: dict[str, str] = {}
    warned: set[str] = set()
    checks: set[asyncio.Task[None]] = set()
    verified = asyncio.Event()

    async def check(name: str) -> None:
        try:
            url = await _verified_url(zc, service, name, config, warned)
        except ZeroconfError as exc:
            log.debug("cannot resolve %s: %s", name, exc)
            return
        if url is not None:
            found[name] = url
            verified.set()

    def changed(
        zeroconf: Any, service_type: str, name: str, state_change: "ServiceStateChange"
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            found.pop(name, None)
        else:
            task = asyncio.create_task(check(name))
            checks.add(task)
            task.add_done_callback(checks.discard)

    browser = AsyncServiceBrowser(zc.zeroconf, service, handlers=[changed])
    try:
        while not found:
            verified.clear()
            left = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                await asyncio.wait_for(verified.wait(), left)
            except TimeoutError:
                raise DiscoveryError(
                    f"no {short(service)} of cluster {config.name!r} answered on the LAN"
                    f" (interface {config.multicast.interface}) within {timeout:g} s"
                ) from None
            await asyncio.sleep(SETTLE)
        return min(found.values())
    finally:
        await browser.async_cancel()
        for task in list(checks):
            task.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        await zc.async_close()


async def address(
    service: str,
    explicit: str | None,
    config: ClusterConfig,
    how: str,
    timeout: float | None = FIND_TIMEOUT,
) -> str:
    """`explicit` when given, otherwise the URL found by discovery. `how` names the option or
    configuration key that gives the address, for the messages."""
    if explicit:
        return explicit.rstrip("/")
    if not config.discovery:
        raise ConfigError(
            f"{config.source}: no {short(service)} address: give {how}, or turn discovery on"
            " (key `discovery`)"
        )
    try:
        url = await find(service, config, timeout)
    except DiscoveryError as exc:
        raise DiscoveryError(f"{exc}; give {how} to skip discovery") from None
    log.info("found %s at %s on the LAN", short(service), url)
    return url
