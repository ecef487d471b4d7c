"""What every part of the cluster client shares: its settings, its HTTP session and multicast
lookup, and the master's URL."""

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from .. import discovery
from ..cache import ReadCache
from ..config import ClusterConfig
from ..errors import DlwebError
from ..lifetime import Opened
from ..multicast import LookupClient
from ..network import peer_timeout
from ._errors import ClusterError


@dataclass(eq=False, repr=False)
class Session(Opened):
    """The settings and connections of one cluster client, opened and closed with it."""

    config: ClusterConfig
    name: str
    connect_timeout: float
    cache: ReadCache | None
    peer_silence: float
    lookup: LookupClient | None = field(init=False, default=None)
    auth: dict[str, str] = field(init=False)
    _http: aiohttp.ClientSession | None = field(init=False, default=None)
    _finding_master: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.auth = {"Authorization": f"Bearer {self.config.write_token}"}

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

    async def get_object(self, url: str) -> tuple[int, dict[str, Any]]:
        """The status of a GET of `url` and the JSON object it answers (ValueError if none)."""
        async with self.http.get(url) as r:
            answer = await r.json(content_type=None)
        if not isinstance(answer, dict):
            raise ValueError("the answer is not a JSON object")
        return r.status, answer

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
