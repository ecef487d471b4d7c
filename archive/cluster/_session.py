"""What every part of the cluster client shares: its settings, its HTTP session and multicast
lookup, and the master's URL."""

import asyncio
from dataclasses import replace

import aiohttp

from .. import discovery
from ..cache import ReadCache
from ..config import ClusterConfig
from ..errors import DlwebError
from ..multicast import LookupClient
from ..network import peer_timeout
from ._errors import ClusterError


class Session:
    """The settings and connections of one cluster client, opened and closed with it."""

    def __init__(
        self,
        config: ClusterConfig,
        name: str,
        connect_timeout: float,
        cache: ReadCache | None,
        peer_silence: float,
    ) -> None:
        self.config = config
        self.cache = cache
        self.name = name
        self.connect_timeout = connect_timeout
        self.peer_silence = peer_silence
        self.lookup: LookupClient | None = None
        self.auth = {"Authorization": f"Bearer {config.write_token}"}
        self._http: aiohttp.ClientSession | None = None
        self._finding_master = asyncio.Lock()

    async def open(self) -> None:
        """Start the multicast lookup (when the configuration uses it), then the HTTP session."""
        if self.config.lookup in ("multicast", "both"):
            lookup = LookupClient(self.config.multicast, self.config.secret)
            await lookup.start()
            self.lookup = lookup
        # Made last, with nothing awaited after it: an entry that fails or is cancelled (Ctrl-C)
        # leaves no session open, since `__aexit__` does not run then.
        self._http = aiohttp.ClientSession(
            timeout=peer_timeout(silence=self.peer_silence),
            connector=aiohttp.TCPConnector(limit=64),
        )

    async def close(self) -> None:
        if self.lookup is not None:
            await self.lookup.close()
        if self._http is not None:
            await self._http.close()

    @property
    def http(self) -> aiohttp.ClientSession:
        """The HTTP session, which exists only while the client is open."""
        if self._http is None:
            raise ClusterError("use the cluster client inside `async with`")
        return self._http

    async def master_url(self) -> str:
        """The master's URL: the configuration's, or else the one found on the LAN (once)."""
        async with self._finding_master:
            if self.config.master is None:
                try:
                    found = await discovery.address(
                        discovery.MASTER, None, self.config, "the key `master`"
                    )
                except DlwebError as exc:
                    raise ClusterError(f"no master URL: {exc}") from None
                self.config = replace(self.config, master=found)
            assert self.config.master is not None
            return self.config.master.rstrip("/")
