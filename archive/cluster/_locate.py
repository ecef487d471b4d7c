"""Where things are: the holders of a file (by multicast, by asking the master, or both, as the
configuration says), the storage nodes to read packs from, the members of the cluster."""

import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..hashing import check_name
from ..hip import RemoteError
from ..network import NETWORK_ERRORS
from ._errors import ClusterError
from ._session import Session

if TYPE_CHECKING:
    from ..master_answers import ClusterStatus

KINDS = ("content", "structure")
# How long a client keeps the list of storage nodes it reads packs from.
NODES_KEPT = 10.0


class Locator:
    """Finds the nodes holding a file, and those of the cluster, for the readers of the client."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._nodes: tuple[float, list[str]] | None = None  # when listed, the nodes' addresses

    async def locate(
        self, kind: str, name: str, *, first: bool = False, cached: bool = True
    ) -> list[str]:
        """HTTP addresses of the nodes holding a file, by multicast and/or the master; with
        `first`, as soon as one answers (a read needs one holder, not the lookup window)."""
        if kind not in KINDS:
            raise ClusterError(f"kind must be content or structure, not {kind!r}")
        check_name(name)
        cache = self._session.cache
        if cached and cache is not None and (known := cache.locations.get((kind, name))):
            return known
        found: list[str] = []
        if self._session.lookup is not None:
            found = [a.address for a in await self._session.lookup.locate(kind, name, first=first)]
        if not found and self._session.config.lookup in ("master", "both"):
            found = await self._ask_master(kind, name)
        if found and cache is not None:
            cache.put_location(kind, name, found)
        return found

    async def holders(
        self, kind: str, name: str, given: list[str] | None = None
    ) -> AsyncIterator[str]:
        """The holders of a file to read it from (those `given`, when the caller knows them):
        the first to answer at once, the others, after a full lookup, only if the reader moves
        past it."""
        if given is not None:
            for address in given:
                yield address
            return
        quick = await self.locate(kind, name, first=True)
        if not quick:  # nobody answered within the whole lookup window
            return
        for address in quick:
            yield address
        if self._session.cache is not None:
            self._session.cache.locations.drop((kind, name))
        for address in await self.locate(kind, name, cached=False):
            if address not in quick:
                yield address

    async def _ask_master(self, kind: str, name: str) -> list[str]:
        """The holders of a file, as the master lists them."""
        master = await self._session.master_url()
        url = f"{master}/locate/{kind}/{name}"
        try:
            async with self._session.http.get(url) as r:
                status, text = r.status, await r.text()
        except NETWORK_ERRORS as exc:
            raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
        try:
            answer = json.loads(text)
            if status != 200:
                raise ClusterError(f"{url} answered {status}: {answer.get('error')}")
            # Here, not at the top: the master's answers (some 40 ms of making classes) are not
            # loaded by a client that never locates (an import).
            from ..master_answers import Located

            located = Located.from_json(answer, url)
        except (ValueError, AttributeError, RemoteError):
            raise ClusterError(
                f"{url} answered {status} with no node list: {text[:200]!r}"
            ) from None
        return [node.address for node in located.nodes]

    async def storage_nodes(self) -> list[str]:
        """The addresses of the connected storage nodes, those holding the most files first, as
        the master listed them at most NODES_KEPT s ago (its status is costly to make)."""
        now = time.monotonic()
        if self._nodes is not None and now - self._nodes[0] < NODES_KEPT:
            return self._nodes[1]
        _, status = await self._master_status()
        nodes = sorted((n for n in status.nodes if n.connected), key=lambda n: -n.files)
        addresses = [n.address.rstrip("/") for n in nodes]
        self._nodes = (now, addresses)
        return addresses

    async def members(self) -> list[str]:
        """The URLs of every member of the cluster: the master, its index nodes and its storage
        nodes, connected or not (the consultation proxy sends no live request to any of them)."""
        master, status = await self._master_status()
        nodes = [n.address for n in status.nodes]
        return [master, *status.index_nodes, *nodes]

    async def _master_status(self) -> "tuple[str, ClusterStatus]":
        """The master's URL and its status; ClusterError when it cannot be had."""
        from ..master_answers import ClusterStatus

        master = await self._session.master_url()
        try:
            _, answer = await self._session.get_object(f"{master}/status")
            return master, ClusterStatus.from_json(answer, f"{master}/status")
        except NETWORK_ERRORS as exc:
            raise ClusterError(f"the master at {master} cannot be reached: {exc}") from None
        except ValueError:
            raise ClusterError(f"{master}/status answered without a list of nodes") from None
        except RemoteError as exc:
            raise ClusterError(f"{master}/status answered without a list of nodes: {exc}") from None
