"""The index node: takes captures from inserting clients, appends them to structure files, and
says which contents are new and where to upload them (docs/cluster.md).

Its parts, each a class the next one extends: the link to the master (master_link.py), the
appends to structure files (appends.py), the insert protocol (insert_protocol.py); here, the
node's identity, its start and stop, and its status."""

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from archive import jsonwire
from archive.atomic import atomic_write
from archive.errors import ConfigError
from archive.hip import Handler, HipMaster
from archive.master_answers import IndexStatus, MasterLink
from archive.network import peer_timeout

from .appends import APPEND_TIMEOUT, APPENDS_IN_FLIGHT
from .insert_protocol import InsertProtocol
from .options import IndexOptions


def _identity(data: Path) -> str:
    """The index node's name, chosen once and kept in DATA/index.json."""
    path = data / "index.json"
    if path.exists():
        try:
            chosen = json.loads(path.read_text())["id"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}: cannot read the index node's id: {exc}") from None
        if not isinstance(chosen, str) or not chosen:
            raise ConfigError(f"{path}: the id must be a non-empty string")
        return chosen
    chosen = f"index-{uuid.uuid4().hex[:8]}"
    atomic_write(path, json.dumps({"id": chosen}).encode())
    return chosen


class IndexNode(InsertProtocol):
    """An index node: its parts put together, started, stopped, and reporting its status."""

    def __init__(self, options: IndexOptions) -> None:
        options.data.mkdir(parents=True, exist_ok=True)
        super().__init__(options, _identity(options.data))
        self.started = time.time()
        handlers: dict[str, Handler] = {"insert": self._insert, "stored": self._stored}
        self.hip = HipMaster(
            options.config.secret, self.id, handlers, on_disconnect=self._forget_inserts
        )

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=peer_timeout(APPEND_TIMEOUT),
            connector=aiohttp.TCPConnector(limit=APPENDS_IN_FLIGHT * 2),
            json_serialize=jsonwire.dumps,
        )
        await self.upstream.start()
        self._refresh = asyncio.create_task(self._refresh_nodes(), name="node list")

    async def stop(self) -> None:
        """Close the connections to clients and to the master; the database stays open for
        requests still being answered."""
        if self._refresh is not None:
            self._refresh.cancel()
        await self.hip.close()
        await self.upstream.stop()
        self._background.cancel()

    async def close(self) -> None:
        """Close the session to the storage nodes and the database, once requests are answered."""
        if self._session is not None:
            await self._session.close()
        self.contents.close()

    def status(self) -> dict[str, Any]:
        """Its /status answer (IndexStatus)."""
        return IndexStatus(
            self.id,
            self.address,
            MasterLink(self.options.master, self._master_connected()),
            nodes=len(self.nodes),
            alive=sum(1 for node in self.nodes if node.state == "alive"),
            contents=len(self.contents),
            claims=len(self.claims),
            pending_uploads=len(self._pending),
            unconfirmed_inserts=len(self._appends),
            unsent_changes=len(self._unsent),
            appending=len(self._working),
            clients=len(self.hip.slaves),
            counters=dict(self.stats),
            uptime=round(time.time() - self.started, 1),
        ).to_json()
